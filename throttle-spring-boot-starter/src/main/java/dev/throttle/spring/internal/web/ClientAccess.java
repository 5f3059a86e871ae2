package dev.throttle.spring.internal.web;

import dev.throttle.spring.ThrottleConfigurationException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The client addresses that are never throttled ({@code throttle.http.safelist}) and those refused
 * on every request ({@code throttle.http.blocklist}), as CIDRs: {@code 10.0.0.0/8},
 * {@code 2001:db8::/32}, or a single address ({@code 127.0.0.1}, {@code ::1}). IPv4 and IPv6 are
 * compared as one 128-bit space (an IPv4 address as its IPv4-mapped form), so an IPv4 CIDR also
 * matches a client seen as {@code ::ffff:10.1.2.3} on a dual-stack socket. Address text is parsed
 * as a literal and never looked up in DNS; text that is no address literal matches nothing.
 * Immutable and thread-safe; parsed once at startup.
 */
public final class ClientAccess {

    private static final Cidr[] NONE = new Cidr[0];

    private final Cidr[] safelist;

    private final Cidr[] blocklist;

    /**
     * Parses the lists.
     * @param safelist the CIDRs never throttled, as configured under {@code throttle.http.safelist}
     * @param blocklist the CIDRs always refused, as configured under {@code throttle.http.blocklist}
     * @throws ThrottleConfigurationException naming each entry that is no CIDR
     */
    public ClientAccess(List<String> safelist, List<String> blocklist) {
        List<String> problems = new ArrayList<>();
        this.safelist = parse("throttle.http.safelist", safelist, problems);
        this.blocklist = parse("throttle.http.blocklist", blocklist, problems);
        if (!problems.isEmpty()) {
            throw new ThrottleConfigurationException(problems);
        }
    }

    /**
     * Returns an access list that safelists and blocks nobody.
     * @return the empty access list
     */
    public static ClientAccess none() {
        return new ClientAccess(List.of(), List.of());
    }

    /**
     * Whether an address is never throttled.
     * @param ip the client address as the container reports it ({@code getRemoteAddr()})
     * @return whether it is in a safelisted CIDR
     */
    public boolean isSafelisted(String ip) {
        return this.safelist.length > 0 && contains(this.safelist, ClientAddresses.bits(ip));
    }

    /**
     * Whether an address is refused on every request.
     * @param ip the client address as the container reports it ({@code getRemoteAddr()})
     * @return whether it is in a blocklisted CIDR
     */
    public boolean isBlocked(String ip) {
        return this.blocklist.length > 0 && contains(this.blocklist, ClientAddresses.bits(ip));
    }

    /**
     * Whether an address is never throttled.
     * @param ip the client address, or null
     * @return whether it is in a safelisted CIDR
     */
    public boolean isSafelisted(InetAddress ip) {
        return this.safelist.length > 0 && ip != null && contains(this.safelist, bits(ip));
    }

    /**
     * Whether an address is refused on every request.
     * @param ip the client address, or null
     * @return whether it is in a blocklisted CIDR
     */
    public boolean isBlocked(InetAddress ip) {
        return this.blocklist.length > 0 && ip != null && contains(this.blocklist, bits(ip));
    }

    /**
     * Whether a client's socket address, as WebFlux reports it, is never throttled.
     * @param remote the address, resolved or not, or null
     * @return whether it is in a safelisted CIDR
     */
    public boolean isSafelisted(InetSocketAddress remote) {
        return contains(this.safelist, remote);
    }

    /**
     * Whether a client's socket address, as WebFlux reports it, is refused on every request.
     * @param remote the address, resolved or not, or null
     * @return whether it is in a blocklisted CIDR
     */
    public boolean isBlocked(InetSocketAddress remote) {
        return contains(this.blocklist, remote);
    }

    /**
     * Whether any address is safelisted or blocked at all.
     * @return false when both lists are empty
     */
    public boolean isEmpty() {
        return this.safelist.length == 0 && this.blocklist.length == 0;
    }

    private static boolean contains(Cidr[] cidrs, long[] bits) {
        if (bits == null) {
            return false;
        }
        for (Cidr cidr : cidrs) {
            if (cidr.contains(bits[0], bits[1])) {
                return true;
            }
        }
        return false;
    }

    private static boolean contains(Cidr[] cidrs, InetSocketAddress remote) {
        if (cidrs.length == 0 || remote == null) {
            return false;
        }
        // an unresolved address (as a forwarded header may give) is parsed as text, never looked up
        return contains(
                cidrs,
                (remote.getAddress() != null)
                        ? bits(remote.getAddress())
                        : ClientAddresses.bits(remote.getHostString()));
    }

    private static long[] bits(InetAddress address) {
        byte[] bytes = address.getAddress();
        if (bytes.length == 4) {
            long ipv4 = ((bytes[0] & 0xffL) << 24)
                    | ((bytes[1] & 0xffL) << 16)
                    | ((bytes[2] & 0xffL) << 8)
                    | (bytes[3] & 0xffL);
            return new long[] {0, 0xffff_0000_0000L | ipv4};
        }
        long high = 0;
        long low = 0;
        for (int i = 0; i < 8; i++) {
            high = (high << 8) | (bytes[i] & 0xff);
            low = (low << 8) | (bytes[i + 8] & 0xff);
        }
        return new long[] {high, low};
    }

    private static Cidr[] parse(String property, List<String> entries, List<String> problems) {
        if (entries == null || entries.isEmpty()) {
            return NONE;
        }
        List<Cidr> cidrs = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            String entry = (entries.get(i) != null) ? entries.get(i).trim() : "";
            Cidr cidr = Cidr.parse(entry);
            if (cidr == null) {
                problems.add(property + "[" + i + "] '" + entry + "' is not a CIDR: write an IPv4 or IPv6 address, "
                        + "optionally with a prefix length (10.0.0.0/8, 2001:db8::/32, 127.0.0.1)");
            } else {
                cidrs.add(cidr);
            }
        }
        return cidrs.toArray(NONE);
    }

    /** A network: the address bits under the mask. */
    private record Cidr(long high, long low, long maskHigh, long maskLow) {

        static Cidr parse(String text) {
            int slash = text.indexOf('/');
            String address = (slash < 0) ? text : text.substring(0, slash);
            if (address.startsWith("[") || address.indexOf('%') >= 0) {
                return null;
            }
            long[] bits = ClientAddresses.bits(address);
            if (bits == null) {
                return null;
            }
            boolean ipv4 = address.indexOf(':') < 0;
            int prefix;
            if (slash < 0) {
                prefix = 128;
            } else {
                String length = text.substring(slash + 1);
                if (length.isEmpty() || length.length() > 3 || !length.chars().allMatch(Character::isDigit)) {
                    return null;
                }
                prefix = Integer.parseInt(length);
                if (prefix > (ipv4 ? 32 : 128)) {
                    return null;
                }
                prefix += ipv4 ? 96 : 0;
            }
            long maskHigh = (prefix >= 64) ? -1L : (prefix == 0) ? 0 : -1L << (64 - prefix);
            long maskLow = (prefix >= 128) ? -1L : (prefix <= 64) ? 0 : -1L << (128 - prefix);
            // host bits written after the network (10.1.2.3/8) are ignored: the network is meant
            return new Cidr(bits[0] & maskHigh, bits[1] & maskLow, maskHigh, maskLow);
        }

        boolean contains(long otherHigh, long otherLow) {
            return (otherHigh & this.maskHigh) == this.high && (otherLow & this.maskLow) == this.low;
        }
    }
}
