package dev.throttle.spring.autoconfigure;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Whether a property that holds entries ({@code throttle.clients.<name>}, {@code throttle.bans.<name>},
 * {@code throttle.http.rules[i]}) has at least one, for a bean that has nothing to do without them. A
 * property that does not bind matches: the bean is made, and the binding of {@link ThrottleProperties}
 * reports the mistake as it does for every property.
 */
abstract class OnEntriesConfigured extends SpringBootCondition {

    private final Map<String, Bindable<?>> properties = new LinkedHashMap<>();

    /** A map of named entries under {@code prefix}. */
    OnEntriesConfigured(String prefix) {
        this.properties.put(prefix, Bindable.mapOf(String.class, Object.class));
    }

    /** Any of the given properties, each a map or a list. */
    OnEntriesConfigured(Map<String, Bindable<?>> properties) {
        this.properties.putAll(properties);
    }

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Binder binder = Binder.get(context.getEnvironment());
        for (Map.Entry<String, Bindable<?>> property : this.properties.entrySet()) {
            Object bound;
            try {
                bound = binder.bind(property.getKey(), property.getValue()).orElse(null);
            } catch (BindException ex) {
                return ConditionOutcome.match(property.getKey() + " is set (and does not bind)");
            }
            if ((bound instanceof Map<?, ?> map && !map.isEmpty())
                    || (bound instanceof Collection<?> entries && !entries.isEmpty())) {
                return ConditionOutcome.match(property.getKey() + " is configured");
            }
        }
        return ConditionOutcome.noMatch("no " + String.join(" or ", this.properties.keySet()));
    }
}
