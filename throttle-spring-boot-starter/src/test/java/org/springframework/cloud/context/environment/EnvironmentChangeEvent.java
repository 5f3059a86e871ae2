package org.springframework.cloud.context.environment;

import org.springframework.context.ApplicationEvent;

/**
 * A stand-in for Spring Cloud's event of the same name, which the starter recognizes by its class
 * name alone: Spring Cloud is not on the test class path.
 */
public class EnvironmentChangeEvent extends ApplicationEvent {

    private static final long serialVersionUID = 1L;

    public EnvironmentChangeEvent(Object source) {
        super(source);
    }
}
