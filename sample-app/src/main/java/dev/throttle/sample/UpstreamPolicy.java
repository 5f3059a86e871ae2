package dev.throttle.sample;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;

/**
 * The outgoing client {@code quotes} of {@code GET /api/quote}, its {@code upstream} policy and the
 * {@code quote-source} policy of the stand-in API, kept out of {@code application.yml} so that the
 * sample started with a configuration file of its own still has them; their numbers are in
 * {@code upstream-policy.properties}, the lowest precedence of all.
 */
@Configuration(proxyBeanMethods = false)
@PropertySource("classpath:upstream-policy.properties")
class UpstreamPolicy {}
