import Glibc
import ModalStackTestSupport

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A one-connection TCP server answering with canned bytes, to test HTTPClient's parsing.
struct CannedServer {
    let port: UInt16

    /// Accepts one connection on its own thread; for each request head read, writes the next canned
    /// response. Then closes, or with `closeAfterLast: false` waits for the client to close.
    init(responses: [[UInt8]], closeAfterLast: Bool = true) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(fd, 4)
        port = boundPort(of: fd)
        // A thread of its own: Dispatch's pool may be busy with other tests' blocking clients.
        startThread {
            let connection = accept(fd, nil, nil)
            Glibc.close(fd)
            guard connection >= 0 else { return }
            defer { Glibc.close(connection) }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            for response in responses {
                while !pending.containsHeadTerminator {
                    let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { return }
                    pending += buffer[..<count]
                }
                pending.removeFirstHead()
                _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if !closeAfterLast {
                while buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
            }
        }
    }
}

/// A one-connection TCP server that reads one request head, then sends `parts` of an answer, each
/// after its pause (to test reading responses as they arrive), then waits for the client to close.
struct ScriptedServer {
    let port: UInt16

    init(parts: [(pauseMilliseconds: Int, bytes: [UInt8])]) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(fd, 4)
        port = boundPort(of: fd)
        let script = parts.map { (pause: $0.pauseMilliseconds, bytes: $0.bytes) }
        startThread {
            let connection = accept(fd, nil, nil)
            Glibc.close(fd)
            guard connection >= 0 else { return }
            defer { Glibc.close(connection) }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !pending.containsHeadTerminator {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return }
                pending += buffer[..<count]
            }
            for part in script {
                usleep(UInt32(part.pause * 1000))
                _ = part.bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            while buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
        }
    }
}

/// A loopback port nothing listens on.
func closedPort() -> UInt16 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Glibc.close(fd) }
    withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    return boundPort(of: fd)
}

private func boundPort(of fd: Int32) -> UInt16 {
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &bound) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: bound.sin_port)
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
