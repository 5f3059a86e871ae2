package dev.throttle.spring.internal.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.GcraPolicy;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.server.RequestPath;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * URL rules: checked at startup with every mistake named by its property; matched on every
 * spelling of a path a client could use to reach the same handler; keyed by SpEL over the request.
 */
class HttpRulesTests {

    private final Throttler throttler = new Throttler(
            new MemoryThrottleStore(),
            List.of(
                    new GcraPolicy("api", 5, Duration.ofMinutes(1)),
                    new GcraPolicy("reports", 2, Duration.ofMinutes(1))));

    private HttpRules rules(HttpRules.Spec... specs) {
        return new HttpRules(List.of(specs), Admissions.of(this.throttler), null);
    }

    private static HttpRules.Spec rule(String path, String... methods) {
        return new HttpRules.Spec(List.of(path), List.of(methods), "api", "#ip", 1);
    }

    private static List<HttpRules.Matched> match(HttpRules rules, String method, String uri) {
        return rules.match(method, RequestPath.parse(uri, null).pathWithinApplication());
    }

    @Test
    void everySpellingOfAPathIsMatchedAsTheHandlerWouldBe() {
        HttpRules rules = rules(rule("/api/hello"));
        for (String uri : new String[] {
            "/api/hello",
            "/api/hello/",
            "/API/Hello",
            "/api/hell%6F",
            "/api/hello;jsessionid=ABC",
            "/api;x=1/hello",
            "//api//hello",
            "/api/./hello",
            "/api/x/../hello",
            "/api%2Fhello",
            "/api/hello//"
        }) {
            assertThat(match(rules, "GET", uri)).as(uri).hasSize(1);
        }
        for (String uri : new String[] {"/api/hello2", "/api/hello/x", "/api", "/other/hello", "/api/hello%2Fx"}) {
            assertThat(match(rules, "GET", uri)).as(uri).isEmpty();
        }
    }

    @Test
    void aPatternWrittenWithATrailingSlashLimitsThePathWithAndWithoutIt() {
        HttpRules rules = rules(rule("/api/hello/"), new HttpRules.Spec(List.of("/x//"), List.of(), "api", "#ip", 1));
        for (String uri : new String[] {"/api/hello", "/api/hello/", "/API/hello", "/api//hello/"}) {
            assertThat(match(rules, "GET", uri)).as(uri).hasSize(1);
        }
        assertThat(match(rules, "GET", "/x")).hasSize(1);
        assertThat(match(rules(rule("/")), "GET", "/"))
                .as("the root stays the root")
                .hasSize(1);
    }

    @Test
    void aMisspelledMethodFailsTheStartForItWouldMatchNoRequest() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> rules(rule("/api/login", "PSOT")))
                .satisfies((ex) -> assertThat(ex.problems())
                        .singleElement()
                        .asString()
                        .startsWith("throttle.http.rules[0].methods[0] 'PSOT' is not an HTTP method: use GET, HEAD, "
                                + "POST"));
        assertThat(match(rules(rule("/dav/**", "propfind", "QUERY")), "PROPFIND", "/dav/x"))
                .as("WebDAV's methods and QUERY are methods")
                .hasSize(1);
    }

    @Test
    void aContextPathIsNotPartOfTheMatchedPath() {
        HttpRules rules = rules(rule("/api/**"));
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/app/api/reports");
        request.setContextPath("/app");
        RequestPath path = RequestPath.parse(request.getRequestURI(), request.getContextPath());
        assertThat(rules.match("GET", path.pathWithinApplication())).hasSize(1);
    }

    @Test
    void methodsLimitARuleAndGetCoversHead() {
        HttpRules rules = rules(rule("/api/**", "GET"), rule("/api/**", "post", "PUT"));
        assertThat(match(rules, "GET", "/api/x")).hasSize(1);
        assertThat(match(rules, "HEAD", "/api/x"))
                .as("HEAD runs the GET handler")
                .hasSize(1);
        assertThat(match(rules, "POST", "/api/x")).hasSize(1);
        assertThat(match(rules, "put", "/api/x")).hasSize(1);
        assertThat(match(rules, "DELETE", "/api/x")).isEmpty();
        assertThat(match(rules(rule("/api/**")), "DELETE", "/api/x"))
                .as("no methods: every method")
                .hasSize(1);
    }

    @Test
    void aRequestMatchedBySeveralRulesGetsEachInOrder() {
        HttpRules rules = new HttpRules(
                List.of(
                        new HttpRules.Spec(List.of("/api/**"), List.of(), "api", "#ip", 1),
                        new HttpRules.Spec(List.of("/api/reports/**"), List.of(), "reports", "#ip", 2)),
                Admissions.of(this.throttler),
                null);
        List<HttpRules.Matched> matched = match(rules, "GET", "/api/reports/7");
        HttpRule.RuleRequest request = request(new MockHttpServletRequest("GET", "/api/reports/7"));
        assertThat(HttpRules.charges(matched, request))
                .extracting((charge) -> charge.policy().name())
                .containsExactly("api", "reports");
        assertThat(HttpRules.charges(matched, request))
                .extracting((charge) -> charge.cost())
                .containsExactly(1, 2);
        assertThat(match(rules, "GET", "/api/hello")).hasSize(1);
    }

    @Test
    void keysReadTheRequestTheHeadersTheQueryAndThePathVariables() {
        HttpRules rules = new HttpRules(
                List.of(
                        new HttpRules.Spec(
                                List.of("/api/{tenant}/**"),
                                List.of(),
                                "api",
                                "#path['tenant'] + ':' + #headers['x-api-key'] + ':' + #params['q'] + ':' + #ip",
                                1),
                        new HttpRules.Spec(List.of("/api/**"), List.of(), "api", "#request.method", 1),
                        new HttpRules.Spec(List.of("/api/**"), List.of(), "api", "", 1)),
                Admissions.of(this.throttler),
                null);
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/api/acme/reports");
        request.addHeader("X-Api-Key", "k1");
        request.setQueryString("q=a%20b&q=second");
        request.setRemoteAddr("198.51.100.7");
        List<HttpRules.Matched> matched = match(rules, "GET", "/api/acme/reports");
        String[] keys = HttpRules.keys(matched, request(request));
        assertThat(keys).containsExactly("acme:k1:a b:198.51.100.7", "GET", null);
    }

    @Test
    void aKeyThatFailsSharesTheBucketRatherThanFailingTheRequest() {
        HttpRules rules = new HttpRules(
                List.of(new HttpRules.Spec(List.of("/**"), List.of(), "api", "#headers['X-Missing'].toLowerCase()", 1)),
                Admissions.of(this.throttler),
                null);
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
        assertThat(HttpRules.keys(match(rules, "GET", "/x"), request(request))).containsExactly((String) null);
    }

    @Test
    void aKeyThatNamesAnObjectRatherThanACallerSharesTheBucket() {
        // #request is the servlet request itself, another one per request: never a bucket per request
        HttpRules rules = new HttpRules(
                List.of(new HttpRules.Spec(List.of("/**"), List.of(), "api", "#request", 1)),
                Admissions.of(this.throttler),
                null);
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
        assertThat(HttpRules.keys(match(rules, "GET", "/x"), request(request))).containsExactly((String) null);
    }

    @Test
    void everyMistakeIsNamedByItsPropertyAtOnce() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> new HttpRules(
                        List.of(
                                new HttpRules.Spec(List.of("/api/**"), List.of(), "nope", "#ip", 1),
                                new HttpRules.Spec(
                                        List.of("/api/{*rest}/x", "api"), List.of("GET", "G-T"), "api", "#ip", 1),
                                new HttpRules.Spec(List.of(), List.of(), "api", "#ip +", 1),
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "#email", 1),
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "#principal", 9),
                                new HttpRules.Spec(List.of("/x"), List.of(), null, "", 1)),
                        Admissions.of(this.throttler),
                        "Spring Security is not on the classpath"))
                .satisfies((ex) -> assertThat(ex.problems())
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.http.rules[0].policy names 'nope', which is not configured"))
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.http.rules[1].paths[0] '/api/{*rest}/x' is not a path pattern"))
                        .anySatisfy((p) ->
                                assertThat(p).startsWith("throttle.http.rules[1].paths[1] 'api' is not a path pattern"))
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith("throttle.http.rules[1].methods[1] 'G-T' is not an HTTP method"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.rules[2].paths is missing"))
                        .anySatisfy(
                                (p) -> assertThat(p).startsWith("throttle.http.rules[2].key '#ip +' does not parse"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.rules[3].key '#email' names #email"))
                        .anySatisfy(
                                (p) -> assertThat(p).startsWith("throttle.http.rules[4].cost is 9, but policy 'api'"))
                        .anySatisfy((p) -> assertThat(p)
                                .startsWith(
                                        "throttle.http.rules[4].key '#principal' uses #principal, but Spring Security"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.rules[5].policy is missing")));
    }

    @Test
    void aRuleWithoutPlanOrCostExpressionChargesItsOwnChargeEveryTime() {
        HttpRules rules = rules(rule("/api/**"));
        List<HttpRules.Matched> matched = match(rules, "GET", "/api/x");
        HttpRule.RuleRequest request = request(new MockHttpServletRequest("GET", "/api/x"));
        assertThat(HttpRules.charges(matched, request).get(0))
                .isSameAs(HttpRules.charges(matched, request).get(0));
    }

    @Test
    void aPlanExpressionChoosesThePlansNumbersPerRequestAndUnknownOrMissingMeansTheBase() {
        Throttler planned = new Throttler(
                new MemoryThrottleStore(),
                List.of(new GcraPolicy("api", 5, Duration.ofMinutes(1))),
                Map.of("api", Map.of("pro", new GcraPolicy("api", 50, Duration.ofMinutes(1)))),
                List.of());
        HttpRules rules = new HttpRules(
                List.of(new HttpRules.Spec(List.of("/**"), List.of(), "api", "#ip", "1", "#headers['X-Plan']")),
                Admissions.of(planned),
                null);
        List<HttpRules.Matched> matched = match(rules, "GET", "/x");
        MockHttpServletRequest pro = new MockHttpServletRequest("GET", "/x");
        pro.addHeader("X-Plan", "pro");
        MockHttpServletRequest unknown = new MockHttpServletRequest("GET", "/x");
        unknown.addHeader("X-Plan", "gold");
        assertThat(HttpRules.charges(matched, request(pro)).get(0).policy().maxCost())
                .isEqualTo(50);
        assertThat(HttpRules.charges(matched, request(unknown)).get(0).policy().maxCost())
                .isEqualTo(5);
        assertThat(HttpRules.charges(matched, request(new MockHttpServletRequest("GET", "/x")))
                        .get(0)
                        .policy()
                        .maxCost())
                .isEqualTo(5);
    }

    @Test
    void aCostExpressionIsAtLeastOneReadsNumbersInTextAndFallsBackToOne() {
        HttpRules rules = new HttpRules(
                List.of(new HttpRules.Spec(List.of("/**"), List.of(), "api", "#ip", "#params['rows']", "")),
                Admissions.of(this.throttler),
                null);
        List<HttpRules.Matched> matched = match(rules, "GET", "/x");
        assertThat(cost(matched, "rows=3")).isEqualTo(3);
        assertThat(cost(matched, "rows=0")).as("at least 1").isEqualTo(1);
        assertThat(cost(matched, "rows=99"))
                .as("over the maximum: refused when charged, not here")
                .isEqualTo(99);
        assertThat(cost(matched, "rows=many")).as("not a number").isEqualTo(1);
        assertThat(cost(matched, null)).as("null").isEqualTo(1);
    }

    private static int cost(List<HttpRules.Matched> matched, String query) {
        MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
        request.setQueryString(query);
        return HttpRules.charges(matched, request(request)).get(0).cost();
    }

    @Test
    void aKeyPlanOrCostWrittenWithoutItsHashIsNamedForEveryRequestWouldShareOneBucket() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> new HttpRules(
                        List.of(
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "ip", null, null),
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "#ip", "params['n']", "tier")),
                        Admissions.of(this.throttler),
                        null))
                .satisfies(
                        (ex) -> assertThat(ex.problems())
                                .containsExactly(
                                        "throttle.http.rules[0].key 'ip' reads 'ip' from the root object, which a rule's key does "
                                                + "not have, so every request would share one bucket: a variable is written with "
                                                + "# (#ip, #principal, #request, #headers['Name'], #params['name'] or "
                                                + "#path['variable'])",
                                        "throttle.http.rules[1].cost 'params['n']' reads 'params' from the root object, which a "
                                                + "rule's cost does not have, so it would never apply: a variable is written with "
                                                + "# (#ip, #principal, #request, #headers['Name'], #params['name'] or "
                                                + "#path['variable'])",
                                        "throttle.http.rules[1].plan 'tier' reads 'tier' from the root object, which a rule's "
                                                + "plan does not have, so it would never apply: a variable is written with # (#ip, "
                                                + "#principal, #request, #headers['Name'], #params['name'] or #path['variable'])"));
    }

    @Test
    void aPathVariableThatAPatternOfTheRuleDoesNotCaptureIsNamed() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> new HttpRules(
                        List.of(
                                new HttpRules.Spec(
                                        List.of("/reports/{id:[0-9]+}", "/exports/{*rest}"),
                                        List.of(),
                                        "api",
                                        "#path['id']",
                                        null,
                                        null),
                                new HttpRules.Spec(List.of("/all"), List.of(), "api", "#ip", "#path['n']", null)),
                        Admissions.of(this.throttler),
                        null))
                .satisfies((ex) -> assertThat(ex.problems())
                        .containsExactly(
                                "throttle.http.rules[0].key '#path['id']' reads #path['id'], which the path pattern "
                                        + "'/exports/{*rest}' does not capture, so every request would share one bucket: "
                                        + "it captures rest",
                                "throttle.http.rules[1].cost '#path['n']' reads #path['n'], which the path pattern "
                                        + "'/all' does not capture, so it would never apply: it captures no variable"));
        assertThat(new HttpRules(
                                List.of(new HttpRules.Spec(
                                        List.of("/reports/{id:[0-9]+}", "/exports/{id}/{*rest}"),
                                        List.of(),
                                        "api",
                                        "#path['id']",
                                        null,
                                        null)),
                                Admissions.of(this.throttler),
                                null)
                        .isEmpty())
                .as("a name every pattern captures")
                .isFalse();
    }

    @Test
    void planAndCostMistakesAreNamedByTheirProperty() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> new HttpRules(
                        List.of(
                                new HttpRules.Spec(
                                        List.of("/x"), List.of(), "api", "#ip", "#rows", "#headers['X-Plan'"),
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "#ip", "#params['n'] *", "#tier"),
                                new HttpRules.Spec(List.of("/x"), List.of(), "api", "#ip", "0", "#principal")),
                        Admissions.of(this.throttler),
                        "Spring Security is not on the classpath"))
                .satisfies(
                        (ex) -> assertThat(ex.problems())
                                .hasSize(6)
                                .anySatisfy((p) ->
                                        assertThat(p).startsWith("throttle.http.rules[0].cost '#rows' names #rows"))
                                .anySatisfy((p) -> assertThat(p)
                                        .startsWith("throttle.http.rules[0].plan '#headers['X-Plan'' does not parse"))
                                .anySatisfy((p) -> assertThat(p)
                                        .startsWith("throttle.http.rules[1].cost '#params['n'] *' does not parse"))
                                .anySatisfy((p) -> assertThat(p)
                                        .startsWith(
                                                "throttle.http.rules[1].plan '#tier' names #tier, which a rule's plan"))
                                .anySatisfy((p) ->
                                        assertThat(p).startsWith("throttle.http.rules[2].cost is 0, but policy 'api'"))
                                .anySatisfy(
                                        (p) -> assertThat(p)
                                                .startsWith(
                                                        "throttle.http.rules[2].plan '#principal' uses #principal, but Spring Security")));
    }

    @Test
    void noRulesMatchNothingAndAllocateNothing() {
        HttpRules rules = rules();
        assertThat(rules.isEmpty()).isTrue();
        assertThat(match(rules, "GET", "/api/hello")).isSameAs(List.of());
    }

    private static HttpRule.RuleRequest request(MockHttpServletRequest request) {
        return new HttpRule.RuleRequest() {

            @Override
            public String ip() {
                return request.getRemoteAddr();
            }

            @Override
            public String principal() {
                return null;
            }

            @Override
            public Object request() {
                return request;
            }

            @Override
            public String header(String name) {
                return request.getHeader(name);
            }

            @Override
            public String param(String name) {
                String query = request.getQueryString();
                Map<String, List<String>> params = org.springframework.web.util.UriComponentsBuilder.newInstance()
                        .query(query)
                        .build()
                        .getQueryParams();
                List<String> values = params.get(name);
                return (values != null)
                        ? org.springframework.web.util.UriUtils.decode(
                                values.get(0), java.nio.charset.StandardCharsets.UTF_8)
                        : null;
            }
        };
    }
}
