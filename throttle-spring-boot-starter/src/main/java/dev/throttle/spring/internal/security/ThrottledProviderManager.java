package dev.throttle.spring.internal.security;

import dev.throttle.spring.security.AuthenticationThrottle;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.context.MessageSource;
import org.springframework.security.authentication.AuthenticationEventPublisher;
import org.springframework.security.authentication.AuthenticationProvider;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.AuthenticationException;

/**
 * A {@link ProviderManager} that charges each login attempt before handing it to the manager it
 * wraps, so before any provider loads a user or checks a password, and settles the attempt when
 * that manager returns an authenticated result (the moment it publishes its
 * {@code AuthenticationSuccessEvent}). An attempt that fails, whatever the reason, keeps its charge.
 *
 * <p>A subclass rather than a plain {@code AuthenticationManager}: Spring Security's builders cast
 * what their post-processors return to {@code ProviderManager}. Every other method is the wrapped
 * manager's.
 *
 * <p>Managers nest: the manager of an {@code HttpSecurity} delegates to the application's global
 * manager as its parent, and both are wrapped. An attempt is charged once, by the outermost: the
 * attempt being charged on this thread is remembered (only while it runs) and a nested manager that
 * is handed the same request passes it on uncharged.
 */
final class ThrottledProviderManager extends ProviderManager {

    private static final ThreadLocal<Authentication> CHARGING = new ThreadLocal<>();

    private final ProviderManager delegate;

    private final Supplier<@Nullable AuthenticationThrottle> throttle;

    ThrottledProviderManager(ProviderManager delegate, Supplier<@Nullable AuthenticationThrottle> throttle) {
        super(Collections.emptyList(), delegate);
        this.delegate = delegate;
        this.throttle = throttle;
    }

    ProviderManager delegate() {
        return this.delegate;
    }

    @Override
    public Authentication authenticate(Authentication authentication) throws AuthenticationException {
        Authentication outer = CHARGING.get();
        AuthenticationThrottle throttle = (outer != authentication) ? this.throttle.get() : null;
        // throws ThrottledException (not an AuthenticationException, so no provider or failure handler
        // sees it) when refused
        AuthenticationThrottle.Attempt attempt = (throttle != null) ? throttle.charge(authentication) : null;
        if (attempt == null) {
            return this.delegate.authenticate(authentication);
        }
        Authentication result;
        CHARGING.set(authentication);
        try {
            result = this.delegate.authenticate(authentication);
        } finally {
            if (outer != null) {
                CHARGING.set(outer);
            } else {
                CHARGING.remove();
            }
        }
        if (result != null && result.isAuthenticated()) {
            attempt.succeeded();
        }
        return result;
    }

    @Override
    public List<AuthenticationProvider> getProviders() {
        return this.delegate.getProviders();
    }

    @Override
    public void setAuthenticationEventPublisher(AuthenticationEventPublisher eventPublisher) {
        this.delegate.setAuthenticationEventPublisher(eventPublisher);
    }

    @Override
    public void setEraseCredentialsAfterAuthentication(boolean eraseSecretData) {
        this.delegate.setEraseCredentialsAfterAuthentication(eraseSecretData);
    }

    @Override
    public boolean isEraseCredentialsAfterAuthentication() {
        return this.delegate.isEraseCredentialsAfterAuthentication();
    }

    @Override
    public void setMessageSource(MessageSource messageSource) {
        this.delegate.setMessageSource(messageSource);
    }

    @Override
    public String toString() {
        return "Throttled" + this.delegate;
    }
}
