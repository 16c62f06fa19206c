import CMicroHTTPD
import Glibc

/// The server's listening socket, opened by us rather than by libmicrohttpd so that a failure to bind
/// comes back with its errno (libmicrohttpd's start only returns NULL).
enum ListenSocket {
    enum Address {
        case ipv4(sockaddr_in)
        case ipv6(sockaddr_in6)
    }

    /// Parses an IPv4 or IPv6 literal (brackets allowed) or `localhost`.
    static func parse(host: String, port: UInt16) throws(HTTPServerError) -> Address {
        var literal = host
        if literal == "localhost" { literal = "127.0.0.1" }
        if literal.hasPrefix("[") && literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }

        var v4 = sockaddr_in()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            return .ipv4(v4)
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            return .ipv6(v6)
        }
        throw HTTPServerError(.invalidHost, "invalid host \"\(host)\": expected an IPv4 or IPv6 address or localhost")
    }

    /// Opens a non-blocking socket bound to `host:port` and listening. `"::"` accepts IPv4 too.
    static func open(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> Int32 {
        let address = try parse(host: host, port: port)
        let family = if case .ipv6 = address { AF_INET6 } else { AF_INET }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw HTTPServerError(.socketFailed, "cannot create a socket for \(host): \(errnoText())")
        }
        do throws(HTTPServerError) {
            var on: Int32 = 1
            // Restarting while old connections sit in TIME_WAIT must not fail with "address in use".
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if case .ipv6(let v6) = address {
                var v6Only: Int32 = isUnspecified(v6) ? 0 : 1
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6Only, socklen_t(MemoryLayout<Int32>.size))
            }
            let bound =
                switch address {
                case .ipv4(var v4):
                    withUnsafePointer(to: &v4) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                case .ipv6(var v6):
                    withUnsafePointer(to: &v6) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                        }
                    }
                }
            if bound != 0 {
                let code = errno
                let endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
                switch code {
                case EADDRINUSE: throw HTTPServerError(.addressInUse, "cannot bind \(endpoint): address already in use")
                case EADDRNOTAVAIL:
                    throw HTTPServerError(
                        .addressNotAvailable, "cannot bind \(endpoint): address not available on this machine")
                case EACCES: throw HTTPServerError(.permissionDenied, "cannot bind \(endpoint): permission denied")
                default: throw HTTPServerError(.socketFailed, "cannot bind \(endpoint): \(errnoText(code))")
                }
            }
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                throw HTTPServerError(
                    .socketFailed, "cannot make the socket for \(host):\(port) non-blocking: \(errnoText())")
            }
            guard listen(fd, backlog) == 0 else {
                throw HTTPServerError(.socketFailed, "cannot listen on \(host):\(port): \(errnoText())")
            }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// The port the socket is bound to (the real one after binding port 0).
    static func boundPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            switch family {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            default: 0
            }
        }
    }

    /// The numeric text of an IPv4 or IPv6 socket address, or `nil`.
    static func text(of address: UnsafePointer<sockaddr>) -> String? {
        let family = Int32(address.pointee.sa_family)
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            let text: UnsafePointer<CChar>? =
                switch family {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        withUnsafePointer(to: v4.pointee.sin_addr) {
                            inet_ntop(AF_INET, $0, buffer.baseAddress, socklen_t(buffer.count))
                        }
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        withUnsafePointer(to: v6.pointee.sin6_addr) {
                            inet_ntop(AF_INET6, $0, buffer.baseAddress, socklen_t(buffer.count))
                        }
                    }
                default: nil
                }
            return text.map { String(cString: $0) }
        }
    }

    private static func isUnspecified(_ address: sockaddr_in6) -> Bool {
        withUnsafeBytes(of: address.sin6_addr) { $0.allSatisfy { $0 == 0 } }
    }

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
