package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * In a Boot 3.5 application, the starter's failure analyzer (registered in
 * {@code META-INF/spring.factories}, where Boot 3.5 and 4 both look) prints every configuration
 * mistake of a start in Boot's "Description / Action" block; the policies are checked with
 * throttling disabled too; and the startup line is logged.
 */
@ExtendWith(OutputCaptureExtension.class)
class ConfigurationMistakesOnBoot35Tests {

    private static final String ZERO_CAPACITY =
            "throttle.policies.login-ip.capacity must be between 1 and 8388607, was 0";

    private static final String UNKNOWN_ALGORITHM = "throttle.policies.api.algorithm: unknown algorithm 'leaky-bucket'";

    private static final String NOT_CONFIGURED =
            "@Throttled(policy = \"nope\", key = \"#email\") on UnknownPolicy.call(String) "
                    + "names policy 'nope', which is not configured";

    @Test
    void everyMistakeIsPrintedInOneDescriptionAndActionBlock(CapturedOutput output) {
        SpringApplication application = new SpringApplicationBuilder(Application.class, UnknownPolicy.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=0",
                        "throttle.policies.login-ip.refill-period=1s",
                        "throttle.policies.api.algorithm=leaky-bucket")
                .build();
        assertThatThrownBy(application::run).isInstanceOf(ThrottleConfigurationException.class);
        assertThat(output).contains("APPLICATION FAILED TO START");
        String description = output.toString()
                .substring(
                        output.toString().indexOf("Description:"),
                        output.toString().indexOf("Action:"));
        assertThat(description)
                .contains("3 mistakes")
                .contains("    - " + ZERO_CAPACITY)
                .contains("    - " + UNKNOWN_ALGORITHM)
                .contains("    - " + NOT_CONFIGURED);
    }

    @Test
    void policiesAreCheckedWithThrottlingDisabled(CapturedOutput output) {
        SpringApplication application = new SpringApplicationBuilder(Application.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "throttle.enabled=false",
                        "throttle.policies.login-ip.algorithm=token-bucket",
                        "throttle.policies.login-ip.capacity=0",
                        "throttle.policies.login-ip.refill-period=1s",
                        "throttle.policies.api.algorithm=leaky-bucket")
                .build();
        assertThatThrownBy(application::run).isInstanceOf(ThrottleConfigurationException.class);
        assertThat(output).contains("2 mistakes").contains(ZERO_CAPACITY).contains(UNKNOWN_ALGORITHM);
    }

    @Test
    void aGoodStartLogsTheStoreThePoliciesAndHowManyMethodsAreThrottled(CapturedOutput output) {
        new SpringApplicationBuilder(Application.class, Throttled2.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m")
                .run()
                .close();
        assertThat(output.getOut().lines().filter((line) -> line.contains("Throttling ")))
                .singleElement()
                .satisfies(
                        (line) -> assertThat(line)
                                .contains("INFO")
                                .endsWith(
                                        "Throttling with the memory store: 2 annotated methods, the Throttler bean; policies: api (gcra)"));
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {}

    static class UnknownPolicy {

        @Throttled(policy = "nope", key = "#email")
        public void call(String email) {}
    }

    static class Throttled2 {

        @Throttled(policy = "api", key = "#email")
        public void one(String email) {}

        @Throttled(policy = "api")
        public void two() {}

        public void notThrottled() {}
    }
}
