import Dispatch
import Locking
import ModalStackAPI
import ModalStackHTTP
import ModalStackLaunch
import ModalStackService
import Timekeeping

/// The real application — router, endpoints, service and store — in this process with no socket:
/// requests go straight to its responder (the seam libmicrohttpd calls), so an endpoint test costs
/// microseconds instead of a process start.
///
/// It takes the binary's own command-line `arguments` and opens a new SQLite file in a temporary
/// directory (or a new PostgreSQL database when ``ServerProcess/usesPostgres``), as
/// ``ServerProcess`` does. What only the transport does — `Content-Length`, `Date`, request ids,
/// 413/414/431, keep-alive, streams over TCP, the access log and request metrics — is not here:
/// tests of those use ``ServerProcess``.
public final class InProcessServer: @unchecked Sendable {
    public let application: ModalStackApplication
    /// Where the SQLite file lives; removed after the application has closed it.
    private let directory: TemporaryDirectory

    /// Builds the application from the binary's `arguments` (`--host`, `--port` and `--db` are
    /// ignored or supplied) and starts it.
    /// - Parameters:
    ///   - time: The clock and timers; a ``ManualTime`` makes expiry and deadlines move only when
    ///     the test moves them.
    ///   - makeID: Makes session and presentation ids; ``SequentialIDs`` gives predictable ones.
    public init(
        arguments: [String] = [], time: any TimeSource = SystemTime(),
        makeID: @escaping @Sendable () -> String = RandomID.make
    ) throws {
        directory = try TemporaryDirectory()
        var database = ["--db", directory.appending("data/modalstack.sqlite")]
        if ServerProcess.usesPostgres {
            let server = try PostgresServer.shared()
            database = ["--database-url", server.url(database: try server.createDatabase("in-process"))]
        }
        let configuration = try LaunchConfiguration.parse(arguments: database + arguments, environment: [:])
        application = try ModalStackApplication(configuration: configuration.server, time: time, makeID: makeID) {
            try Storage.open(configuration.storage, time: time)
        }
        application.start()
    }

    deinit {
        application.stop()
    }

    public func client() -> InProcessClient {
        InProcessClient(responder: application.responder)
    }
}

/// Sends requests to a responder in this process, with ``HTTPClient``'s `send` and answers.
public final class InProcessClient: TestClient, @unchecked Sendable {
    private let responder: any HTTPResponder
    /// How long `send` waits for an answer sent later (a long poll).
    public let timeoutSeconds: Double

    public init(responder: any HTTPResponder, timeoutSeconds: Double = 10) {
        self.responder = responder
        self.timeoutSeconds = timeoutSeconds
    }

    /// Sends a request (its target may carry a query) from 127.0.0.1 and waits for the answer; a
    /// streamed answer returns its head. As the transport does, no body comes back for `HEAD`,
    /// 204 or 304.
    public func send(
        method: String = "GET", path: String, headers: HTTPHeaders = [:], body: [UInt8] = []
    ) throws(HTTPClientError) -> HTTPClientResponse {
        var request = HTTPRequest(method: method, target: path, headers: headers, body: body)
        request.remoteAddress = "127.0.0.1"
        let answer = LockedValue<HTTPResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let reply = HTTPReply(onSend: { response in
            answer.withLock { $0 = response }
            answered.signal()
        })
        responder.respond(to: request, reply: reply)
        guard answered.wait(timeout: .now() + timeoutSeconds) == .success, let response = answer.withLock({ $0 })
        else {
            throw HTTPClientError(code: .timedOut, message: "no answer to \(method) \(path) in \(timeoutSeconds) s")
        }
        let hasBody = method != "HEAD" && response.status != 204 && response.status != 304
        return HTTPClientResponse(
            status: response.status, reason: "", headers: response.headers, body: hasBody ? response.body : [])
    }

    /// Nothing to close: there is no connection.
    public func close() {}
}

/// Ids `id-1`, `id-2`, … in the order they are made: for tests that name presentations before
/// they exist.
public final class SequentialIDs: Sendable {
    private let counter = LockedValue(0)

    public init() {}

    public func next() -> String {
        let number = counter.withLock { count in
            count += 1
            return count
        }
        return "id-\(number)"
    }
}
