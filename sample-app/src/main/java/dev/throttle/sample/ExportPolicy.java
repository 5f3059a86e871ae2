package dev.throttle.sample;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;

/**
 * The {@code export} policy of {@code GET /api/export}, kept out of {@code application.yml} so that
 * the sample started with a configuration file of its own (which replaces that file) still has the
 * policy its endpoint names; its numbers are in {@code export-policy.properties}, the lowest
 * precedence of all.
 */
@Configuration(proxyBeanMethods = false)
@PropertySource("classpath:export-policy.properties")
class ExportPolicy {}
