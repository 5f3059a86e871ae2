package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.TimeSource;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code @Throttled(anchor)}: each customer's month from their own billing day, chosen per call
 * through a proxied bean, and every way of getting it wrong reported at startup or said once.
 */
@ExtendWith(OutputCaptureExtension.class)
class AnchorDayTests {

    private final ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-04-14T12:00:00Z"));

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(TimeSource.class, () -> this.clock)
            .withPropertyValues(
                    "throttle.policies.tokens.algorithm=fixed-window",
                    "throttle.policies.tokens.limit=1",
                    "throttle.policies.tokens.window=1M",
                    "throttle.policies.tokens.plans.pro.limit=2");

    @Test
    void eachCustomersMonthRunsFromTheBillingDayTheAnchorExpressionGives() {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Assistant assistant = context.getBean(Assistant.class);
            Customer alice = new Customer("alice", 15, null);
            Customer bob = new Customer("bob", LocalDate.of(2025, 1, 31), null);
            Customer carol = new Customer("carol", null, null);
            assistant.ask(alice);
            assistant.ask(bob);
            assistant.ask(carol);
            assertThat(retryAfter(() -> assistant.ask(alice)))
                    .as("Alice's month ends on April 15th")
                    .isEqualTo(Duration.ofHours(12));
            assertThat(retryAfter(() -> assistant.ask(bob)))
                    .as("Bob is billed on the 31st: his month ends on April's last day, the 30th")
                    .isEqualTo(Duration.ofDays(15).plusHours(12));
            assertThat(retryAfter(() -> assistant.ask(carol)))
                    .as("no billing day: the policy's month, to May 1st")
                    .isEqualTo(Duration.ofDays(16).plusHours(12));

            this.clock.set(Instant.parse("2026-04-15T00:00:00Z"));
            assistant.ask(alice);
            assertThat(retryAfter(() -> assistant.ask(alice)))
                    .as("Alice's new month, to May 15th")
                    .isEqualTo(Duration.ofDays(30));
        });
    }

    @Test
    void underAPlanTheAnchorDayStartsThePlansMonth() {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Assistant assistant = context.getBean(Assistant.class);
            Customer dave = new Customer("dave", 20, "pro");
            assistant.ask(dave);
            assistant.ask(dave);
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> assistant.ask(dave))
                    .satisfies((refused) -> {
                        assertThat(refused.getPolicy().quota())
                                .as("the plan's limit")
                                .isEqualTo(2);
                        assertThat(refused.getDecision().retryAfterMillis())
                                .as("from March 20th to April 20th")
                                .isEqualTo(Duration.ofDays(5).plusHours(12).toMillis());
                    });
        });
    }

    @Test
    void aValueThatIsNoDayOfTheMonthGetsThePolicysOwnMonthAndIsSaidOnce(CapturedOutput output) {
        this.contextRunner.withUserConfiguration(Service.class).run((context) -> {
            Assistant assistant = context.getBean(Assistant.class);
            assistant.ask(new Customer("erin", 40, null));
            assertThat(retryAfter(() -> assistant.ask(new Customer("erin", "the 15th", null))))
                    .as("the policy's month, to May 1st")
                    .isEqualTo(Duration.ofDays(16).plusHours(12));
            assertThat(output)
                    .containsOnlyOnce("The anchor expression of @Throttled(policy = \"tokens\")")
                    .contains("was outside 1 to 31: such calls get the policy's own anchor-day")
                    .doesNotContain("the 15th");
        });
    }

    @Test
    void anAnchorOnAPolicyWithoutACalendarMonthOrNamingNothingFailsTheStart() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.daily.algorithm=fixed-window",
                        "throttle.policies.daily.limit=1",
                        "throttle.policies.daily.window=1d",
                        "throttle.policies.bucket.algorithm=token-bucket",
                        "throttle.policies.bucket.capacity=1",
                        "throttle.policies.bucket.refill-period=1s")
                .withUserConfiguration(BadService.class)
                .run((context) -> assertThat(String.join("\n", failure(context).problems()))
                        .contains("anchor = \"#day\" names the day a month window starts on, but policy 'daily'"
                                + " is fixed-window over a window that is not a calendar month; give it"
                                + " algorithm: fixed-window and window: 1M")
                        .contains("policy 'bucket' is token-bucket; give it algorithm: fixed-window and window: 1M")
                        .contains("the anchor expression '#billingDay' names #billingDay, which the method does not"
                                + " have"));
    }

    private static Duration retryAfter(Runnable call) {
        try {
            call.run();
        } catch (ThrottledException refused) {
            return Duration.ofMillis(refused.getDecision().retryAfterMillis());
        }
        throw new AssertionError("the call was not refused");
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

    /** A customer of an assistant: a billing day (a number, a date or nothing) and a plan. */
    public record Customer(
            String id,
            @Nullable Object billingDay,
            @Nullable String plan) {}

    public static class Assistant {

        @Throttled(
                policy = "tokens",
                key = "#customer.id()",
                plan = "#customer.plan()",
                anchor = "#customer.billingDay()")
        public String ask(Customer customer) {
            return "answer";
        }
    }

    public static class Bad {

        @Throttled(policy = "daily", key = "#user", anchor = "#day")
        public String daily(String user, int day) {
            return "ok";
        }

        @Throttled(policy = "bucket", key = "#user", anchor = "#day")
        public String bucket(String user, int day) {
            return "ok";
        }

        @Throttled(policy = "tokens", key = "#user", anchor = "#billingDay")
        public String nothing(String user) {
            return "ok";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Service {

        @Bean
        Assistant assistant() {
            return new Assistant();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadService {

        @Bean
        Bad bad() {
            return new Bad();
        }
    }
}
