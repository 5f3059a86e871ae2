package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import org.springframework.http.HttpStatus;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Real gateway routes in front of a real backend, throttled by policies under
 * {@code throttle.policies}: allowed calls reach the backend with throttle's headers, a call over the
 * limit is answered 429 by the gateway with {@code Retry-After} and never reaches the backend, keys
 * (from the gateway's {@code KeyResolver}) are counted apart, and a route's plan and cost apply. Run
 * on each store by a subclass.
 */
@SpringBootTest(
        classes = GatewayTestApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.window=1h",
            "throttle.policies.api.plans.partner.limit=10",
            "throttle.policies.paced.algorithm=gcra",
            "throttle.policies.paced.limit=1",
            "throttle.policies.paced.period=1s",
            "throttle.policies.paced.wait=5s"
        })
abstract class GatewayRouteTests {

    /** One backend for the JVM: Spring keeps each test class's application (and its routes to it) until the end. */
    private static final Backend backend = Backend.start();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(backend::close));
    }

    @LocalServerPort
    private int port;

    @Autowired
    private RateLimiter<?> rateLimiter;

    private WebTestClient client;

    /**
     * The routes, all in one place: a list bound from properties is taken whole from the one source
     * that has it, so the backend's address (known only at run time) comes with the rest.
     */
    @DynamicPropertySource
    static void routes(DynamicPropertyRegistry registry) {
        Map<String, String> routes = new LinkedHashMap<>();
        routes.put("routes[0].id", "api");
        routes.put("routes[0].predicates[0].name", "Path");
        routes.put("routes[0].predicates[0].args.pattern", "/api/**");
        routes.put("routes[0].filters[0].name", "RequestRateLimiter");
        routes.put("routes[0].filters[0].args.key-resolver", "#{@clientKeyResolver}");
        routes.put("routes[0].filters[0].args.throttle.policy", "api");
        routes.put("routes[1].id", "partner");
        routes.put("routes[1].predicates[0].name", "Path");
        routes.put("routes[1].predicates[0].args.pattern", "/partner/**");
        routes.put("routes[1].filters[0].name", "RequestRateLimiter");
        routes.put("routes[1].filters[0].args.key-resolver", "#{@clientKeyResolver}");
        routes.put("routes[1].filters[0].args.throttle.policy", "api");
        routes.put("routes[1].filters[0].args.throttle.plan", "partner");
        routes.put("routes[1].filters[0].args.throttle.cost", "4");
        routes.put("routes[2].id", "paced");
        routes.put("routes[2].predicates[0].name", "Path");
        routes.put("routes[2].predicates[0].args.pattern", "/paced/**");
        routes.put("routes[2].filters[0].name", "RequestRateLimiter");
        routes.put("routes[2].filters[0].args.key-resolver", "#{@clientKeyResolver}");
        routes.put("routes[2].filters[0].args.throttle.policy", "paced");
        routes.put("routes[0].uri", backend.url());
        routes.put("routes[1].uri", backend.url());
        routes.put("routes[2].uri", backend.url());
        routes.forEach((name, value) -> registry.add("spring.cloud.gateway.server.webflux." + name, () -> value));
    }

    @BeforeEach
    void client() {
        this.client = WebTestClient.bindToServer()
                .baseUrl("http://127.0.0.1:" + this.port)
                .responseTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** A key of the test's own, so that the tests of a class (which share a store) never share a key. */
    abstract String client(String name);

    @Test
    void theRoutesRateLimiterIsThrottles() {
        assertThat(this.rateLimiter).isInstanceOf(ThrottleRateLimiter.class);
    }

    @Test
    void allowedCallsReachTheBackendWithRateLimitHeadersAndTheCallOverTheLimitIsRefusedByTheGateway() {
        String alice = client("alice");
        int before = backend.requests();
        for (int i = 1; i <= 3; i++) {
            EntityExchangeResult<String> allowed = get("/api/hello", alice);
            assertThat(allowed.getStatus()).isEqualTo(HttpStatus.OK);
            assertThat(allowed.getResponseBody()).isEqualTo("hello");
            assertThat(allowed.getResponseHeaders().getFirst("RateLimit-Policy"))
                    .isEqualTo("\"api\";q=3;w=3600");
            assertThat(allowed.getResponseHeaders().getFirst("RateLimit")).startsWith("\"api\";r=" + (3 - i) + ";t=");
            assertThat(allowed.getResponseHeaders().getFirst("Retry-After")).isNull();
        }
        EntityExchangeResult<String> refused = get("/api/hello", alice);
        assertThat(refused.getStatus()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
        long retryAfter = Long.parseLong(refused.getResponseHeaders().getFirst("Retry-After"));
        assertThat(retryAfter).isBetween(3500L, 3600L);
        assertThat(refused.getResponseHeaders().getFirst("RateLimit-Policy")).isEqualTo("\"api\";q=3;w=3600");
        assertThat(refused.getResponseHeaders().getFirst("RateLimit")).startsWith("\"api\";r=0;t=");
        assertThat(backend.requests() - before)
                .as("the refused call never reached the backend")
                .isEqualTo(3);
        // no key leaves in a header
        assertThat(refused.getResponseHeaders().toString()).doesNotContain(alice);
    }

    @Test
    void eachKeyFromTheKeyResolverHasItsOwnLimit() {
        String bob = client("bob");
        String carol = client("carol");
        for (int i = 0; i < 3; i++) {
            assertThat(get("/api/hello", bob).getStatus()).isEqualTo(HttpStatus.OK);
        }
        assertThat(get("/api/hello", bob).getStatus()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
        assertThat(get("/api/hello", carol).getStatus()).isEqualTo(HttpStatus.OK);
    }

    @Test
    void aRouteChargesItsPlansNumbersAndItsCost() {
        String dave = client("dave");
        // plan partner: 10 per hour; cost 4 a call: two calls pass (8), the third would need 12
        EntityExchangeResult<String> first = get("/partner/hello", dave);
        assertThat(first.getStatus()).isEqualTo(HttpStatus.OK);
        assertThat(first.getResponseHeaders().getFirst("RateLimit-Policy")).isEqualTo("\"api\";q=10;w=3600");
        assertThat(first.getResponseHeaders().getFirst("RateLimit")).startsWith("\"api\";r=6;");
        assertThat(get("/partner/hello", dave).getStatus()).isEqualTo(HttpStatus.OK);
        assertThat(get("/partner/hello", dave).getStatus()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    }

    @Test
    void aCallOverTheLimitOfAPolicyThatWaitsReachesTheBackendAtItsTurnNotBefore() {
        String erin = client("erin-paced");
        int before = backend.requests();
        assertThat(get("/paced/hello", erin).getStatus()).isEqualTo(HttpStatus.OK);
        long start = System.nanoTime();
        EntityExchangeResult<String> waited = get("/paced/hello", erin);
        long tookMillis = Duration.ofNanos(System.nanoTime() - start).toMillis();
        assertThat(waited.getStatus()).isEqualTo(HttpStatus.OK);
        assertThat(tookMillis)
                .as("one call a second: the second waits for its turn")
                .isGreaterThanOrEqualTo(700);
        assertThat(backend.requests() - before).isEqualTo(2);
    }

    /** The backend's address, for routes a subclass adds. */
    static String backendUrl() {
        return backend.url();
    }

    private EntityExchangeResult<String> get(String path, String client) {
        return this.client
                .get()
                .uri(path)
                .header("X-Client", client)
                .exchange()
                .expectBody(String.class)
                .returnResult();
    }
}
