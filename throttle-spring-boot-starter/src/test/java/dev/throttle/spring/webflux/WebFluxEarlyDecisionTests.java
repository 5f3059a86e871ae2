package dev.throttle.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.ThrottleListener;
import dev.throttle.ThrottledException;
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
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * In WebFlux too, a handler whose keys read only the request is decided before its arguments are
 * resolved, through a real Netty port: a refused request runs no {@code @ModelAttribute} method, a
 * request that fails binding is still counted, each request is charged exactly once, and a success
 * still settles (reset-on-success).
 */
@SpringBootTest(
        classes = WebFluxEarlyDecisionTests.App.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.web-application-type=reactive",
            "throttle.policies.early.algorithm=gcra",
            "throttle.policies.early.limit=3",
            "throttle.policies.early.period=60s",
            "throttle.policies.login.algorithm=gcra",
            "throttle.policies.login.limit=2",
            "throttle.policies.login.period=60s",
            "throttle.policies.login.reset-on-success=true",
            "throttle.policies.byarg.algorithm=gcra",
            "throttle.policies.byarg.limit=5",
            "throttle.policies.byarg.period=60s",
            "throttle.policies.own.algorithm=gcra",
            "throttle.policies.own.limit=1",
            "throttle.policies.own.period=60s",
            "throttle.policies.pages.algorithm=gcra",
            "throttle.policies.pages.limit=3",
            "throttle.policies.pages.period=60s"
        })
class WebFluxEarlyDecisionTests {

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
        return WebFluxEarlyDecisionRedisTests.get(this.port, path);
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
        assertThat(refused.headers().allValues("RateLimit")).containsExactly("\"early\";r=0;t=20");
        assertThat(refused.body()).contains("\"violated-policies\":[\"early\"]");
        assertThat(lookups).as("no lookup for the refused request").hasValue(3);
        assertThat(decisions).hasValue(4);
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
    void aFluxHandlerIsChargedOnceToo() throws Exception {
        HttpResponse<String> allowed = get("/owners/all?ownerId=1");
        assertThat(allowed.statusCode()).isEqualTo(200);
        assertThat(allowed.body()).isEqualTo("[1,2]");
        assertThat(decisions).hasValue(1);
        assertThat(this.throttler.peek("early", "127.0.0.1").remaining()).isEqualTo(2);
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
    void aHandlerWhoseKeyReadsAnArgumentIsDecidedWhenSubscribedAsBefore() throws Exception {
        assertThat(get("/byarg?ownerId=1&name=x").statusCode()).isEqualTo(200);
        assertThat(lookups).hasValue(1);
        assertThat(this.throttler.peek("byarg", "x").remaining()).isEqualTo(4);
        assertThat(decisions).hasValue(1);
    }

    @Test
    void aControllerThatHandlesRefusalsItselfStillAnswersThem() throws Exception {
        assertThat(get("/own").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = get("/own");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.body()).isEqualTo("busy: own");
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(decisions).hasValue(2);
    }

    @Test
    void aClassLevelAnnotationChargesOneUnitPerRequestAndNoneForTheControllersOtherMethods() throws Exception {
        for (int remaining = 2; remaining >= 0; remaining--) {
            HttpResponse<String> allowed = get("/pages/" + remaining + "?ownerId=1");
            assertThat(allowed.statusCode()).isEqualTo(200);
            assertThat(allowed.headers().allValues("RateLimit")).containsExactly("\"pages\";r=" + remaining + ";t=20");
        }
        assertThat(decisions).as("one decision per request").hasValue(3);
        assertThat(lookups).hasValue(3);
        assertThat(get("/pages/x?ownerId=1").statusCode()).isEqualTo(429);
        assertThat(lookups).as("no lookup for the refused request").hasValue(3);
        assertThat(decisions).hasValue(4);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({Owners.class, OwnRefusals.class, Pages.class})
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
        Mono<Map<String, Integer>> show(@ModelAttribute("owner") Owner owner) {
            return Mono.just(Map.of("owner", owner.id()));
        }

        @GetMapping("/owners/all")
        @Throttled(policy = "early", key = "#ip")
        Flux<Integer> all(@ModelAttribute("owner") Owner owner) {
            return Flux.just(owner.id(), owner.id() + 1);
        }

        @GetMapping("/login")
        @Throttled(policy = "login", key = "#ip")
        Mono<ResponseEntity<String>> login(@ModelAttribute("owner") Owner owner, @RequestParam boolean ok) {
            return Mono.just(
                    ok
                            ? ResponseEntity.ok("welcome")
                            : ResponseEntity.status(HttpStatus.UNAUTHORIZED).body("no"));
        }

        @GetMapping("/byarg")
        @Throttled(policy = "byarg", key = "#name")
        Mono<String> byArg(@RequestParam String name) {
            return Mono.just(name);
        }
    }

    /**
     * A controller throttled at class level, shaped like a PetClinic controller: an
     * {@code @InitBinder}, a {@code @ModelAttribute} lookup and handlers; only the handlers are charged.
     */
    @RestController
    @Throttled(policy = "pages", key = "#ip")
    static class Pages {

        @InitBinder
        void initBinder(WebDataBinder binder) {
            binder.setDisallowedFields("id");
        }

        @ModelAttribute("owner")
        Owner owner(@RequestParam Integer ownerId) {
            lookups.incrementAndGet();
            return new Owner(ownerId);
        }

        @GetMapping("/pages/{page}")
        Mono<String> page(@PathVariable String page, @ModelAttribute("owner") Owner owner) {
            return Mono.just(page + ":" + owner.id());
        }
    }

    /** A controller whose own exception handler answers its refusals: Spring consults it only for its calls. */
    @RestController
    static class OwnRefusals {

        @GetMapping("/own")
        @Throttled(policy = "own", key = "#ip")
        Mono<String> own() {
            return Mono.just("ok");
        }

        @ExceptionHandler(ThrottledException.class)
        ResponseEntity<String> busy(ThrottledException refusal) {
            return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                    .body("busy: " + refusal.getPolicy().name());
        }
    }
}
