package dev.throttle.sample;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;

/**
 * The {@code reports} concurrency policy of {@code GET /api/report}, kept out of
 * {@code application.yml} so that the sample started with a configuration file of its own (which
 * replaces that file) still has the policy its endpoint names; its numbers are in
 * {@code reports-policy.properties}, the lowest precedence of all.
 */
@Configuration(proxyBeanMethods = false)
@PropertySource("classpath:reports-policy.properties")
class ReportsPolicy {}
