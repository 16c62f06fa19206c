import Glibc
import Testing

@testable import ModalStackHTTP

@Suite struct ListenSocketTests {
    private func text(ipv4: String) -> String? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        #expect(inet_pton(AF_INET, ipv4, &address.sin_addr) == 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListenSocket.text(of: $0) }
        }
    }

    @Test func writesIPv4AddressesAsDottedDecimal() {
        for address in ["127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.100.9", "192.168.1.254", "1.10.100.200"] {
            #expect(text(ipv4: address) == address)
        }
    }

    @Test func writesIPv6AddressesInTheirShortForm() {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        #expect(inet_pton(AF_INET6, "2001:db8:0:0:0:0:0:1", &address.sin6_addr) == 1)
        let text = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListenSocket.text(of: $0) }
        }
        #expect(text == "2001:db8::1")
    }

    @Test func otherFamiliesHaveNoText() {
        var address = sockaddr()
        address.sa_family = sa_family_t(AF_UNIX)
        #expect(ListenSocket.text(of: &address) == nil)
    }
}
