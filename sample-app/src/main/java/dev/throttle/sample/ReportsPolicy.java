package dev.throttle.sample;

import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;

/**
 * The {@code reports} concurrency policy of {@code GET /api/report}, on every store that runs
 * concurrency policies: the memory store and Redis, not (yet) the jdbc store, where the sample
 * starts without that endpoint. Kept out of {@code application.yml} for that reason; its numbers
 * are in {@code reports-policy.properties}, the lowest precedence of all.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnExpression(ReportsPolicy.NOT_ON_JDBC)
@PropertySource("classpath:reports-policy.properties")
class ReportsPolicy {

    /** True unless {@code throttle.store.type} is {@code jdbc}. */
    static final String NOT_ON_JDBC = "'${throttle.store.type:memory}' != 'jdbc'";
}
