package dev.throttle.spring.waiting;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.annotation.Throttled;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;

/**
 * {@code throttle.policies.<name>.wait} and {@code @Throttled(maxWait)}: a wait where it cannot work
 * fails startup with a message that says why, naming the property or the method.
 */
class WaitingConfigurationTests {

    private final ApplicationContextRunner contextRunner =
            new ApplicationContextRunner().withUserConfiguration(Application.class);

    @Test
    void aLockoutWithAWaitFailsStartupSayingItWouldProtectNothing() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1s,2s,4s",
                        "throttle.policies.login.wait=2s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("throttle.policies.login.wait cannot be used with the lockout algorithm")
                        .contains("a lockout that can be waited out protects nothing"));
    }

    @Test
    void aSlidingLogOrSeveralLimitsWithAWaitFailStartupTooEachNamed() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.email.algorithm=sliding-log",
                        "throttle.policies.email.wait=1s",
                        "throttle.policies.search.algorithm=token-bucket",
                        "throttle.policies.search.limits[0].capacity=2",
                        "throttle.policies.search.limits[0].refill-period=1s",
                        "throttle.policies.search.limits[1].capacity=3",
                        "throttle.policies.search.limits[1].refill-period=1h",
                        "throttle.policies.search.wait=1s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("throttle.policies.email.wait cannot be used with the sliding-log algorithm")
                        .contains("protects nothing")
                        .contains("throttle.policies.search.wait cannot be used with the token-bucket algorithm"
                                + " and several limits"));
    }

    @Test
    void aNegativeWaitFailsStartup() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1s",
                        "throttle.policies.api.wait=-1s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("throttle.policies.api.wait must not be negative"));
    }

    @Test
    void aWaitOnTokenBucketGcraAndFixedWindowIsTheirChargesWait() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.tb.algorithm=token-bucket",
                        "throttle.policies.tb.capacity=2",
                        "throttle.policies.tb.refill-period=1s",
                        "throttle.policies.tb.wait=2s",
                        "throttle.policies.gcra.algorithm=gcra",
                        "throttle.policies.gcra.limit=2",
                        "throttle.policies.gcra.period=1s",
                        "throttle.policies.gcra.wait=500ms",
                        "throttle.policies.fw.algorithm=fixed-window",
                        "throttle.policies.fw.limit=2",
                        "throttle.policies.fw.window=1s")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    Admissions admissions = context.getBean(Admissions.class);
                    assertThat(admissions.charge("tb").waitLimit()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(admissions.charge("gcra").waitLimit()).isEqualTo(Duration.ofMillis(500));
                    assertThat(admissions.charge("fw").waits())
                            .as("unset: refused at once")
                            .isFalse();
                });
    }

    @Test
    void anAnnotationsMaxWaitOnALockoutFailsStartupNamingTheMethod() {
        this.contextRunner
                .withUserConfiguration(LockoutWaiter.class)
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout", "throttle.policies.login.timeouts=1s,2s,4s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("on Login.login(String) has maxWait \"2s\", but policy 'login' cannot wait")
                        .contains("a lockout that can be waited out protects nothing"));
    }

    @Test
    void anAnnotationsMaxWaitThatIsNoDurationFailsStartup() {
        this.contextRunner
                .withUserConfiguration(BadWaiter.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("has maxWait \"soon\", which is no duration"));
    }

    private static ThrottleConfigurationException configurationFailure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        for (Throwable current = context.getStartupFailure(); current != null; current = current.getCause()) {
            if (current instanceof ThrottleConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no ThrottleConfigurationException in", context.getStartupFailure());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {}

    static class Login {

        @Throttled(policy = "login", key = "#email", maxWait = "2s")
        public String login(String email) {
            return email;
        }
    }

    static class LockoutWaiter {

        @Bean
        Login login() {
            return new Login();
        }
    }

    static class Api {

        @Throttled(policy = "api", maxWait = "soon")
        public String call() {
            return "ok";
        }
    }

    static class BadWaiter {

        @Bean
        Api api() {
            return new Api();
        }
    }

    @Test
    void anAnnotationsMaxWaitWithoutAUnitFailsStartupRatherThanBeingReadAsMilliseconds() {
        this.contextRunner
                .withUserConfiguration(BareWaiter.class)
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1s")
                .run((context) -> assertThat(configurationFailure(context).getMessage())
                        .contains("has maxWait \"2\", a number without a unit, which would be read as milliseconds"));
    }

    static class BareApi {

        @Throttled(policy = "api", maxWait = "2")
        public String call() {
            return "ok";
        }
    }

    static class BareWaiter {

        @Bean
        BareApi bareApi() {
            return new BareApi();
        }
    }
}
