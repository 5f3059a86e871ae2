package dev.throttle.spring.internal.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/**
 * The {@code #ip} key of an address: IPv4 as it is, IPv6 by its prefix, IPv4-mapped IPv6 as
 * IPv4, literals only (never DNS).
 */
class ClientAddressesTests {

    @Test
    void anIpv4AddressIsItsOwnKeyWithoutACopy() {
        String address = "203.0.113.7";
        assertThat(ClientAddresses.key(address, 64)).isSameAs(address);
        assertThat(ClientAddresses.key((String) null, 64)).isNull();
    }

    @Test
    void anIpv6AddressIsKeyedByItsNetwork() {
        assertThat(ClientAddresses.key("2001:db8:1:2:3:4:5:6", 64)).isEqualTo("2001:db8:1:2::");
        assertThat(ClientAddresses.key("2001:0db8:0001:0002:ffff::1", 64)).isEqualTo("2001:db8:1:2::");
        assertThat(ClientAddresses.key("2001:DB8:1:2::", 64)).isEqualTo("2001:db8:1:2::");
        assertThat(ClientAddresses.key("2001:db8:1:3::1", 64)).isEqualTo("2001:db8:1:3::");
        assertThat(ClientAddresses.key("0:0:0:0:0:0:0:1", 64))
                .as("Tomcat's loopback")
                .isEqualTo("::");
        assertThat(ClientAddresses.key("[2001:db8:1:2::9]", 64)).isEqualTo("2001:db8:1:2::");
        assertThat(ClientAddresses.key("fe80::1%eth0", 64)).isEqualTo("fe80::");
    }

    @Test
    void thePrefixIsConfigurable() {
        assertThat(ClientAddresses.key("2001:db8:1:2:3:4:5:6", 48)).isEqualTo("2001:db8:1::");
        assertThat(ClientAddresses.key("2001:db8:1:2:3:4:5:6", 56)).isEqualTo("2001:db8:1::");
        assertThat(ClientAddresses.key("2001:db8:1:2ff:3:4:5:6", 56)).isEqualTo("2001:db8:1:200::");
        assertThat(ClientAddresses.key("2001:db8:1:2:3:4:5:6", 80)).isEqualTo("2001:db8:1:2:3::");
        assertThat(ClientAddresses.key("2001:db8:1:2:3:4:5:6", 128)).isEqualTo("2001:db8:1:2:3:4:5:6");
        assertThat(ClientAddresses.key("ffff:db8:1:2:3:4:5:6", 1)).isEqualTo("8000::");
    }

    @Test
    void theZerosAreCompressedAsRfc5952Says() {
        assertThat(ClientAddresses.key("1:0:0:2:0:0:0:3", 128)).isEqualTo("1:0:0:2::3");
        assertThat(ClientAddresses.key("1:0:0:2:0:0:3:4", 128)).isEqualTo("1::2:0:0:3:4");
        assertThat(ClientAddresses.key("1:2:3:4:5:6:0:8", 128))
                .as("a single zero group stays")
                .isEqualTo("1:2:3:4:5:6:0:8");
    }

    @Test
    void anIpv4MappedIpv6AddressIsTheIpv4Address() {
        assertThat(ClientAddresses.key("::ffff:192.0.2.1", 64)).isEqualTo("192.0.2.1");
        assertThat(ClientAddresses.key("0:0:0:0:0:ffff:c000:201", 64)).isEqualTo("192.0.2.1");
    }

    @Test
    void whatIsNoAddressLiteralIsItsOwnKeyAndNeverLookedUp() {
        assertThat(ClientAddresses.key("localhost", 64)).isEqualTo("localhost");
        assertThat(ClientAddresses.key("unknown", 64)).isEqualTo("unknown");
        for (String text : new String[] {
            "1:2", "1:::2", ":1", "1:2:3:4:5:6:7:8:9", "12345::", "g::1", "1:2:", "::1.2.3", "::1.2.3.256"
        }) {
            assertThat(ClientAddresses.key(text, 64)).as(text).isEqualTo(text);
        }
    }

    @Test
    void aResolvedAddressIsKeyedTheSameWay() throws Exception {
        assertThat(ClientAddresses.key(InetAddress.getByAddress(new byte[] {(byte) 203, 0, 113, 7}), 64))
                .isEqualTo("203.0.113.7");
        byte[] ipv6 = {0x20, 0x01, 0x0d, (byte) 0xb8, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6};
        assertThat(ClientAddresses.key(InetAddress.getByAddress(ipv6), 64)).isEqualTo("2001:db8:1:2::");
        assertThat(ClientAddresses.key((InetAddress) null, 64)).isNull();
    }
}
