package dev.throttle.spring.autoconfigure;

import dev.throttle.spring.ThrottleConfigurationException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.Environment;

/**
 * Applies {@code throttle.*} again when the application's environment changes: Spring Cloud's
 * {@code EnvironmentChangeEvent} (after a refresh from a config server, {@code /actuator/refresh}),
 * recognized by its class name so that Spring Cloud is never needed, nor loaded. A change with a
 * mistake changes nothing and is logged, naming each property.
 */
final class ThrottleEnvironmentChanges implements ApplicationListener<ApplicationEvent> {

    static final String ENVIRONMENT_CHANGE_EVENT =
            "org.springframework.cloud.context.environment.EnvironmentChangeEvent";

    private static final Log logger = LogFactory.getLog(ThrottleEnvironmentChanges.class);

    private final ObjectProvider<ThrottlePolicies> policies;

    private final Environment environment;

    ThrottleEnvironmentChanges(ObjectProvider<ThrottlePolicies> policies, Environment environment) {
        this.policies = policies;
        this.environment = environment;
    }

    @Override
    public void onApplicationEvent(ApplicationEvent event) {
        if (!isEnvironmentChange(event.getClass())) {
            return;
        }
        ThrottlePolicies policies = this.policies.getIfAvailable();
        if (policies == null) {
            return;
        }
        try {
            policies.refresh(this.environment);
        } catch (ThrottleConfigurationException ex) {
            logger.error("The environment changed throttle settings, but they have mistakes; every policy keeps the"
                    + " settings it had:\n - " + String.join("\n - ", ex.problems()));
        }
    }

    static boolean isEnvironmentChange(Class<?> type) {
        for (Class<?> current = type; current != null; current = current.getSuperclass()) {
            if (ENVIRONMENT_CHANGE_EVENT.equals(current.getName())) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean supportsAsyncExecution() {
        return true;
    }
}
