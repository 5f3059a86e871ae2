package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A handler whose keys read only the request is decided before its arguments are bound: a refused
 * request runs no {@code @ModelAttribute} method, a request that fails binding is still counted,
 * each request is charged exactly once, and a success still settles (reset-on-success).
 */
@SpringBootTest(
        classes = EarlyDecisionHttpTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.early.algorithm=gcra",
            "throttle.policies.early.limit=3",
            "throttle.policies.early.period=60s",
            "throttle.policies.login.algorithm=gcra",
            "throttle.policies.login.limit=2",
            "throttle.policies.login.period=60s",
            "throttle.policies.login.reset-on-success=true",
            "throttle.policies.byarg.algorithm=gcra",
            "throttle.policies.byarg.limit=5",
            "throttle.policies.byarg.period=60s"
        })
class EarlyDecisionHttpTests {

    static final AtomicInteger lookups = new AtomicInteger();

    static final AtomicInteger decisions = new AtomicInteger();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
        lookups.set(0);
        decisions.set(0);
    }

    private HttpResponse<String> get(String path) throws Exception {
        return UrlRulesHttpTests.get(this.port, path);
    }

    @Test
    void aRefusedRequestNeverCallsTheModelAttributeMethod() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(get("/owners?ownerId=1").statusCode()).isEqualTo(200);
        }
        assertThat(lookups).hasValue(3);
        HttpResponse<String> refused = get("/owners?ownerId=1");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(refused.body()).contains("\"violated-policies\":[\"early\"]");
        assertThat(lookups).as("no lookup for the refused request").hasValue(3);
    }

    @Test
    void eachRequestIsChargedOnceThoughItsAdviceStillRuns() throws Exception {
        HttpResponse<String> allowed = get("/owners?ownerId=1");
        assertThat(allowed.statusCode()).isEqualTo(200);
        assertThat(decisions).as("decisions made for one request").hasValue(1);
        assertThat(this.throttler.peek("early", "127.0.0.1").remaining()).isEqualTo(2);
        assertThat(allowed.headers().allValues("RateLimit")).containsExactly("\"early\";r=2;t=20");
    }

    @Test
    void aRequestThatFailsBindingOrItsLookupIsStillCounted() throws Exception {
        assertThat(get("/owners?ownerId=abc").statusCode()).as("binding fails").isEqualTo(400);
        assertThat(get("/owners").statusCode()).as("the lookup fails").isEqualTo(500);
        assertThat(this.throttler.peek("early", "127.0.0.1").remaining()).isEqualTo(1);
        assertThat(decisions).hasValue(2);
    }

    @Test
    void aSuccessStillSettlesByItsPolicy() throws Exception {
        assertThat(get("/login?ownerId=1&ok=false").statusCode()).isEqualTo(401);
        assertThat(this.throttler.peek("login", "127.0.0.1").remaining()).isEqualTo(1);
        HttpResponse<String> success = get("/login?ownerId=1&ok=true");
        assertThat(success.statusCode()).isEqualTo(200);
        assertThat(this.throttler.peek("login", "127.0.0.1").remaining())
                .as("reset on success")
                .isEqualTo(2);
        assertThat(decisions).hasValue(2);
    }

    @Test
    void aHandlerReturningMonoIsDecidedBeforeBindingAndChargedOnce() throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> allowed = get("/owners/mono?ownerId=1");
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.body()).isEqualTo("{\"owner\":1}");
        }
        assertThat(decisions).as("one decision per request").hasValue(3);
        // Spring MVC runs the lookup again when it dispatches a Mono's value: count only the refusal's
        int lookupsBefore = lookups.get();
        HttpResponse<String> refused = get("/owners/mono?ownerId=1");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(lookups).as("no lookup for the refused request").hasValue(lookupsBefore);
        assertThat(decisions).hasValue(4);
    }

    @Test
    void aHandlerReturningMonoStillSettlesThroughTheRequestItWasDecidedIn() throws Exception {
        assertThat(get("/login/mono?ownerId=1&ok=false").statusCode()).isEqualTo(401);
        assertThat(this.throttler.peek("login", "127.0.0.1").remaining()).isEqualTo(1);
        HttpResponse<String> success = get("/login/mono?ownerId=1&ok=true");
        assertThat(success.statusCode()).isEqualTo(200);
        assertThat(this.throttler.peek("login", "127.0.0.1").remaining())
                .as("reset on success")
                .isEqualTo(2);
        assertThat(decisions).hasValue(2);
    }

    @Test
    void aHandlerWhoseKeyReadsAnArgumentIsDecidedWhenCalledAsBefore() throws Exception {
        assertThat(get("/byarg?ownerId=1&name=x").statusCode()).isEqualTo(200);
        assertThat(lookups).hasValue(1);
        assertThat(this.throttler.peek("byarg", "x").remaining()).isEqualTo(4);
        assertThat(decisions).hasValue(1);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Owners.class)
    static class App {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        ThrottleListener countingListener() {
            return new ThrottleListener() {

                @Override
                public void onDecision(Policy policy, Decision decision, long storeNanos) {
                    decisions.incrementAndGet();
                }
            };
        }
    }

    record Owner(int id) {}

    @RestController
    static class Owners {

        /** A database lookup, as petclinic's findOwner: runs before every handler of the controller. */
        @ModelAttribute("owner")
        Owner owner(@RequestParam(required = false) Integer ownerId) {
            lookups.incrementAndGet();
            if (ownerId == null) {
                throw new IllegalStateException("no owner");
            }
            return new Owner(ownerId);
        }

        @GetMapping("/owners")
        @Throttled(policy = "early", key = "#ip")
        Map<String, Integer> show(@ModelAttribute("owner") Owner owner) {
            return Map.of("owner", owner.id());
        }

        @GetMapping("/login")
        @Throttled(policy = "login", key = "#ip")
        ResponseEntity<String> login(@ModelAttribute("owner") Owner owner, @RequestParam boolean ok) {
            return ok
                    ? ResponseEntity.ok("welcome")
                    : ResponseEntity.status(HttpStatus.UNAUTHORIZED).body("no");
        }

        @GetMapping("/owners/mono")
        @Throttled(policy = "early", key = "#ip")
        Mono<Map<String, Integer>> showLater(@ModelAttribute("owner") Owner owner) {
            return Mono.fromSupplier(() -> Map.of("owner", owner.id()));
        }

        @GetMapping("/login/mono")
        @Throttled(policy = "login", key = "#ip")
        Mono<ResponseEntity<String>> loginLater(@ModelAttribute("owner") Owner owner, @RequestParam boolean ok) {
            return Mono.fromSupplier(() -> ok
                    ? ResponseEntity.ok("welcome")
                    : ResponseEntity.status(HttpStatus.UNAUTHORIZED).body("no"));
        }

        @GetMapping("/byarg")
        @Throttled(policy = "byarg", key = "#name")
        String byArg(@RequestParam String name) {
            return name;
        }
    }
}
