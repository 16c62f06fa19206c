import CMicroHTTPD
import Glibc

/// A peer's address as the socket gave it, formatted only when read: every request carries one,
/// and few are ever read.
struct RemoteAddress: Sendable, Equatable {
    private enum Storage: Sendable {
        /// An `AF_INET` or `AF_INET6` socket address, copied as it was (a `sockaddr_in` fits).
        case socket(sockaddr_in6)
        /// Given as text (``HTTPRequest/remoteAddress`` set by hand).
        case text(String)
    }

    private let storage: Storage

    /// Copies an IPv4 or IPv6 socket address; `nil` for other families.
    init?(_ address: UnsafePointer<sockaddr>) {
        let size =
            switch Int32(address.pointee.sa_family) {
            case AF_INET: MemoryLayout<sockaddr_in>.size
            case AF_INET6: MemoryLayout<sockaddr_in6>.size
            default: 0
            }
        guard size > 0 else { return nil }
        var copy = sockaddr_in6()
        withUnsafeMutableBytes(of: &copy) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: UnsafeRawPointer(address), count: size))
        }
        storage = .socket(copy)
    }

    init(text: String) {
        storage = .text(text)
    }

    /// The numeric text (`"127.0.0.1"`, `"::1"`).
    var text: String? {
        switch storage {
        case .socket(let address):
            withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ListenSocket.text(of: $0) }
            }
        case .text(let text):
            text
        }
    }

    static func == (lhs: RemoteAddress, rhs: RemoteAddress) -> Bool {
        lhs.text == rhs.text
    }
}
