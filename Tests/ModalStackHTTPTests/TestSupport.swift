import Glibc
import Locking
import ModalStackHTTP
import Testing

/// The application-side rendering of rejections used by every live test.
let testRejections: @Sendable (HTTPRejection) -> HTTPResponse = { rejection in
    switch rejection {
    case .ambiguousBodyLength:
        HTTPResponse(status: 400, headers: ["Content-Type": "text/plain"], body: Array("ambiguous body length".utf8))
    case .bodyTooLarge(let limit):
        HTTPResponse(status: 413, headers: ["Content-Type": "text/plain"], body: Array("too large: limit \(limit)".utf8))
    case .serverStopping:
        HTTPResponse(status: 503, headers: ["Content-Type": "text/plain"], body: Array("stopping".utf8))
    case .uriTooLong(let limit):
        HTTPResponse(status: 414, headers: ["Content-Type": "text/plain"], body: Array("uri too long: limit \(limit)".utf8))
    case .headersTooLarge(let limit):
        HTTPResponse(
            status: 431, headers: ["Content-Type": "text/plain"], body: Array("headers too large: limit \(limit)".utf8))
    }
}

/// A router whose 404 and 405 answers carry what the tests check.
func makeRouter() -> Router {
    Router(
        notFound: { request in
            HTTPResponse(status: 404, body: Array("no route for \(request.path)".utf8))
        },
        methodNotAllowed: { _, allowed in
            HTTPResponse(status: 405, headers: ["Allow": allowed.joined(separator: ", ")])
        }
    )
}

/// Test configuration: loopback, ephemeral port, small limits.
func testConfiguration(
    maxBodyBytes: Int = 1000,
    maxDiscardedBodyBytes: Int = 1 << 20,
    stopGracePeriod: Duration = .seconds(5)
) -> HTTPServer.Configuration {
    HTTPServer.Configuration(
        host: "127.0.0.1", port: 0, threadPoolSize: 2, connectionLimit: 1024, connectionTimeoutSeconds: 10,
        maxBodyBytes: maxBodyBytes, maxDiscardedBodyBytes: maxDiscardedBodyBytes, stopGracePeriod: stopGracePeriod)
}

/// Starts a server for `router` on 127.0.0.1, runs `body` with it, and stops it.
func withServer(
    _ router: Router,
    configuration: HTTPServer.Configuration = testConfiguration(),
    _ body: (HTTPServer) throws -> Void
) throws {
    let server = HTTPServer(configuration: configuration, responder: router, rejections: testRejections)
    try server.start()
    defer { server.stop() }
    try body(server)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Replies held by deferred handlers until the test answers them.
final class ReplyBox: Sendable {
    private let replies = LockedValue<[(request: HTTPRequest, reply: HTTPReply)]>([])

    func append(_ request: HTTPRequest, _ reply: HTTPReply) {
        replies.withLock { $0.append((request, reply)) }
    }

    var count: Int { replies.withLock { $0.count } }

    func takeAll() -> [(request: HTTPRequest, reply: HTTPReply)] {
        replies.withLock { replies in
            defer { replies.removeAll() }
            return replies
        }
    }

    /// Waits (polling) until `count` replies are held; false on timeout.
    func wait(for count: Int, timeoutSeconds: Double = 10) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int(timeoutSeconds * 1000)))
        while self.count < count {
            if clock.now > deadline { return false }
            usleep(1_000)
        }
        return true
    }
}

/// Runs `body` on a new detached POSIX thread.
func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(status == 0, "pthread_create failed")
    pthread_detach(thread)
}

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

/// Collects what detached replies send.
final class ResponseCollector: Sendable {
    private let responses = LockedValue<[HTTPResponse]>([])

    func append(_ response: HTTPResponse) {
        responses.withLock { $0.append(response) }
    }

    var all: [HTTPResponse] { responses.withLock { $0 } }
}

/// Collects what ``HTTPServer/Configuration/onRequestCompleted`` reports.
final class CompletionLog: Sendable {
    private let records = LockedValue<[CompletedRequest]>([])

    /// The hook to put into a configuration.
    var hook: @Sendable (CompletedRequest) -> Void {
        { record in self.records.withLock { $0.append(record) } }
    }

    var all: [CompletedRequest] { records.withLock { $0 } }

    /// Waits (polling) until `count` requests were reported; false on timeout. The hook runs after
    /// the response went out, so a client may read it before the hook has run.
    func wait(for count: Int, timeoutSeconds: Double = 5) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int(timeoutSeconds * 1000)))
        while records.withLock({ $0.count }) < count {
            if clock.now > deadline { return false }
            usleep(1_000)
        }
        return true
    }
}

/// `testConfiguration()` with `log` receiving the completed requests.
func testConfiguration(reportingTo log: CompletionLog) -> HTTPServer.Configuration {
    var configuration = testConfiguration()
    configuration.onRequestCompleted = log.hook
    return configuration
}
