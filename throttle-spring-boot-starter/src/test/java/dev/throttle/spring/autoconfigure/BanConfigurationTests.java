package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.bans.BanRule;
import dev.throttle.spring.bans.Bans;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

/**
 * {@code throttle.bans}: read once at startup, every mistake of every ban reported at once, each
 * naming its property, as a {@link ThrottleConfigurationException}.
 */
class BanConfigurationTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.api.algorithm=gcra",
                    "throttle.policies.api.limit=3",
                    "throttle.policies.api.period=1m",
                    "throttle.policies.login-ip.algorithm=gcra",
                    "throttle.policies.login-ip.limit=3",
                    "throttle.policies.login-ip.period=1m");

    @Test
    void aBanWithItsDefaultsCountsEveryPolicyByAddressAndAnswers429() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.bans.abuse.after=10", "throttle.bans.abuse.within=1m", "throttle.bans.abuse.for=10m")
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(Bans.class).rules())
                            .containsEntry(
                                    "abuse",
                                    new BanRule(
                                            "abuse", 10, Duration.ofMinutes(1), Set.of(), Duration.ofMinutes(10), 429));
                });
    }

    @Test
    void theBanFilterIsRegisteredOnlyWhenABanIsConfigured() {
        WebApplicationContextRunner servlet = new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .withPropertyValues(
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=1m");
        // no registration at all, rather than one disabled (which Boot logs at every start)
        servlet.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean("throttleBanFilter"));
        servlet.withPropertyValues(
                        "throttle.bans.abuse.after=10", "throttle.bans.abuse.within=1m", "throttle.bans.abuse.for=10m")
                .run((context) -> {
                    FilterRegistrationBean<?> registration =
                            context.getBean("throttleBanFilter", FilterRegistrationBean.class);
                    assertThat(registration.isEnabled()).isTrue();
                    assertThat(registration.getOrder()).isEqualTo(-111);
                });
    }

    @Test
    void withoutBansNothingIsCounted() {
        this.contextRunner.run(
                (context) -> assertThat(context.getBean(Bans.class).isEmpty()).isTrue());
    }

    @Test
    void aMissingAfterWithinAndForAreEachNamed() {
        this.contextRunner
                .withPropertyValues("throttle.bans.abuse.policies=api")
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactlyInAnyOrder(
                                "throttle.bans.abuse.after is required: the refusals that start the ban",
                                "throttle.bans.abuse.within is required: the window in which refusals are counted",
                                "throttle.bans.abuse.for is required: how long the ban lasts"));
    }

    @Test
    void anAfterBelowOneIsNamed() {
        this.contextRunner
                .withPropertyValues(valid("after=0"))
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly("throttle.bans.abuse.after must be at least 1, was 0"));
    }

    @Test
    void aWindowOrALengthThatIsNotPositiveIsNamed() {
        this.contextRunner
                .withPropertyValues("throttle.bans.abuse.after=3", "throttle.bans.abuse.within=0s")
                .withPropertyValues("throttle.bans.abuse.for=-1m")
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactlyInAnyOrder(
                                "throttle.bans.abuse.within must be positive, was PT0S",
                                "throttle.bans.abuse.for must be positive, was PT-1M"));
    }

    @Test
    void aPolicyThatIsNotConfiguredIsNamed() {
        this.contextRunner
                .withPropertyValues(valid("policies=api,login"))
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly("throttle.bans.abuse.policies names policy 'login', which is not configured "
                                + "(configured: api, login-ip)"));
    }

    @Test
    void aKeyThatIsNoExpressionIsNamed() {
        this.contextRunner
                .withPropertyValues(valid("key=#headers['X-Api-Key'"))
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                        .startsWith("throttle.bans.abuse.key is not a valid SpEL expression"));
    }

    @Test
    void aKeyNamingAVariableNoRequestHasIsNamedForItWouldBanNoOne() {
        for (String key : new String[] {"#IP", "#principal", "#path['id']"}) {
            this.contextRunner
                    .withPropertyValues(valid("key=" + key))
                    .run((context) -> assertThat(failure(context).problems())
                            .as(key)
                            .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                            .startsWith("throttle.bans.abuse.key '" + key + "' names #")
                            .contains("which a ban's key does not have, so it would ban no one"));
        }
        this.contextRunner
                .withPropertyValues(valid("key=#headers['X-Api-Key'] ?: #ip"))
                .run((context) -> assertThat(context).hasNotFailed());
    }

    @Test
    void aKeyWrittenWithoutItsHashIsNamedForItWouldBanNoOne() {
        this.contextRunner
                .withPropertyValues(valid("key=headers['X-Api-Key']"))
                .run((context) -> assertThat(failure(context).problems())
                        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                        .isEqualTo(
                                "throttle.bans.abuse.key 'headers['X-Api-Key']' reads 'headers' from the root object, "
                                        + "which a ban's key does not have, so it would ban no one: a variable is written with # "
                                        + "(#ip, #request, #headers['Name'] or #params['name'])"));
    }

    @Test
    void anEmptyKeyIsNamed() {
        this.contextRunner
                .withPropertyValues(valid("key= "))
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly("throttle.bans.abuse.key must not be empty: a SpEL expression over the "
                                + "request, such as #ip"));
    }

    @Test
    void aStatusOtherThan429Or403IsNamed() {
        this.contextRunner
                .withPropertyValues(valid("status=503"))
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly("throttle.bans.abuse.status must be 429 or 403, was 503"));
    }

    @Test
    void status403IsTaken() {
        this.contextRunner
                .withPropertyValues(valid("status=403"))
                .run((context) -> assertThat(
                                context.getBean(Bans.class).rules().get("abuse").status())
                        .isEqualTo(403));
    }

    @Test
    void aNameTheCounterCannotTakeIsNamed() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.bans[a.b].after=3", "throttle.bans[a.b].within=1m", "throttle.bans[a.b].for=1m")
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly(
                                "throttle.bans.a.b: a ban's name must be 1 to 60 letters, digits, '_' or '-'"));
    }

    @Test
    void aBanWhoseCounterWouldShareAPolicysNameIsNamed() {
        this.contextRunner
                .withPropertyValues(valid("after=3"))
                .withPropertyValues(
                        "throttle.policies[ban.abuse].algorithm=gcra",
                        "throttle.policies[ban.abuse].limit=3",
                        "throttle.policies[ban.abuse].period=1m")
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactly("throttle.bans.abuse: its refusals are counted under the policy name "
                                + "'ban.abuse', which throttle.policies already uses: rename the ban or the policy"));
    }

    @Test
    void everyMistakeOfEveryBanIsReportedAtOnce() {
        this.contextRunner
                .withPropertyValues(valid("status=200"))
                .withPropertyValues("throttle.bans.other.after=0", "throttle.bans.other.within=1m")
                .withPropertyValues("throttle.bans.other.for=1m")
                .run((context) -> assertThat(failure(context).problems())
                        .containsExactlyInAnyOrder(
                                "throttle.bans.abuse.status must be 429 or 403, was 200",
                                "throttle.bans.other.after must be at least 1, was 0"));
    }

    private static String[] valid(String setting) {
        return new String[] {
            "throttle.bans.abuse.after=3",
            "throttle.bans.abuse.within=1m",
            "throttle.bans.abuse.for=10m",
            "throttle.bans.abuse.policies=api",
            "throttle.bans.abuse." + setting
        };
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
}
