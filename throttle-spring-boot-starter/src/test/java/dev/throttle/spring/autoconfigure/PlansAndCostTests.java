package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Plans chosen per call by SpEL and costs evaluated per call, through
 * the auto-configuration and a proxied bean.
 */
class PlansAndCostTests {

    private static final String[] API = {
        "throttle.policies.api.algorithm=gcra",
        "throttle.policies.api.limit=100",
        "throttle.policies.api.period=1m",
        "throttle.policies.api.plans.free.limit=10",
        "throttle.policies.api.plans.pro.limit=1000",
        "throttle.policies.export.algorithm=fixed-window",
        "throttle.policies.export.limit=10",
        "throttle.policies.export.window=1m"
    };

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withPropertyValues(API);

    @Test
    void aPlanOverridesOnlyTheNumbersItNames() {
        this.contextRunner.run((context) -> {
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.policy("api")).isEqualTo(new GcraPolicy("api", 100, Duration.ofMinutes(1)));
            assertThat(throttler.plans("api"))
                    .containsExactly(
                            Map.entry("free", new GcraPolicy("api", 10, Duration.ofMinutes(1))),
                            Map.entry("pro", new GcraPolicy("api", 1000, Duration.ofMinutes(1))));
            assertThat(throttler.plans("export")).isEmpty();
        });
    }

    @Test
    void aCustomerMovingFromFreeToProAfterTenCallsHasNineHundredNinetyLeft() {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Api api = context.getBean(Api.class);
            Accounts accounts = context.getBean(Accounts.class);
            accounts.plans.put("k1", "free");
            for (int i = 0; i < 10; i++) {
                api.call("k1");
            }
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> api.call("k1"))
                    .satisfies((refused) -> assertThat(refused.getPolicy().quota())
                            .as("RateLimit-Policy's q")
                            .isEqualTo(10));
            accounts.plans.put("k1", "pro");
            api.call("k1");
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(throttler.bound("api").plan("pro").peek("k1").remaining())
                    .isEqualTo(989);
        });
    }

    @Test
    void aNullBlankOrUnknownPlanGetsTheBaseNumbers() {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Api api = context.getBean(Api.class);
            Accounts accounts = context.getBean(Accounts.class);
            accounts.plans.put("k2", "gold");
            accounts.plans.put("k3", " ");
            api.call("k2");
            api.call("k3");
            api.call("k4");
            Throttler throttler = context.getBean(Throttler.class);
            for (String key : List.of("k2", "k3", "k4")) {
                assertThat(throttler.peek("api", key).limit()).as(key).isEqualTo(100);
                assertThat(throttler.peek("api", key).remaining()).as(key).isEqualTo(99);
            }
        });
    }

    @Test
    void aCostExpressionTakesItsValueAtLeastOneAndOverTheLimitNeverPasses() {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Api api = context.getBean(Api.class);
            Throttler throttler = context.getBean(Throttler.class);
            api.export("u", List.of("a", "b", "c", "d"));
            assertThat(throttler.peek("export", "u").remaining()).isEqualTo(6);
            api.export("u", List.of());
            assertThat(throttler.peek("export", "u").remaining())
                    .as("an empty export costs 1")
                    .isEqualTo(5);
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> api.export("v", List.of("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")))
                    .satisfies((refused) ->
                            assertThat(refused.getDecision().retryAfterMillis()).isEqualTo(Long.MAX_VALUE));
            assertThat(throttler.peek("export", "v").remaining())
                    .as("nothing taken")
                    .isEqualTo(10);
            assertThat(throttler.policy("export"))
                    .isEqualTo(new FixedWindowPolicy("export", 10, Duration.ofMinutes(1)));
        });
    }

    @Test
    void aPlanThatSetsMoreThanNumbersOrABadNumberFailsTheStartNamingTheProperty() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.api.plans.gold.algorithm=token-bucket",
                        "throttle.policies.api.plans.free.limit=0",
                        "throttle.policies.api.plans.pro.capacity=3")
                .run(
                        (context) -> assertThat(failure(context).problems())
                                .containsExactlyInAnyOrder(
                                        "throttle.policies.api.plans.free.limit must be between 1 and 8388607, was 0",
                                        "throttle.policies.api.plans.pro.capacity means nothing to the gcra algorithm, which takes limit, period",
                                        "throttle.policies.api.plans.gold may set only numbers of the gcra algorithm (limit, period):"
                                                + " algorithm, mode, plans, reset-on-success, wait, count and durability are the policy's"));
    }

    @Test
    void aPlanOrCostExpressionThatDoesNotParseOrNamesNoParameterFailsTheStart() {
        this.contextRunner
                .withUserConfiguration(BadExpressions.class)
                .run((context) -> assertThat(String.join("\n", failure(context).problems()))
                        .contains("the plan expression '#nope' names #nope, which the method does not have")
                        .contains("the cost expression '#rows.size(' does not parse")
                        .contains("sets both cost (2) and costExpression"));
    }

    private static ThrottleConfigurationException failure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }

    public static class Accounts {

        final Map<String, String> plans = new ConcurrentHashMap<>();

        public String planOf(String apiKey) {
            return this.plans.get(apiKey);
        }
    }

    public static class Api {

        @Throttled(policy = "api", key = "#apiKey", plan = "@accounts.planOf(#apiKey)")
        public String call(String apiKey) {
            return "ok";
        }

        @Throttled(policy = "export", key = "#user", costExpression = "#rows.size()")
        public int export(String user, List<String> rows) {
            return rows.size();
        }
    }

    public static class Bad {

        @Throttled(policy = "api", key = "#apiKey", plan = "#nope")
        public String plan(String apiKey) {
            return "ok";
        }

        @Throttled(policy = "export", key = "#user", costExpression = "#rows.size(")
        public int cost(String user, List<String> rows) {
            return 0;
        }

        @Throttled(policy = "export", key = "#user", cost = 2, costExpression = "#rows.size()")
        public int both(String user, List<String> rows) {
            return 0;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Service {

        @Bean
        Accounts accounts() {
            return new Accounts();
        }

        @Bean
        Api api() {
            return new Api();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadExpressions {

        @Bean
        Bad bad() {
            return new Bad();
        }
    }
}
