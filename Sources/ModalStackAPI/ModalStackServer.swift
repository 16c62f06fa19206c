import ModalStackHTTP
import ModalStackStore
import Timekeeping

/// The application behind libmicrohttpd: what the executable runs.
public final class ModalStackServer: Sendable {
    private let application: ModalStackApplication
    private let http: HTTPServer

    /// Prepares the application (see ``ModalStackApplication/init(configuration:time:makeID:openStore:)``)
    /// and the HTTP server; nothing listens yet. The server closes the store when it stops.
    public init(
        configuration: ServerConfiguration, time: any TimeSource = SystemTime(),
        openStore: () throws -> any SessionStore
    ) throws {
        let application = try ModalStackApplication(configuration: configuration, time: time, openStore: openStore)
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.threadPoolSize = configuration.threads
        httpConfiguration.connectionLimit = configuration.connectionLimit
        httpConfiguration.connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        httpConfiguration.maxBodyBytes = configuration.maxBodyBytes
        httpConfiguration.time = time
        httpConfiguration.onRequestCompleted = { completed in application.record(completed) }
        self.application = application
        self.http = HTTPServer(
            configuration: httpConfiguration, responder: application.responder, rejections: Self.render)
    }

    /// Starts listening and sweeping; from here on the server is ready.
    public func start() throws {
        try http.start()
        application.start()
    }

    /// The port actually bound (useful with port 0).
    public var boundPort: UInt16 { http.boundPort }

    /// Turns readiness to 503 (`shutting down`) while everything else keeps serving: the start of a
    /// stop, ahead of ``stop()``.
    public func stopBeingReady() {
        application.stopBeingReady()
    }

    /// Drains: readiness turns 503 at once, waiting long polls answer 304 and event streams end,
    /// the listener stops and requests in flight finish, then the database is checkpointed and closed.
    public func stop() {
        application.stopServing()
        http.stop()
        application.close()
    }

    private static func render(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .bodyTooLarge(let limit): Problem.bodyTooLarge(limit: limit).response
        case .uriTooLong(let limit):
            Problem(.uriTooLong, detail: "the request target is longer than \(limit) bytes").response
        case .headersTooLarge(let limit):
            Problem(.headersTooLarge, detail: "the request headers are larger than \(limit) bytes").response
        case .ambiguousBodyLength:
            Problem(
                .ambiguousBodyLength,
                detail: "send one Content-Length or Transfer-Encoding: chunked, not both and not two lengths"
            ).response
        case .nulInRequestLine:
            Problem(.invalidRequestLine, detail: "the request line holds a NUL byte").response
        case .serverStopping: Problem.serverStopping().response
        }
    }
}
