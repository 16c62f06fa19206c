import Dispatch
import Glibc
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore
import ModalStackTokens
import Timekeeping

/// The whole service wired together over a store: the service, the endpoints, the HTTP server,
/// the expiry sweep.
public final class ModalStackServer: Sendable {
    public let configuration: ServerConfiguration
    private let http: HTTPServer
    private let service: SessionService
    private let readiness: Readiness
    private let sweeper: ExpirySweeper
    private let accessLog: AccessLog

    /// Reads the files the configuration names, then opens the store with `openStore` (so a bad
    /// file leaves no database behind), and prepares the server; nothing listens yet. The server
    /// closes the store when it stops.
    public init(
        configuration: ServerConfiguration, time: any TimeSource = SystemTime(),
        openStore: (ServerConfiguration) throws -> any SessionStore
    ) throws {
        self.configuration = configuration
        let catalog = try configuration.catalogPath.map(Self.loadCatalog)
        let apiKeys = try Self.apiKeys(configuration)
        let tokenKeys = try Self.loadTokenKeys(configuration)
        let store = try openStore(configuration)
        let metrics = Metrics()
        let rules = SessionRules(
            maxDepth: configuration.maxDepth, queueSize: configuration.queueSize,
            sessionTTLSeconds: Int64(configuration.sessionTTLSeconds), maxPathDepth: configuration.maxPathDepth)
        let service = SessionService(
            store: store, rules: rules, catalog: catalog, metrics: metrics,
            workingSetCapacity: configuration.workingSetSessions, time: time)
        let readiness = Readiness()
        let watch = SessionWatch(
            service: service, metrics: metrics, maxWaitSeconds: configuration.maxWaitSeconds,
            heartbeatSeconds: configuration.heartbeatSeconds, time: time)
        let maxTokenLifetime = Int64(configuration.tokenMaxTTLSeconds)
        let verifier = tokenKeys.map { keys in
            TokenVerifier(
                keys: keys, audience: configuration.tokenAudience, maxLifetimeSeconds: maxTokenLifetime,
                leewaySeconds: Int64(configuration.tokenLeewaySeconds), time: time)
        }
        let access = AccessControl(
            keys: apiKeys, verifier: verifier, leewaySeconds: Int64(configuration.tokenLeewaySeconds),
            protectsOperations: configuration.authenticateOperations, metrics: metrics)
        let endpoints = Endpoints(
            service: service, changes: HTTPChanges(service: service, requiresIfMatch: configuration.requireIfMatch),
            readiness: readiness, watch: watch, metrics: metrics, access: access,
            minter: tokenKeys.flatMap { TokenMinter(keys: $0, audience: configuration.tokenAudience, time: time) },
            maxTokenLifetimeSeconds: maxTokenLifetime)
        let crossOrigin = CrossOrigin(
            origins: configuration.corsOrigins.isEmpty
                ? .none : configuration.corsOrigins.contains("*") ? .any : .list(Set(configuration.corsOrigins)))
        var router = Router(
            notFound: { request in Problem.routeNotFound(request.path).response },
            methodNotAllowed: { request, allowed in
                // Every path of the API answers OPTIONS, which no route registers.
                let allowed = allowed + ["OPTIONS"]
                return request.method == "OPTIONS"
                    ? crossOrigin.options(request, allowed: allowed)
                    : Problem.methodNotAllowed(request.method, allowed: allowed).response
            })
        endpoints.register(on: &router)
        if configuration.inspector { Inspector.register(on: &router) }
        let methods = router.methods.union(["OPTIONS"])
        let accessLog = AccessLog(format: configuration.logFormat, minimumLevel: configuration.logLevel)
        self.accessLog = accessLog
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.threadPoolSize = configuration.threads
        httpConfiguration.connectionLimit = configuration.connectionLimit
        httpConfiguration.connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        httpConfiguration.maxBodyBytes = configuration.maxBodyBytes
        httpConfiguration.time = time
        httpConfiguration.onRequestCompleted = { completed in
            // Any method may be sent: one label for those the server does not implement keeps the
            // series bounded.
            metrics.recordRequest(
                method: methods.contains(completed.method) ? completed.method : Metrics.otherMethod,
                route: completed.routeTemplate, status: completed.status, seconds: completed.duration)
            accessLog.write(
                AccessLog.Entry(
                    time: time.now(), method: completed.method, route: completed.routeTemplate,
                    status: completed.status,
                    durationSeconds: completed.duration, bytes: completed.responseBodyBytes,
                    requestID: completed.requestID,
                    completed: completed.endedNormally))
        }
        let responder = CrossOrigin.Responder(policy: crossOrigin, next: router)
        self.http = HTTPServer(configuration: httpConfiguration, responder: responder, rejections: Self.render)
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
        service.close()
        accessLog.output.flush()
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
        case .nulInRequestLine:
            Problem(
                slug: "invalid-request-line", status: 400, title: "Invalid request line",
                detail: "the request line holds a NUL byte"
            ).response
        case .serverStopping: Problem.serverStopping().response
        }
    }

    /// The API keys: `--api-key`'s, then `--api-key-file`'s.
    public static func apiKeys(_ configuration: ServerConfiguration) throws -> [String] {
        try configuration.apiKeys
            + (configuration.apiKeyFile.map { try loadLines(path: $0, setting: "api-key-file") } ?? [])
    }

    /// Reads and checks the catalog file; a problem names the file, the place in it, and what is wrong.
    private static func loadCatalog(path: String) throws -> Catalog {
        do {
            return try Catalog.load(try readFile(path, setting: "catalog"))
        } catch let error as CatalogError {
            throw ConfigurationFileError(setting: "catalog", path: path, message: "\(error)")
        }
    }

    /// One key or secret per line; blank lines and lines starting with # are skipped.
    private static func loadLines(path: String, setting: String) throws -> [String] {
        let text = String(decoding: try readFile(path, setting: setting), as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { String($0).trimmingSpaces }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !lines.isEmpty else {
            throw ConfigurationFileError(setting: setting, path: path, message: "holds no key")
        }
        return lines
    }

    /// The keys client tokens may be signed with; nil when none is configured (tokens are off).
    private static func loadTokenKeys(_ configuration: ServerConfiguration) throws -> TokenKeys? {
        let secrets =
            try configuration.tokenSecrets
            + (configuration.tokenSecretFile.map { try loadLines(path: $0, setting: "token-secret-file") } ?? [])
        let publicKeys = try configuration.tokenPublicKeyFiles.map { try readFile($0, setting: "token-public-key") }
        guard !secrets.isEmpty || !publicKeys.isEmpty else { return nil }
        do {
            return try TokenKeys(secrets: secrets.map { Array($0.utf8) }, publicKeysPEM: publicKeys)
        } catch {
            throw ConfigurationFileError(
                setting: "token-public-key", path: configuration.tokenPublicKeyFiles.joined(separator: ","),
                message: error.description)
        }
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
}

/// A file named by a setting that cannot be used.
struct ConfigurationFileError: Error, CustomStringConvertible {
    let setting: String
    let path: String
    let message: String

    var description: String { "--\(setting) \(path): \(message)" }
}
