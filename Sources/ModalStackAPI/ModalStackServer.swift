import Dispatch
import Glibc
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// The whole service wired together: the SQLite store, the endpoints, the HTTP server, the
/// expiry sweep.
public final class ModalStackServer: Sendable {
    public let configuration: ServerConfiguration
    private let http: HTTPServer
    private let store: SQLiteSessionStore
    private let service: SessionService
    private let readiness: Readiness
    private let sweeper: ExpirySweeper

    /// Opens (creating if needed) the database and prepares the server; nothing listens yet.
    public init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        let catalog = try configuration.catalogPath.map(Self.loadCatalog)
        let apiKeys = try configuration.apiKeys + (configuration.apiKeyFile.map(Self.loadKeys) ?? [])
        try Self.createParentDirectory(of: configuration.databasePath)
        let store = try SQLiteSessionStore(
            path: configuration.databasePath, durability: configuration.durability,
            eventLogSize: configuration.eventLogSize,
            idempotencyLifetimeMilliseconds: Int64(configuration.idempotencyLifetimeSeconds) * 1000,
            maxSizeBytes: configuration.maxDatabaseBytes > 0 ? Int64(configuration.maxDatabaseBytes) : nil)
        let metrics = Metrics()
        let rules = SessionRules(
            maxDepth: configuration.maxDepth, queueSize: configuration.queueSize,
            sessionTTLSeconds: Int64(configuration.sessionTTLSeconds))
        let service = SessionService(
            store: store, rules: rules, catalog: catalog, requiresIfMatch: configuration.requireIfMatch,
            metrics: metrics,
            workingSetCapacity: configuration.workingSetSessions)
        let readiness = Readiness()
        let watch = SessionWatch(
            service: service, metrics: metrics, maxWaitSeconds: configuration.maxWaitSeconds,
            heartbeatSeconds: configuration.heartbeatSeconds)
        let endpoints = Endpoints(service: service, readiness: readiness, watch: watch, metrics: metrics)
        var router = Router(
            notFound: { request in Problem.routeNotFound(request.path).response },
            methodNotAllowed: { request, allowed in Problem.methodNotAllowed(request.method, allowed: allowed).response
            })
        endpoints.register(on: &router)
        let accessLog = AccessLog(format: configuration.logFormat, minimumLevel: configuration.logLevel)
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.threadPoolSize = configuration.threads
        httpConfiguration.connectionLimit = configuration.connectionLimit
        httpConfiguration.connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        httpConfiguration.maxBodyBytes = configuration.maxBodyBytes
        httpConfiguration.onRequestCompleted = { completed in
            metrics.recordRequest(
                method: completed.method, route: completed.routeTemplate, status: completed.status,
                seconds: completed.duration)
            accessLog.write(
                AccessLog.Entry(
                    time: Clock.now(), method: completed.method, route: completed.routeTemplate,
                    status: completed.status,
                    durationSeconds: completed.duration, bytes: completed.responseBodyBytes,
                    requestID: completed.requestID,
                    completed: completed.endedNormally))
        }
        let responder = Authentication(
            next: router, keys: apiKeys, protectsOperations: configuration.authenticateOperations)
        self.http = HTTPServer(configuration: httpConfiguration, responder: responder, rejections: Self.render)
        self.store = store
        self.service = service
        self.readiness = readiness
        self.sweeper = ExpirySweeper(
            service: service, intervalSeconds: min(max(configuration.sessionTTLSeconds / 4, 1), 60))
    }

    /// Starts listening and sweeping; from here on the server is ready.
    public func start() throws {
        try http.start()
        sweeper.start()
        readiness.enter(.serving)
    }

    /// The port actually bound (useful with port 0).
    public var boundPort: UInt16 { http.boundPort }

    /// Turns readiness to 503 (`shutting down`) while everything else keeps serving: the start of a
    /// stop, ahead of ``stop()``.
    public func stopBeingReady() {
        readiness.enter(.draining)
    }

    /// Drains: readiness turns 503 at once, waiting long polls answer 304 and event streams end,
    /// the listener stops and requests in flight finish, then the database is checkpointed and closed.
    public func stop() {
        stopBeingReady()
        sweeper.stop()
        service.notifier.publish(.shutdown)
        http.stop()
        store.close()
    }

    private static func render(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .bodyTooLarge(let limit): Problem.bodyTooLarge(limit: limit).response
        case .uriTooLong(let limit):
            Problem(
                slug: "uri-too-long", status: 414, title: "URI too long",
                detail: "the request target is longer than \(limit) bytes"
            ).response
        case .headersTooLarge(let limit):
            Problem(
                slug: "headers-too-large", status: 431, title: "Request header fields too large",
                detail: "the request headers are larger than \(limit) bytes"
            ).response
        case .ambiguousBodyLength:
            Problem(
                slug: "ambiguous-body-length", status: 400, title: "Ambiguous body length",
                detail: "send one Content-Length or Transfer-Encoding: chunked, not both and not two lengths"
            ).response
        case .serverStopping: Problem.serverStopping().response
        }
    }

    /// Reads and checks the catalog file; a problem names the file, the place in it, and what is wrong.
    private static func loadCatalog(path: String) throws -> Catalog {
        do {
            return try Catalog.load(try readFile(path, setting: "catalog"))
        } catch let error as CatalogError {
            throw ConfigurationFileError(setting: "catalog", path: path, message: "\(error)")
        }
    }

    /// One key per line; blank lines and lines starting with # are skipped.
    private static func loadKeys(path: String) throws -> [String] {
        let text = String(decoding: try readFile(path, setting: "api-key-file"), as: UTF8.self)
        let keys = text.split(whereSeparator: \.isNewline).map { String($0).trimmingSpaces }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !keys.isEmpty else {
            throw ConfigurationFileError(setting: "api-key-file", path: path, message: "holds no key")
        }
        return keys
    }

    private static func readFile(_ path: String, setting: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw ConfigurationFileError(setting: setting, path: path, message: String(cString: strerror(errno)))
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    /// `mkdir -p` for the database's directory.
    private static func createParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        var prefix = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            prefix += component + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw StoreError(
                    .unavailable, "cannot create the database directory \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// A file named by a setting that cannot be used.
struct ConfigurationFileError: Error, CustomStringConvertible {
    let setting: String
    let path: String
    let message: String

    var description: String { "--\(setting) \(path): \(message)" }
}

/// Deletes expired sessions in the background, in small batches, each its own transaction, so
/// that requests never wait long behind it.
final class ExpirySweeper: Sendable {
    static let batchSize = 100

    private let service: SessionService
    private let intervalSeconds: Int
    private let running = LockedValue(false)
    private let queue = DispatchQueue(label: "modalstack.expiry")

    init(service: SessionService, intervalSeconds: Int) {
        self.service = service
        self.intervalSeconds = intervalSeconds
    }

    func start() {
        running.withLock { $0 = true }
        schedule()
    }

    func stop() {
        running.withLock { $0 = false }
    }

    private func schedule() {
        queue.asyncAfter(deadline: .now() + .seconds(intervalSeconds)) { [self] in
            guard running.withLock({ $0 }) else { return }
            while running.withLock({ $0 }), (try? service.sweepExpired(limit: Self.batchSize)) == Self.batchSize {}
            schedule()
        }
    }
}
