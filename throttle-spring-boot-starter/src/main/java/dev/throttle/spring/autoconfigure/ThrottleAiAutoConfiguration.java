package dev.throttle.spring.autoconfigure;

import dev.throttle.BoundPolicy;
import dev.throttle.ThrottleStore;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.ai.RequestKey;
import dev.throttle.spring.ai.TokenBudgetAdvisor;
import dev.throttle.spring.ai.TokenUsage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.ai.chat.client.ChatClientBuilderCustomizer;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.expression.BeanFactoryResolver;

/**
 * Spring AI: the {@link TokenBudgetAdvisor} bean {@code throttleTokenBudgetAdvisor}, which charges a
 * key's token budget ({@code throttle.ai.policy}, keyed by {@code throttle.ai.key}) from the usage the
 * model reports, and a {@code ChatClientBuilderCustomizer} that adds it to the {@code ChatClient.Builder}
 * of Spring AI's auto-configuration. Active when Spring AI 2's ChatClient is present and
 * {@code throttle.ai.policy} is set; Spring AI 1.x (the Boot 3.5 line) has no
 * {@code ChatClientBuilderCustomizer}, and gets no advisor. Everything the configuration can get wrong
 * fails startup, saying what: a policy that is not configured or cannot take a cost known after the
 * call or that settles a success (reset-on-success, count: failures), a store that does not charge
 * after the call, a key that does not parse, an estimate or weights out of range.
 */
@AutoConfiguration(
        after = ThrottleAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"
        },
        beforeName = "org.springframework.ai.model.chat.client.autoconfigure.ChatClientAutoConfiguration")
@ConditionalOnClass(
        name = {
            "org.springframework.ai.chat.client.ChatClient",
            "org.springframework.ai.chat.client.ChatClientBuilderCustomizer"
        })
@ConditionalOnBooleanProperty(name = "throttle.enabled", matchIfMissing = true)
@ConditionalOnProperty(name = "throttle.ai.policy")
public final class ThrottleAiAutoConfiguration {

    private static final String PREFIX = "throttle.ai.";

    @Bean
    @ConditionalOnMissingBean
    TokenBudgetAdvisor throttleTokenBudgetAdvisor(
            Admissions admissions,
            ThrottleProperties properties,
            BeanFactory beanFactory,
            ObjectProvider<UnreportedTokenUsage> unreported) {
        ThrottleProperties.Ai ai = properties.getAi();
        PolicyFactory.failIfItHasMistakes(properties.getPolicies(), ai.getPolicy());
        Charge charge = charge(admissions, ai);
        RequestKey key;
        try {
            key = RequestKey.parse(ai.getKey(), new BeanFactoryResolver(beanFactory));
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(PREFIX + "key: " + ex.getMessage(), ex);
        }
        int maxCost = charge.policy().maxCost();
        if (ai.getEstimate() < 1 || ai.getEstimate() > maxCost) {
            throw new ThrottleConfigurationException(PREFIX + "estimate is " + ai.getEstimate() + ", but policy '"
                    + charge.policy().name() + "' can only reserve from 1 to " + maxCost + " tokens per call");
        }
        TokenUsage usage;
        try {
            usage = (ai.getUsage() == ThrottleProperties.Ai.Usage.WEIGHTED)
                    ? TokenUsage.weighted(ai.getPromptWeight(), ai.getCompletionWeight())
                    : TokenUsage.total();
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(
                    PREFIX + "prompt-weight and " + PREFIX + "completion-weight: " + ex.getMessage(), ex);
        }
        UnreportedTokenUsage counter = unreported.getIfAvailable();
        Runnable onUnreported = (counter != null) ? counter.hook() : () -> {};
        return new TokenBudgetAdvisor(charge, key, ai.getEstimate(), usage, onUnreported, ai.getOrder());
    }

    /** The budget's policy, as configured: one that carries a debt, on a store that charges after the call. */
    private static Charge charge(Admissions admissions, ThrottleProperties.Ai ai) {
        String policy = ai.getPolicy().trim();
        Charge charge;
        try {
            charge = admissions.charge(policy);
        } catch (IllegalArgumentException ex) {
            throw new ThrottleConfigurationException(
                    PREFIX + "policy is '" + policy + "', but no such policy is configured under throttle.policies",
                    ex);
        }
        String why = BoundPolicy.whyNoActualCost(charge.policy());
        if (why != null) {
            throw new ThrottleConfigurationException(PREFIX + "policy is '" + policy
                    + "', which cannot take the tokens a model reports after the call: " + why
                    + " (a token budget is a token-bucket, gcra or fixed-window policy)");
        }
        if (charge.settlesOnSuccess()) {
            // a success would clear the key or give back the reservation after the usage was settled
            throw new ThrottleConfigurationException(PREFIX + "policy is '" + policy + "', which "
                    + (charge.resetOnSuccess() ? "resets on success" : "counts failures only")
                    + ": a token budget charges every call its tokens, so leave reset-on-success and count unset");
        }
        ThrottleStore store = admissions.throttler().store();
        if (!store.chargesAfterTheCall()) {
            throw new ThrottleConfigurationException(PREFIX + "policy is '" + policy + "', but the " + store.kind()
                    + " store does not charge a cost after the call yet: use the memory or redis store");
        }
        return charge;
    }

    @Bean
    @ConditionalOnBooleanProperty(name = "throttle.ai.add-to-builder", matchIfMissing = true)
    ChatClientBuilderCustomizer throttleTokenBudgetCustomizer(TokenBudgetAdvisor throttleTokenBudgetAdvisor) {
        return (builder) -> builder.defaultAdvisors(throttleTokenBudgetAdvisor);
    }

    /** The counter {@code throttle.ai.usage.unreported}, when the application has a MeterRegistry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnBean(MeterRegistry.class)
    static class UnreportedUsageMetrics {

        @Bean
        UnreportedTokenUsage throttleUnreportedTokenUsage(MeterRegistry registry, ThrottleProperties properties) {
            Counter counter = Counter.builder("throttle.ai.usage.unreported")
                    .description("Calls whose chat model reported no token usage, so that their estimate stands")
                    .tag("policy", properties.getAi().getPolicy().trim())
                    .register(registry);
            return new UnreportedTokenUsage(counter::increment);
        }
    }

    /** What runs each time a model reports no usage; kept free of Micrometer's types, which are optional. */
    static final class UnreportedTokenUsage {

        private final Runnable hook;

        UnreportedTokenUsage(Runnable hook) {
            this.hook = hook;
        }

        Runnable hook() {
            return this.hook;
        }
    }
}
