package dev.throttle.sample;

import dev.throttle.spring.annotation.Throttled;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * A call to someone else's API, paced: {@code GET /api/quote} calls {@code GET
 * {sample.upstream.base-url}/quote} through a {@code RestClient} built from Spring Boot's builder,
 * which the outgoing client {@code quotes} throttles (policy {@code upstream}, waiting up to 3 s for a
 * turn, honouring the API's own 429s). The API's answer is passed on as it came, its
 * {@code Retry-After} included; a call that could not be sent in time is a 503 with
 * {@code Retry-After}. {@code GET /upstream/quote} is the stand-in for the API: it refuses beyond 5
 * calls per 10 s with a real 429.
 */
@RestController
class QuoteController {

    private final RestClient quotes;

    QuoteController(RestClient.Builder builder, @Value("${sample.upstream.base-url}") String upstream) {
        this.quotes = builder.baseUrl(upstream).build();
    }

    @GetMapping("/api/quote")
    ResponseEntity<byte[]> quote() {
        return this.quotes.get().uri("/quote").exchange((request, response) -> {
            HttpHeaders headers = new HttpHeaders();
            String retryAfter = response.getHeaders().getFirst(HttpHeaders.RETRY_AFTER);
            if (retryAfter != null) {
                headers.set(HttpHeaders.RETRY_AFTER, retryAfter);
            }
            MediaType type = response.getHeaders().getContentType();
            if (type != null) {
                headers.setContentType(type);
            }
            return ResponseEntity.status(response.getStatusCode())
                    .headers(headers)
                    .body(response.getBody().readAllBytes());
        });
    }

    /** The stand-in for a third-party quotes API, with a limit of its own. */
    @GetMapping("/upstream/quote")
    @Throttled(policy = "quote-source", key = "'all'")
    Map<String, Object> upstreamQuote() {
        return Map.of(
                "symbol", "THR", "price", 100 + ThreadLocalRandom.current().nextInt(1000) / 100.0);
    }
}
