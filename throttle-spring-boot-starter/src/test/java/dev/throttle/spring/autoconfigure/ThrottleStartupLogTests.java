package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.annotation.Throttled;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * One INFO line at startup says what is in force: the store, every entry point that is on
 * (annotated methods, URL rules, Spring Security logins, the Throttler bean) and each policy by name
 * and algorithm; never a key nor a key expression.
 */
@ExtendWith(OutputCaptureExtension.class)
class ThrottleStartupLogTests {

    private static final String[] POLICIES = {
        "throttle.policies.login.algorithm=lockout",
        "throttle.policies.login.timeouts=1s,2s",
        "throttle.policies.login-ip.algorithm=token-bucket",
        "throttle.policies.login-ip.capacity=20",
        "throttle.policies.login-ip.refill-period=30s",
        "throttle.policies.api.algorithm=gcra",
        "throttle.policies.api.limit=100",
        "throttle.policies.api.period=1m"
    };

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleDisabledAutoConfiguration.class))
            .withPropertyValues(POLICIES);

    private final WebApplicationContextRunner webContextRunner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ThrottleAutoConfiguration.class,
                    ThrottleDisabledAutoConfiguration.class,
                    ThrottleWebMvcAutoConfiguration.class,
                    ThrottleSecurityAutoConfiguration.class))
            .withPropertyValues(POLICIES);

    @Test
    void oneInfoLineNamesTheStoreTheEntryPointsAndThePolicies(CapturedOutput output) {
        this.contextRunner.withBean(Accounts.class).withBean(Greetings.class).run((context) -> {
            assertThat(context).hasNotFailed();
            assertThat(throttleLines(output))
                    .singleElement()
                    .satisfies((line) -> assertThat(line)
                            .contains(" INFO ")
                            .endsWith(
                                    "Throttling with the memory store: 4 annotated methods, the Throttler bean; policies: "
                                            + "login (lockout), login-ip (token-bucket), api (gcra)"));
        });
    }

    @Test
    void outgoingClientsAreListedByName(CapturedOutput output) {
        this.contextRunner
                .withConfiguration(AutoConfigurations.of(ThrottleClientsAutoConfiguration.class))
                .withPropertyValues(
                        "throttle.clients.quotes.base-url=https://quotes.example",
                        "throttle.clients.quotes.policy=api",
                        "throttle.clients.partner.hosts=partner.example",
                        "throttle.clients.partner.policy=api")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies((line) -> assertThat(line)
                                    .contains("Throttling with the memory store: 2 outgoing clients (quotes, partner),"
                                            + " the Throttler bean;"));
                });
    }

    @Test
    void urlRulesAndSpringSecurityLoginsAreListedBesideTheAnnotatedMethods(CapturedOutput output) {
        this.webContextRunner
                .withBean(Accounts.class)
                .withPropertyValues(
                        "throttle.http.rules[0].paths=/api/**",
                        "throttle.http.rules[0].policy=api",
                        "throttle.http.rules[0].key=#ip",
                        "throttle.http.rules[1].paths=/login",
                        "throttle.http.rules[1].policy=login-ip",
                        "throttle.security.authentication.username-policy=login",
                        "throttle.security.authentication.ip-policy=login-ip")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies((line) -> assertThat(line)
                                    .endsWith("Throttling with the memory store: "
                                            + "1 annotated method, 2 URL rules, Spring Security logins (username-policy login, "
                                            + "ip-policy login-ip), the Throttler bean; policies: login (lockout), "
                                            + "login-ip (token-bucket), api (gcra)"));
                });
    }

    @Test
    void anApplicationThrottledOnlyByAUrlRuleSaysSoRatherThanZeroMethods(CapturedOutput output) {
        this.webContextRunner
                .withPropertyValues("throttle.http.rules[0].paths=/api/**", "throttle.http.rules[0].policy=api")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies((line) -> assertThat(line)
                                    .contains(
                                            "Throttling with the memory store: 1 URL rule, the Throttler bean; policies: ")
                                    .doesNotContain(" 0 ")
                                    .doesNotContain(": 0 ")
                                    .doesNotContain("Spring Security"));
                });
    }

    @Test
    void anApplicationThrottledOnlyBySpringSecurityLoginsSaysSo(CapturedOutput output) {
        this.webContextRunner
                .withPropertyValues("throttle.security.authentication.ip-policy=login-ip")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies(
                                    (line) -> assertThat(line)
                                            .contains(
                                                    "Throttling with the memory store: "
                                                            + "Spring Security logins (ip-policy login-ip), the Throttler bean; policies: "));
                });
    }

    @Test
    void emptyLoginPoliciesAreNotSaidToThrottleLoginsButWarnedOf(CapturedOutput output) {
        this.webContextRunner
                .withPropertyValues(
                        "throttle.security.authentication.username-policy=",
                        "throttle.security.authentication.ip-policy=")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies((line) -> assertThat(line).doesNotContain("Spring Security"));
                    assertThat(output)
                            .contains("throttle.security.authentication.username-policy and ip-policy are set but "
                                    + "empty: no Spring Security login is throttled");
                });
    }

    @Test
    void theLineNamesNoKeyNorKeyExpression(CapturedOutput output) {
        this.contextRunner.withBean(Accounts.class).run((context) -> {
            assertThat(context).hasNotFailed();
            assertThat(throttleLines(output))
                    .singleElement()
                    .satisfies((line) -> assertThat(line)
                            .doesNotContain("#email")
                            .doesNotContain("#ip")
                            .doesNotContain("@"));
        });
    }

    @Test
    void anApplicationWithoutOtherEntryPointsNamesTheThrottlerBeanAlone(CapturedOutput output) {
        this.contextRunner.run((context) -> assertThat(throttleLines(output))
                .singleElement()
                .satisfies((line) ->
                        assertThat(line).contains("Throttling with the memory store: the Throttler bean; policies: ")));
    }

    @Test
    void disabledThrottlingSaysSoAndWhichPoliciesWereChecked(CapturedOutput output) {
        this.contextRunner
                .withBean(Accounts.class)
                .withPropertyValues("throttle.enabled=false")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(throttleLines(output))
                            .singleElement()
                            .satisfies((line) -> assertThat(line)
                                    .contains(" INFO ")
                                    .endsWith(
                                            "Throttling is disabled (throttle.enabled=false): nothing is throttled; policies checked: "
                                                    + "login (lockout), login-ip (token-bucket), api (gcra)"));
                });
    }

    private static List<String> throttleLines(CapturedOutput output) {
        return output.getOut()
                .lines()
                .filter((line) -> line.contains("Throttling "))
                .toList();
    }

    static class Accounts {

        @Throttled(policy = "login", key = "#email")
        @Throttled(policy = "login-ip", key = "#ip")
        public String login(String email) {
            return email;
        }

        public String notThrottled(String email) {
            return email;
        }
    }

    @Throttled(policy = "api")
    static class Greetings {

        public String hello() {
            return "hello";
        }

        public String bye() {
            return "bye";
        }

        public String welcome(String name) {
            return name;
        }
    }
}
