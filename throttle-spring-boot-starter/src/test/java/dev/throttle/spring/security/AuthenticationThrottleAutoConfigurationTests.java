package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleProperties;
import dev.throttle.spring.autoconfigure.ThrottleSecurityAutoConfiguration;
import dev.throttle.spring.internal.security.AuthenticationRefusalFilter;
import dev.throttle.spring.internal.security.AuthenticationThrottlePostProcessor;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.authentication.AuthenticationProvider;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.Authentication;

/**
 * When {@code throttle.security.authentication} is configured, what backs off, and what any
 * {@code ProviderManager} bean does with it.
 */
class AuthenticationThrottleAutoConfigurationTests {

    private final WebApplicationContextRunner contextRunner = new WebApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleSecurityAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1m",
                    "throttle.policies.login.reset-on-success=true",
                    "throttle.policies.login-ip.algorithm=token-bucket",
                    "throttle.policies.login-ip.capacity=20",
                    "throttle.policies.login-ip.refill-period=30s");

    @Test
    void withoutEitherPropertyNoLoginIsThrottledButARefusalInsideSpringSecurityIsStillAnswered() {
        this.contextRunner.run((context) -> assertThat(context)
                .hasNotFailed()
                .doesNotHaveBean(AuthenticationThrottle.class)
                .doesNotHaveBean(AuthenticationThrottlePostProcessor.class)
                .hasSingleBean(AuthenticationRefusalFilter.class));
    }

    @Test
    void eitherPropertyAloneConfiguresTheThrottle() {
        for (String property : List.of("username-policy=login", "ip-policy=login-ip")) {
            this.contextRunner
                    .withPropertyValues("throttle.security.authentication." + property)
                    .run((context) -> assertThat(context)
                            .hasNotFailed()
                            .hasSingleBean(AuthenticationThrottle.class)
                            .hasSingleBean(AuthenticationThrottlePostProcessor.class)
                            .hasSingleBean(AuthenticationRefusalFilter.class));
        }
    }

    @Test
    void theRefusalFilterSitsJustBeforeSpringSecuritysWhereverThatIs() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.username-policy=login")
                .run((context) -> assertThat(context.getBean(AuthenticationRefusalFilter.class)
                                .getOrder())
                        .isEqualTo(-101));
        this.contextRunner
                .withPropertyValues(
                        "throttle.security.authentication.username-policy=login", "spring.security.filter.order=10")
                .run((context) -> assertThat(context.getBean(AuthenticationRefusalFilter.class)
                                .getOrder())
                        .isEqualTo(9));
    }

    @Test
    void backsOffForAThrottleOfTheApplicationsOwnAndUsesIt() {
        this.contextRunner
                .withUserConfiguration(OwnThrottle.class, Managers.class)
                .run((context) -> {
                    assertThat(context).hasNotFailed().hasSingleBean(AuthenticationThrottle.class);
                    assertThat(context.getBean(AuthenticationThrottle.class))
                            .isInstanceOf(OwnThrottle.ByEmailDomain.class);
                    ProviderManager manager = context.getBean("child", ProviderManager.class);
                    assertThatExceptionOfType(BadCredentialsException.class)
                            .isThrownBy(() -> manager.authenticate(attempt("alice@example.com", "wrong")));
                    assertThatExceptionOfType(ThrottledException.class)
                            .as("keyed by the e-mail's domain, as the application's own throttle says")
                            .isThrownBy(() -> manager.authenticate(attempt("bob@example.com", "wrong")));
                });
    }

    @Test
    void aPolicyThatIsNotConfiguredFailsStartupNamingTheProperty() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.ip-policy=logins-ip")
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("throttle.security.authentication.ip-policy names policy 'logins-ip'")
                        .hasMessageContaining("login, login-ip"));
    }

    @Test
    void backsOffWithoutSpringSecurity() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.username-policy=login")
                .withClassLoader(new FilteredClassLoader(ProviderManager.class))
                .run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(AuthenticationThrottle.class));
    }

    @Test
    void backsOffWhenThrottlingIsOff() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.username-policy=login", "throttle.enabled=false")
                .run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(AuthenticationThrottle.class));
    }

    @Test
    void backsOffOutsideAServletApplication() {
        new ApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleSecurityAutoConfiguration.class))
                .withPropertyValues(
                        "throttle.policies.login.algorithm=lockout",
                        "throttle.policies.login.timeouts=1m",
                        "throttle.security.authentication.username-policy=login")
                .run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(AuthenticationThrottle.class));
    }

    @Test
    void aProviderManagerBeanChargesEachAttemptOnceEvenWhenItsParentIsWrappedToo() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.security.authentication.username-policy=login",
                        "throttle.security.authentication.ip-policy=login-ip")
                .withUserConfiguration(Managers.class)
                .run((context) -> {
                    ProviderManager child = context.getBean("child", ProviderManager.class);
                    assertThat(child.getClass().getSimpleName()).isEqualTo("ThrottledProviderManager");
                    assertThatExceptionOfType(BadCredentialsException.class)
                            .as("charged once: a second charge of the same attempt would have been refused")
                            .isThrownBy(() -> child.authenticate(attempt("Alice@example.com", "wrong")));
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> child.authenticate(attempt("alice@example.com ", "right")))
                            .satisfies((refused) ->
                                    assertThat(refused.getPolicy().name()).isEqualTo("login"));
                    Managers managers = context.getBean(Managers.class);
                    assertThat(managers.checked).as("passwords checked").isEqualTo(1);
                });
    }

    @Test
    void aSuccessResetsAResetOnSuccessPolicy() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.username-policy=login")
                .withUserConfiguration(Managers.class)
                .run((context) -> {
                    ProviderManager manager = context.getBean("parent", ProviderManager.class);
                    assertThat(manager.authenticate(attempt("alice@example.com", "right"))
                                    .isAuthenticated())
                            .isTrue();
                    assertThat(manager.authenticate(attempt("alice@example.com", "right"))
                                    .isAuthenticated())
                            .as("reset on success: no wait after a success")
                            .isTrue();
                    assertThatExceptionOfType(BadCredentialsException.class)
                            .isThrownBy(() -> manager.authenticate(attempt("alice@example.com", "wrong")));
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> manager.authenticate(attempt("alice@example.com", "right")));
                });
    }

    @Test
    void aPolicyInShadowModeRefusesNoAttempt() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.security.authentication.username-policy=login", "throttle.policies.login.mode=shadow")
                .withUserConfiguration(Managers.class)
                .run((context) -> {
                    ProviderManager manager = context.getBean("parent", ProviderManager.class);
                    for (int i = 0; i < 3; i++) {
                        assertThatExceptionOfType(BadCredentialsException.class)
                                .isThrownBy(() -> manager.authenticate(attempt("alice@example.com", "wrong")));
                    }
                    assertThat(manager.authenticate(attempt("alice@example.com", "right"))
                                    .isAuthenticated())
                            .isTrue();
                });
    }

    @Test
    void anAttemptThatIsNoUsernameAndPasswordIsNotCharged() {
        this.contextRunner
                .withPropertyValues("throttle.security.authentication.username-policy=login")
                .withUserConfiguration(Managers.class)
                .run((context) -> {
                    ProviderManager manager = context.getBean("parent", ProviderManager.class);
                    Authentication authenticated =
                            UsernamePasswordAuthenticationToken.authenticated("alice@example.com", "right", List.of());
                    for (int i = 0; i < 3; i++) {
                        manager.authenticate(authenticated);
                    }
                });
    }

    @Test
    void bothPropertiesCompleteInAnIdeWithADescription() throws Exception {
        String metadata;
        try (java.io.InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            metadata = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        for (String name : List.of(
                "throttle.security.authentication.username-policy", "throttle.security.authentication.ip-policy")) {
            assertThat(metadata)
                    .as(name)
                    .containsPattern("\\{[^{}]*\"name\": \"" + java.util.regex.Pattern.quote(name)
                            + "\"[^{}]*\"description\": \"Policy that throttles login attempts per [^\"]+\"");
        }
    }

    private static Authentication attempt(String username, String password) {
        return UsernamePasswordAuthenticationToken.unauthenticated(username, password);
    }

    @Configuration(proxyBeanMethods = false)
    static class Managers {

        int checked;

        @Bean
        ProviderManager parent() {
            AuthenticationProvider passwords = new AuthenticationProvider() {

                @Override
                public Authentication authenticate(Authentication authentication) {
                    Managers.this.checked++;
                    if (!"right".equals(authentication.getCredentials())) {
                        throw new BadCredentialsException("Bad credentials");
                    }
                    return UsernamePasswordAuthenticationToken.authenticated(authentication.getName(), null, List.of());
                }

                @Override
                public boolean supports(Class<?> authentication) {
                    return true;
                }
            };
            return new ProviderManager(passwords);
        }

        @Bean
        ProviderManager child(ProviderManager parent) {
            return new ProviderManager(List.of(), parent);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnThrottle {

        @Bean
        AuthenticationThrottle authenticationThrottle(Throttler throttler, ThrottleProperties properties) {
            properties.getSecurity().getAuthentication().setUsernamePolicy("login");
            return new ByEmailDomain(throttler, properties);
        }

        static final class ByEmailDomain extends AuthenticationThrottle {

            ByEmailDomain(Throttler throttler, ThrottleProperties properties) {
                super(throttler, properties);
            }

            @Override
            protected String username(Authentication attempt) {
                String name = super.username(attempt);
                return (name != null) ? name.substring(name.indexOf('@') + 1) : null;
            }
        }
    }
}
