package dev.throttle.spring.internal.web;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Turns a client address into its {@code #ip} key: an IPv4 address as it is; an IPv6 address as
 * the network of its first {@code prefix} bits ({@code 2001:db8:1:2::} for /64), because one home
 * line or one cloud host gets a whole /64 and would otherwise have a fresh bucket per address; an
 * IPv4-mapped IPv6 address ({@code ::ffff:192.0.2.1}) as the IPv4 address it maps. The key is
 * written as RFC 5952 text, without the prefix length, so that it fits in a URL path segment
 * (the actuator's peek and unlock). Parses literal addresses only and never asks DNS: anything
 * that is not an address literal (a host name a proxy sent) is its own key. Thread-safe.
 */
final class ClientAddresses {

    private ClientAddresses() {}

    /**
     * Returns the key of a client address given as text, as the servlet container reports it.
     * @param address the address (IPv4 or IPv6 literal, optionally in brackets or with a zone)
     * @param ipv6Prefix the bits of an IPv6 address that make its key, 1 to 128
     * @return the key, or null for a null address
     */
    static String key(String address, int ipv6Prefix) {
        if (address == null || address.indexOf(':') < 0) {
            // IPv4, or not an address literal: as it is (the common path allocates nothing)
            return address;
        }
        long[] bits = parseIpv6(address);
        return (bits != null) ? format(bits[0], bits[1], ipv6Prefix) : address;
    }

    /**
     * Returns the key of a resolved client address, as WebFlux reports it.
     * @param address the address
     * @param ipv6Prefix the bits of an IPv6 address that make its key, 1 to 128
     * @return the key, or null for a null address
     */
    static String key(InetAddress address, int ipv6Prefix) {
        if (address == null) {
            return null;
        }
        if (address instanceof Inet4Address) {
            return address.getHostAddress();
        }
        byte[] bytes = address.getAddress();
        return format(toLong(bytes, 0), toLong(bytes, 8), ipv6Prefix);
    }

    /**
     * Returns the key of a client's socket address, as WebFlux reports it.
     * @param remote the address, resolved or not
     * @param ipv6Prefix the bits of an IPv6 address that make its key, 1 to 128
     * @return the key, or null for a null address
     */
    static String key(InetSocketAddress remote, int ipv6Prefix) {
        if (remote == null) {
            return null;
        }
        // an unresolved address (as a forwarded header may give) is parsed as text, never looked up
        return (remote.getAddress() != null)
                ? key(remote.getAddress(), ipv6Prefix)
                : key(remote.getHostString(), ipv6Prefix);
    }

    /**
     * Returns the key of an address an operator typed (the actuator's bans): any literal spelling of
     * an address ({@code 0:0:0:0:0:0:0:1}, {@code ::ffff:192.0.2.1}, {@code 127.000.000.001}, an
     * IPv6 address inside its network) gives the key that address's requests get, so that a ban
     * pasted from an access log holds; other text is its own key.
     * @param text the key as typed
     * @param ipv6Prefix the bits of an IPv6 address that make its key, 1 to 128
     * @return the key
     */
    static String canonical(String text, int ipv6Prefix) {
        long[] bits = bits(withoutPort(text.trim()));
        return (bits != null) ? format(bits[0], bits[1], ipv6Prefix) : text;
    }

    /** An address as access logs write it with its port ({@code 203.0.113.9:8080}, {@code [2001:db8::1]:443}), without it. */
    private static String withoutPort(String text) {
        int colon = text.lastIndexOf(':');
        if (colon < 0
                || colon == text.length() - 1
                || !text.substring(colon + 1).chars().allMatch(Character::isDigit)) {
            return text;
        }
        if (text.startsWith("[") && text.charAt(colon - 1) == ']') {
            return text.substring(1, colon - 1);
        }
        // one colon: IPv4 and a port (an IPv6 address has two or more)
        return (text.indexOf(':') == colon) ? text.substring(0, colon) : text;
    }

    /**
     * Parses an address literal into its 128 bits, an IPv4 address as its IPv4-mapped IPv6 form
     * ({@code ::ffff:192.0.2.1}), so that one comparison serves both families. Never asks DNS.
     * @param address the address (IPv4 or IPv6 literal, optionally in brackets or with a zone)
     * @return the high and low 64 bits, or null when the text is not an address literal
     */
    static long[] bits(String address) {
        if (address == null || address.isEmpty()) {
            return null;
        }
        if (address.indexOf(':') < 0) {
            long ipv4 = parseIpv4(address, 0, address.length());
            return (ipv4 < 0) ? null : new long[] {0, 0xffff_0000_0000L | ipv4};
        }
        return parseIpv6(address);
    }

    private static String format(long high, long low, int prefix) {
        if (high == 0 && (low >>> 32) == 0xffffL) {
            // IPv4-mapped: the IPv4 client behind a dual-stack socket
            return ((low >>> 24) & 0xff) + "." + ((low >>> 16) & 0xff) + "." + ((low >>> 8) & 0xff) + "."
                    + (low & 0xff);
        }
        long maskedHigh = (prefix >= 64) ? high : high & (-1L << (64 - prefix));
        long maskedLow = (prefix >= 128) ? low : (prefix <= 64) ? 0 : low & (-1L << (128 - prefix));
        int[] groups = new int[8];
        for (int i = 0; i < 4; i++) {
            groups[i] = (int) ((maskedHigh >>> (48 - 16 * i)) & 0xffff);
            groups[i + 4] = (int) ((maskedLow >>> (48 - 16 * i)) & 0xffff);
        }
        // RFC 5952: the longest run of two or more zero groups (the first of equal runs) becomes "::"
        int bestStart = -1;
        int bestLength = 1;
        for (int i = 0; i < 8; ) {
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = (j > i) ? j : i + 1;
        }
        StringBuilder text = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                text.append("::");
                i += bestLength - 1;
                continue;
            }
            if (text.length() > 0 && text.charAt(text.length() - 1) != ':') {
                text.append(':');
            }
            text.append(Integer.toHexString(groups[i]));
        }
        return text.toString();
    }

    /**
     * Parses IPv6 text ({@code 2001:db8::1}, {@code ::ffff:192.0.2.1}, {@code [fe80::1%eth0]}).
     * @return the high and low 64 bits, or null when the text is not an IPv6 literal
     */
    private static long[] parseIpv6(String text) {
        int start = 0;
        int end = text.length();
        if (end > 1 && text.charAt(0) == '[' && text.charAt(end - 1) == ']') {
            start = 1;
            end--;
        }
        int zone = text.indexOf('%', start);
        if (zone >= 0 && zone < end) {
            end = zone;
        }
        int[] groups = new int[8];
        int count = 0;
        int gap = -1;
        int i = start;
        if (text.startsWith("::", i)) {
            gap = 0;
            i += 2;
        }
        while (i < end) {
            int colon = text.indexOf(':', i);
            int groupEnd = (colon < 0 || colon > end) ? end : colon;
            int dot = text.indexOf('.', i);
            if (groupEnd == end && dot >= 0 && dot < end) {
                // a trailing dotted IPv4 part (::ffff:192.0.2.1): two groups
                long ipv4 = parseIpv4(text, i, end);
                if (ipv4 < 0 || count > 6) {
                    return null;
                }
                groups[count++] = (int) (ipv4 >>> 16);
                groups[count++] = (int) (ipv4 & 0xffff);
                break;
            }
            int length = groupEnd - i;
            if (length < 1 || length > 4 || count == 8) {
                return null;
            }
            int group = 0;
            for (int k = i; k < groupEnd; k++) {
                int digit = Character.digit(text.charAt(k), 16);
                if (digit < 0) {
                    return null;
                }
                group = (group << 4) | digit;
            }
            groups[count++] = group;
            if (groupEnd == end) {
                i = end;
            } else if (text.startsWith("::", groupEnd)) {
                if (gap >= 0) {
                    return null;
                }
                gap = count;
                i = groupEnd + 2;
            } else {
                i = groupEnd + 1;
                if (i == end) {
                    return null;
                }
            }
        }
        if (gap < 0 ? count != 8 : count > 7) {
            return null;
        }
        int[] full = new int[8];
        if (gap < 0) {
            full = groups;
        } else {
            System.arraycopy(groups, 0, full, 0, gap);
            System.arraycopy(groups, gap, full, 8 - (count - gap), count - gap);
        }
        long high = 0;
        long low = 0;
        for (int k = 0; k < 4; k++) {
            high = (high << 16) | full[k];
            low = (low << 16) | full[k + 4];
        }
        return new long[] {high, low};
    }

    /** Parses a dotted IPv4 address: its 32 bits, or -1 when the text is none. */
    private static long parseIpv4(String text, int start, int end) {
        long value = 0;
        int parts = 0;
        int part = -1;
        for (int k = start; k <= end; k++) {
            char c = (k < end) ? text.charAt(k) : '.';
            if (c == '.') {
                if (part < 0 || ++parts > 4) {
                    return -1;
                }
                value = (value << 8) | part;
                part = -1;
            } else if (c >= '0' && c <= '9') {
                part = ((part < 0) ? 0 : part * 10) + (c - '0');
                if (part > 255) {
                    return -1;
                }
            } else {
                return -1;
            }
        }
        return (parts == 4) ? value : -1;
    }

    private static long toLong(byte[] bytes, int offset) {
        long value = 0;
        for (int i = offset; i < offset + 8; i++) {
            value = (value << 8) | (bytes[i] & 0xff);
        }
        return value;
    }
}
