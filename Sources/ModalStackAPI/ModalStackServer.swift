import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// The whole service wired together: the SQLite store, the endpoints, the HTTP server.
public final class ModalStackServer: Sendable {
    public let configuration: ServerConfiguration
    private let http: HTTPServer
    private let readiness: Readiness

    /// Opens (creating if needed) the database and prepares the server; nothing listens yet.
    public init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        try Self.createParentDirectory(of: configuration.databasePath)
        let store = try SQLiteSessionStore(path: configuration.databasePath, durability: configuration.durability)
        let readiness = Readiness()
        let endpoints = Endpoints(
            service: SessionService(store: store, rules: SessionRules(maxDepth: configuration.maxDepth)),
            readiness: readiness)
        var router = Router(
            notFound: { request in Problem.routeNotFound(request.path).response },
            methodNotAllowed: { request, allowed in Problem.methodNotAllowed(request.method, allowed: allowed).response })
        endpoints.register(on: &router)
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.threadPoolSize = configuration.threads
        httpConfiguration.connectionLimit = configuration.connectionLimit
        httpConfiguration.connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        httpConfiguration.maxBodyBytes = configuration.maxBodyBytes
        self.http = HTTPServer(configuration: httpConfiguration, responder: router, rejections: Self.render)
        self.readiness = readiness
    }

    /// Starts listening; from here on the server is ready.
    public func start() throws {
        try http.start()
        readiness.enter(.serving)
    }

    /// The port actually bound (useful with port 0).
    public var boundPort: UInt16 { http.boundPort }

    /// Stops taking requests, finishes those in flight, and closes the listener.
    public func stop() {
        readiness.enter(.draining)
        http.stop()
    }

    private static func render(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .bodyTooLarge(let limit): Problem.bodyTooLarge(limit: limit).response
        case .serverStopping: Problem.serverStopping().response
        }
    }

    /// `mkdir -p` for the database's directory.
    private static func createParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        var prefix = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            prefix += component + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw StoreError(.unavailable, "cannot create the database directory \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }
}
