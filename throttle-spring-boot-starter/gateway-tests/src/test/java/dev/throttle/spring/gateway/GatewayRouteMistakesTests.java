package dev.throttle.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A route's mistake stops the start with a report that names the route and the argument, in Boot's
 * "Description / Action" form rather than the gateway's stack traces.
 */
@ExtendWith(OutputCaptureExtension.class)
class GatewayRouteMistakesTests {

    private static final String ROUTE = "spring.cloud.gateway.server.webflux.routes[0].";

    private static void start(String... arguments) {
        String[] properties = {
            "server.port=0",
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limit=3",
            "throttle.policies.api.window=1h",
            ROUTE + "id=orders",
            ROUTE + "uri=http://127.0.0.1:9",
            ROUTE + "predicates[0]=Path=/orders/**",
            ROUTE + "filters[0].name=RequestRateLimiter",
            ROUTE + "filters[0].args.key-resolver=#{@clientKeyResolver}"
        };
        String[] all = new String[properties.length + arguments.length];
        System.arraycopy(properties, 0, all, 0, properties.length);
        System.arraycopy(arguments, 0, all, properties.length, arguments.length);
        new SpringApplicationBuilder(GatewayTestApplication.class)
                .web(WebApplicationType.REACTIVE)
                .properties(all)
                .run()
                .close();
    }

    @Test
    void aRouteNamingNoPolicyIsReportedWithTheRouteAndNotAsStackTraces(CapturedOutput output) {
        assertThatThrownBy(() -> start(ROUTE + "filters[0].args.throttle.policy=nope"));
        assertThat(output)
                .contains("APPLICATION FAILED TO START")
                .contains("A gateway route cannot be throttled as written")
                .contains("Route 'orders': throttle.policy")
                .contains("nope")
                .contains("Correct the route's RequestRateLimiter arguments");
    }

    @Test
    void aRouteWhoseFilterNamesNoPolicyStopsTheStartRatherThanFailingEachRequest(CapturedOutput output) {
        assertThatThrownBy(() -> start());
        assertThat(output)
                .contains("APPLICATION FAILED TO START")
                .contains("Route 'orders': its RequestRateLimiter filter uses throttle's RateLimiter without naming a "
                        + "policy: add the argument throttle.policy");
    }

    @Test
    void aRouteNamingNoConfiguredPolicyStopsTheStartWhereThrottlingIsOffToo(CapturedOutput output) {
        assertThatThrownBy(() -> start("throttle.enabled=false", ROUTE + "filters[0].args.throttle.policy=nope"));
        assertThat(output)
                .contains("A gateway route cannot be throttled as written")
                .contains("Route 'orders': throttle.policy: no policy named 'nope'; known: [api]");
    }

    @Test
    void anArgumentThatDoesNotBindIsReportedWithTheRoute(CapturedOutput output) {
        assertThatThrownBy(() ->
                start(ROUTE + "filters[0].args.throttle.policy=api", ROUTE + "filters[0].args.throttle.cost=four"));
        assertThat(output)
                .contains("A gateway route cannot be throttled as written")
                .contains("Route 'orders': its RequestRateLimiter arguments do not bind");
    }
}
