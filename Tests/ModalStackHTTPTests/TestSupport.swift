import Glibc
import Locking
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// The application-side rendering of rejections used by every live test.
let testRejections: @Sendable (HTTPRejection) -> HTTPResponse = { rejection in
    switch rejection {
    case .ambiguousBodyLength:
        HTTPResponse(status: 400, headers: ["Content-Type": "text/plain"], body: Array("ambiguous body length".utf8))
    case .bodyTooLarge(let limit):
        HTTPResponse(
            status: 413, headers: ["Content-Type": "text/plain"], body: Array("too large: limit \(limit)".utf8))
    case .serverStopping:
        HTTPResponse(status: 503, headers: ["Content-Type": "text/plain"], body: Array("stopping".utf8))
    case .uriTooLong(let limit):
        HTTPResponse(
            status: 414, headers: ["Content-Type": "text/plain"], body: Array("uri too long: limit \(limit)".utf8))
    case .nulInRequestLine:
        HTTPResponse(status: 400, headers: ["Content-Type": "text/plain"], body: Array("NUL in request line".utf8))
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
    func wait(for count: Int, timeout: Duration = .seconds(10)) -> Bool {
        waitUntil(timeout: timeout) { self.count >= count }
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
    func wait(for count: Int, timeout: Duration = .seconds(5)) -> Bool {
        waitUntil(timeout: timeout) { self.records.withLock { $0.count } >= count }
    }
}

/// TCP states, as `/proc/net/tcp` numbers them: those the tests look for.
enum TCPState: Int {
    case established = 1
    case closeWait = 8
}

/// The states of the server's ends of the connections to `port` on 127.0.0.1, as the kernel has
/// them: what a test can know of a connection libmicrohttpd does not read (a suspended one, whose
/// client's FIN leaves it in `closeWait`) or has closed (no longer `established`).
func serverConnectionStates(port: UInt16) -> [TCPState] {
    guard let file = fopen("/proc/net/tcp", "r") else { return [] }
    defer { fclose(file) }
    let hex = String(port, radix: 16, uppercase: true)
    // Each line: "sl: local_address rem_address st …", an address as "0100007F:1F90".
    let local = "0100007F:" + String(repeating: "0", count: 4 - hex.count) + hex
    var states: [TCPState] = []
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0, let text = line {
        let fields = String(cString: text).split(separator: " ")
        guard fields.count > 3, fields[1] == local, let state = Int(fields[3], radix: 16).flatMap(TCPState.init)
        else { continue }
        states.append(state)
    }
    return states
}

/// `testConfiguration()` with `log` receiving the completed requests.
func testConfiguration(reportingTo log: CompletionLog) -> HTTPServer.Configuration {
    var configuration = testConfiguration()
    configuration.onRequestCompleted = log.hook
    return configuration
}
