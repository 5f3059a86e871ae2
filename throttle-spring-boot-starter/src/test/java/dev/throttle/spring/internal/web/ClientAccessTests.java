package dev.throttle.spring.internal.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.spring.ThrottleConfigurationException;
import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The safelist and blocklist: IPv4 and IPv6 CIDRs, single addresses, IPv4-mapped clients, and
 * a startup error naming each entry that is no CIDR.
 */
class ClientAccessTests {

    @Test
    void anIpv4CidrMatchesItsNetworkOnly() {
        ClientAccess access = new ClientAccess(List.of("10.0.0.0/8", "192.168.1.0/24"), List.of("203.0.113.0/24"));
        assertThat(access.isSafelisted("10.1.2.3")).isTrue();
        assertThat(access.isSafelisted("10.255.255.255")).isTrue();
        assertThat(access.isSafelisted("11.0.0.1")).isFalse();
        assertThat(access.isSafelisted("192.168.1.77")).isTrue();
        assertThat(access.isSafelisted("192.168.2.1")).isFalse();
        assertThat(access.isBlocked("203.0.113.9")).isTrue();
        assertThat(access.isBlocked("203.0.114.9")).isFalse();
        assertThat(access.isBlocked("10.1.2.3")).isFalse();
    }

    @Test
    void anIpv6CidrMatchesItsNetworkWhateverTheSpelling() {
        ClientAccess access = new ClientAccess(List.of("2001:db8::/32", "::1"), List.of("2001:db9:0:1::/64"));
        assertThat(access.isSafelisted("2001:db8:ffff::1")).isTrue();
        assertThat(access.isSafelisted("2001:0DB8:0:0:0:0:0:1")).isTrue();
        assertThat(access.isSafelisted("[2001:db8::7]")).isTrue();
        assertThat(access.isSafelisted("2001:db9::1")).isFalse();
        assertThat(access.isSafelisted("0:0:0:0:0:0:0:1"))
                .as("Tomcat's loopback")
                .isTrue();
        assertThat(access.isSafelisted("::2")).isFalse();
        assertThat(access.isBlocked("2001:db9:0:1:abcd::1")).isTrue();
        assertThat(access.isBlocked("2001:db9:0:2::1")).isFalse();
    }

    @Test
    void anIpv4CidrMatchesAnIpv4MappedClientAndNoOtherIpv6() {
        ClientAccess access = new ClientAccess(List.of(), List.of("203.0.113.0/24"));
        assertThat(access.isBlocked("::ffff:203.0.113.5")).isTrue();
        assertThat(access.isBlocked("0:0:0:0:0:ffff:cb00:7105")).isTrue();
        assertThat(access.isBlocked("::cb00:7105")).as("not IPv4-mapped").isFalse();
        assertThat(access.isBlocked("2001:db8::cb00:7105")).isFalse();
    }

    @Test
    void aSingleAddressAndTheWholeSpaceAreCidrsToo() {
        ClientAccess one = new ClientAccess(List.of("127.0.0.1"), List.of());
        assertThat(one.isSafelisted("127.0.0.1")).isTrue();
        assertThat(one.isSafelisted("127.0.0.2")).isFalse();
        ClientAccess all = new ClientAccess(List.of(), List.of("0.0.0.0/0", "::/0"));
        assertThat(all.isBlocked("198.51.100.1")).isTrue();
        assertThat(all.isBlocked("2001:db8::1")).isTrue();
    }

    @Test
    void resolvedAddressesMatchLikeTheirText() throws Exception {
        ClientAccess access = new ClientAccess(List.of("10.0.0.0/8"), List.of("2001:db8::/32"));
        assertThat(access.isSafelisted(InetAddress.getByAddress(new byte[] {10, 9, 8, 7})))
                .isTrue();
        assertThat(access.isSafelisted(InetAddress.getByAddress(new byte[] {11, 9, 8, 7})))
                .isFalse();
        byte[] ipv6 = {0x20, 0x01, 0x0d, (byte) 0xb8, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6};
        assertThat(access.isBlocked(InetAddress.getByAddress(ipv6))).isTrue();
        assertThat(access.isBlocked((InetAddress) null)).isFalse();
    }

    @Test
    void whatIsNoAddressLiteralMatchesNothingAndIsNeverLookedUp() {
        ClientAccess access = new ClientAccess(List.of("0.0.0.0/0", "::/0"), List.of("0.0.0.0/0", "::/0"));
        for (String text : new String[] {null, "", "localhost", "unknown", "10.0.0", "1:::2"}) {
            assertThat(access.isSafelisted(text)).as(text).isFalse();
            assertThat(access.isBlocked(text)).as(text).isFalse();
        }
    }

    @Test
    void emptyListsMatchNobody() {
        ClientAccess access = ClientAccess.none();
        assertThat(access.isEmpty()).isTrue();
        assertThat(access.isSafelisted("127.0.0.1")).isFalse();
        assertThat(access.isBlocked("127.0.0.1")).isFalse();
    }

    @Test
    void everyEntryThatIsNoCidrIsNamedByItsProperty() {
        assertThatExceptionOfType(ThrottleConfigurationException.class)
                .isThrownBy(() -> new ClientAccess(
                        List.of("10.0.0.0/8", "10.0.0/8", "10.0.0.0/33"),
                        List.of("2001:db8::/129", "example.com", "10.0.0.0/")))
                .satisfies((ex) -> assertThat(ex.problems())
                        .hasSize(5)
                        .anySatisfy(
                                (p) -> assertThat(p).startsWith("throttle.http.safelist[1] '10.0.0/8' is not a CIDR"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.safelist[2] '10.0.0.0/33'"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.blocklist[0] '2001:db8::/129'"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.blocklist[1] 'example.com'"))
                        .anySatisfy((p) -> assertThat(p).startsWith("throttle.http.blocklist[2] '10.0.0.0/'")));
    }
}
