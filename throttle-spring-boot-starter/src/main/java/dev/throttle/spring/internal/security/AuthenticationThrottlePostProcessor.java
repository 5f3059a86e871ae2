package dev.throttle.spring.internal.security;

import dev.throttle.spring.security.AuthenticationThrottle;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.util.function.SingletonSupplier;

/**
 * Wraps every {@link ProviderManager} so that its login attempts are charged before a password is
 * checked: the managers Spring Security builds (the application's global manager and each
 * {@code HttpSecurity}'s, which its builders hand to the bean factory's post-processors) and any
 * {@code ProviderManager} bean. The throttle is looked up at the first attempt, so that this
 * post-processor makes no bean early.
 */
public final class AuthenticationThrottlePostProcessor implements BeanPostProcessor {

    private final SingletonSupplier<AuthenticationThrottle> throttle;

    /**
     * Creates the post-processor.
     * @param throttle the throttle (absent: attempts pass uncharged)
     */
    public AuthenticationThrottlePostProcessor(ObjectProvider<AuthenticationThrottle> throttle) {
        this.throttle = SingletonSupplier.of(throttle::getIfAvailable);
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof ProviderManager manager && !(bean instanceof ThrottledProviderManager)) {
            return new ThrottledProviderManager(manager, this.throttle);
        }
        return bean;
    }
}
