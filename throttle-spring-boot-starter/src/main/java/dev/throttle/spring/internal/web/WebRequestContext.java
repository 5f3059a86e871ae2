package dev.throttle.spring.internal.web;

/**
 * What the servlet and the WebFlux request contexts are configured with: whether allowed calls get
 * the RateLimit headers, how many leading bits of an IPv6 client address {@code #ip} keeps, and
 * the safelisted client addresses, never throttled.
 */
abstract class WebRequestContext {

    final boolean writeHeaders;

    final int ipv6Prefix;

    final ClientAccess access;

    /**
     * Creates a context.
     * @param writeHeaders whether allowed calls get RateLimit headers
     * @param ipv6Prefix the leading bits of an IPv6 client address that {@code #ip} keeps (1 to 128)
     * @param access the safelisted client addresses, never throttled
     */
    WebRequestContext(boolean writeHeaders, int ipv6Prefix, ClientAccess access) {
        this.writeHeaders = writeHeaders;
        this.ipv6Prefix = ipv6Prefix;
        this.access = access;
    }
}
