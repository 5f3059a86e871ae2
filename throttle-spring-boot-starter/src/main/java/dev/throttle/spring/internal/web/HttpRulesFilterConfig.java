package dev.throttle.spring.internal.web;

import java.util.List;
import java.util.function.Supplier;

/**
 * What a filter of URL rules and of the blocklist is configured with, the same for the servlet
 * filter and the WebFlux one.
 *
 * @param <C> the CORS configuration source of the web stack (servlet or reactive)
 * @param rules the rules
 * @param access the safelist and blocklist
 * @param writeHeaders whether responses get the rate-limit headers
 * @param ipv6Prefix the bits of an IPv6 address that {@code #ip} keeps
 * @param corsSources the application's CORS configuration, found on first use, for refused
 * cross-origin requests
 * @param order the filter's order
 */
public record HttpRulesFilterConfig<C>(
        HttpRules rules,
        ClientAccess access,
        boolean writeHeaders,
        int ipv6Prefix,
        Supplier<List<C>> corsSources,
        int order) {}
