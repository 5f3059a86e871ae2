package dev.throttle.spring.internal.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * A refusal written outside MVC: headers always, problem+json for API clients, the error page
 * (sendError) for a browser.
 */
class ServletRefusalsTests {

    private final ThrottledException refusal = refusal();

    @Test
    void anApiClientGetsProblemJsonWithTheHeaders() throws Exception {
        MockHttpServletRequest request = new MockHttpServletRequest("POST", "/login");
        request.addHeader("Accept", "application/json");
        MockHttpServletResponse response = new MockHttpServletResponse();
        writer(true).write(request, response, this.refusal);
        assertThat(response.getStatus()).isEqualTo(429);
        assertThat(response.getContentType()).startsWith("application/problem+json");
        assertThat(response.getHeader("Retry-After")).isEqualTo("8");
        assertThat(response.getHeader("RateLimit-Policy")).isEqualTo("\"login\";q=5;w=10");
        assertThat(response.getHeader("RateLimit")).isEqualTo("\"login\";r=0;t=8");
        assertThat(response.getContentAsString())
                .isEqualTo("{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\","
                        + "\"title\":\"Too Many Requests\",\"status\":429,\"detail\":\"Too many requests under policy 'login'; retry after 8 seconds.\","
                        + "\"instance\":\"/login\",\"violated-policies\":[\"login\"]}");
        assertThat(response.getErrorMessage()).isNull();
    }

    @Test
    void aClientWithoutAcceptOrWithWildcardsGetsProblemJson() throws Exception {
        for (String accept : new String[] {
            null,
            "*/*",
            "text/*",
            "text/html, application/json",
            "text/html;q=0.9, application/problem+json",
            "text/html, application/vnd.api+json",
            "text/plain",
            "not a media type"
        }) {
            MockHttpServletRequest request = new MockHttpServletRequest("GET", "/");
            if (accept != null) {
                request.addHeader("Accept", accept);
            }
            MockHttpServletResponse response = new MockHttpServletResponse();
            writer(true).write(request, response, this.refusal);
            assertThat(response.getContentType()).as(accept).startsWith("application/problem+json");
        }
    }

    @Test
    void aBrowserGetsTheErrorPageWithStatus429AndTheHeaders() throws Exception {
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/");
        request.addHeader("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8");
        MockHttpServletResponse response = new MockHttpServletResponse();
        writer(false).write(request, response, this.refusal);
        assertThat(response.getStatus()).isEqualTo(429);
        assertThat(response.getErrorMessage())
                .as("sendError: Boot's error view renders the page")
                .isNotNull();
        assertThat(response.getHeader("Retry-After")).isEqualTo("8");
        assertThat(response.getHeader("RateLimit")).as("headers: none").isNull();
        assertThat(response.getContentAsString()).isEmpty();
    }

    @Test
    void theRefusalReplacesTheItemsOfAnEarlierAllowedCall() throws Exception {
        MockHttpServletResponse response = new MockHttpServletResponse();
        response.setHeader("RateLimit", "\"api\";r=3;t=0");
        writer(true).write(new MockHttpServletRequest(), response, this.refusal);
        assertThat(response.getHeaders("RateLimit")).containsExactly("\"login\";r=0;t=8");
    }

    @Test
    void aBlockedClientGetsForbidden() throws Exception {
        MockHttpServletResponse api = new MockHttpServletResponse();
        ServletRefusals.forbid(new MockHttpServletRequest(), api);
        assertThat(api.getStatus()).isEqualTo(403);
        assertThat(api.getContentType()).startsWith("application/problem+json");
        assertThat(api.getContentAsString()).contains("\"status\":403");
        MockHttpServletRequest browser = new MockHttpServletRequest();
        browser.addHeader("Accept", "text/html");
        MockHttpServletResponse page = new MockHttpServletResponse();
        ServletRefusals.forbid(browser, page);
        assertThat(page.getStatus()).isEqualTo(403);
        assertThat(page.getErrorMessage()).isNotNull();
    }

    @Test
    void aCommittedResponseIsLeftAlone() throws Exception {
        MockHttpServletResponse response = new MockHttpServletResponse();
        response.setStatus(200);
        response.setCommitted(true);
        writer(true).write(new MockHttpServletRequest(), response, this.refusal);
        assertThat(response.getStatus()).isEqualTo(200);
        assertThat(response.getHeader("Retry-After")).isNull();
    }

    private static ServletRefusals writer(boolean rateLimitHeaders) {
        return new ServletRefusals(new ThrottleExceptionHandler(rateLimitHeaders), null);
    }

    private static ThrottledException refusal() {
        TokenBucketPolicy policy = new TokenBucketPolicy("login", 5, 1, Duration.ofSeconds(2));
        return new ThrottledException(policy, Decision.reject(5, 0, 7500, 10_000));
    }
}
