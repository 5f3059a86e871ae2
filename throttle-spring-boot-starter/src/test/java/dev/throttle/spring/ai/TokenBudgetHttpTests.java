package dev.throttle.spring.ai;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;

/**
 * A Spring MVC endpoint that asks the model through a ChatClient with the token budget advisor: a
 * user whose budget is spent is answered 429 with the budget's {@code RateLimit} and
 * {@code Retry-After} headers, from a call and from a streamed answer alike, and the model is not
 * called.
 */
@SpringBootTest(
        classes = TokenBudgetHttpTests.AskApplication.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.tokens.algorithm=fixed-window",
            "throttle.policies.tokens.limit=1000",
            "throttle.policies.tokens.window=1h",
            "throttle.ai.policy=tokens",
            "throttle.ai.estimate=200"
        })
class TokenBudgetHttpTests {

    private final HttpClient http = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    TestChatModel model;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return this.http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aUserWhoseBudgetIsSpentIsAnswered429WithTheBudgetsHeaders() throws Exception {
        this.model.reporting(400, 600);
        assertThat(get("/ask?user=ann").statusCode()).isEqualTo(200);
        int calls = this.model.calls();
        for (String path : new String[] {"/ask?user=ann", "/ask/stream?user=ann"}) {
            HttpResponse<String> refused = get(path);
            assertThat(refused.statusCode()).as(path).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).as(path).isPresent();
            assertThat(refused.headers().firstValue("RateLimit"))
                    .as(path)
                    .hasValueSatisfying((value) -> assertThat(value).contains("r=0"));
        }
        assertThat(this.model.calls()).as("no refused call reached the model").isEqualTo(calls);
        assertThat(get("/ask/stream?user=bob").statusCode()).isEqualTo(200);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(AskController.class)
    static class AskApplication {

        @Bean
        TestChatModel chatModel() {
            return new TestChatModel();
        }

        @Bean
        TimeSource throttleTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        ChatClient chatClient(TestChatModel chatModel, TokenBudgetAdvisor throttleTokenBudgetAdvisor) {
            return ChatClient.builder(chatModel)
                    .defaultAdvisors(throttleTokenBudgetAdvisor)
                    .build();
        }
    }

    @RestController
    static class AskController {

        private final ChatClient chat;

        AskController(ChatClient chat) {
            this.chat = chat;
        }

        @GetMapping("/ask")
        String ask(@RequestParam String user) {
            return this.chat
                    .prompt()
                    .user("a question")
                    .advisors((advisor) -> advisor.param("user", user))
                    .call()
                    .content();
        }

        @GetMapping(value = "/ask/stream", produces = MediaType.TEXT_EVENT_STREAM_VALUE)
        Flux<String> stream(@RequestParam String user) {
            return this.chat.prompt().user("a question").advisors((advisor) -> advisor.param("user", user)).stream()
                    .content();
        }
    }
}
