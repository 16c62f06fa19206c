import Glibc
import ModalStackTestSupport

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A one-connection TCP server answering with canned bytes, to test HTTPClient's parsing.
struct CannedServer {
    let port: UInt16

    /// Accepts one connection on its own thread; for each request head read, writes the next canned
    /// response. Then closes, or with `closeAfterLast: false` waits for the client to close.
    init(responses: [[UInt8]], closeAfterLast: Bool = true) {
        port = serveOneConnection { client in
            for response in responses {
                guard client.skipRequestHead() else { return }
                client.write(response)
            }
            if !closeAfterLast { client.readUntilClosed() }
        }
    }
}

/// A one-connection TCP server that reads one request head, then sends `parts` of an answer, each
/// after its pause (to test reading responses as they arrive), then waits for the client to close.
struct ScriptedServer {
    let port: UInt16

    init(parts: [(pauseMilliseconds: Int, bytes: [UInt8])]) {
        port = serveOneConnection { client in
            guard client.skipRequestHead() else { return }
            for part in parts {
                usleep(UInt32(part.pauseMilliseconds * 1000))
                client.write(part.bytes)
            }
            client.readUntilClosed()
        }
    }
}

/// A loopback port nothing listens on.
func closedPort() -> UInt16 {
    let (fd, port) = loopbackSocket()
    Glibc.close(fd)
    return port
}

// MARK: Helpers

/// The server's end of the connection a test server accepted.
private final class AcceptedConnection {
    private let fd: Int32
    /// Bytes read after the last request head.
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 4096)

    init(_ fd: Int32) {
        self.fd = fd
    }

    /// Reads until a whole request head arrived and drops it; false when the client closed first.
    func skipRequestHead() -> Bool {
        while !pending.containsHeadTerminator {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return false }
            pending += buffer[..<count]
        }
        pending.removeFirstHead()
        return true
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func readUntilClosed() {
        while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
    }
}

/// Listens on a free loopback port and returns it; accepts one connection there, on a thread of its
/// own (Dispatch's pool may be busy with other tests' blocking clients), runs `serve` with it and
/// closes it.
private func serveOneConnection(_ serve: @escaping @Sendable (AcceptedConnection) -> Void) -> UInt16 {
    let (fd, port) = loopbackSocket()
    listen(fd, 4)
    startThread {
        let connection = accept(fd, nil, nil)
        Glibc.close(fd)
        guard connection >= 0 else { return }
        defer { Glibc.close(connection) }
        serve(AcceptedConnection(connection))
    }
    return port
}

/// A TCP socket bound to 127.0.0.1 on a free port, and the port.
private func loopbackSocket() -> (fd: Int32, port: UInt16) {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &bound) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
    }
    return (fd, UInt16(bigEndian: bound.sin_port))
}

extension [UInt8] {
    fileprivate var containsHeadTerminator: Bool { headEnd != nil }

    private var headEnd: Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4)
        where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    fileprivate mutating func removeFirstHead() {
        if let end = headEnd { removeFirst(end) }
    }
}
