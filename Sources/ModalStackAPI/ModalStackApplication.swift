import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore
import ModalStackTokens
import Timekeeping

/// Everything of ModalStack but the socket: the service over a store, the endpoints and the router
/// behind one ``responder``. ``ModalStackServer`` puts it behind libmicrohttpd; tests call the
/// responder directly.
public final class ModalStackApplication: Sendable {
    /// Answers every request the API knows (and 404, 405 and CORS preflights for the rest).
    public let responder: any HTTPResponder
    let service: SessionService
    private let readiness: Readiness
    private let sweeper: ExpirySweeper
    private let metrics: Metrics
    let accessLog: AccessLog
    private let time: any TimeSource
    /// The methods some route answers: the others share one metrics label. A handful, compared
    /// rather than hashed for every request.
    private let methods: [String]

    /// Reads the files the configuration names, then opens the store with `openStore` (so a bad
    /// file leaves no database behind; the engine and its options are the caller's). The application closes the store in ``stop()``.
    /// - Parameters:
    ///   - time: Where every clock and timer reads the time.
    ///   - makeID: Makes presentation and session ids; unguessable ones by default.
    public init(
        configuration: ServerConfiguration, time: any TimeSource = SystemTime(),
        makeID: @escaping @Sendable () -> String = RandomID.make,
        openStore: () throws -> any SessionStore
    ) throws {
        self.time = time
        let catalog = try configuration.catalogPath.map(Self.loadCatalog)
        let apiKeys = try Self.apiKeys(configuration)
        let tokenKeys = try Self.loadTokenKeys(configuration)
        let store = try openStore()
        let metrics = Metrics()
        let rules = SessionRules(
            maxDepth: configuration.maxDepth, queueSize: configuration.queueSize,
            sessionTTLSeconds: Int64(configuration.sessionTTLSeconds), maxPathDepth: configuration.maxPathDepth)
        let service = SessionService(
            store: store, rules: rules, catalog: catalog, metrics: metrics,
            cacheSize: configuration.cacheSize, maxStaleness: .milliseconds(configuration.maxStalenessMilliseconds),
            time: time, makeID: makeID)
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
        let accessLog = AccessLog(format: configuration.logFormat, minimumLevel: configuration.logLevel)
        let endpoints = Endpoints(
            service: service, changes: HTTPChanges(service: service, requiresIfMatch: configuration.requireIfMatch),
            readiness: readiness, watch: watch, metrics: metrics, log: accessLog, time: time, access: access,
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
        self.methods = router.methods.union(["OPTIONS"]).sorted()
        self.responder = CrossOrigin.Responder(policy: crossOrigin, next: router)
        self.accessLog = accessLog
        self.metrics = metrics
        self.service = service
        self.readiness = readiness
        self.sweeper = ExpirySweeper(
            service: service, intervalSeconds: min(max(configuration.sessionTTLSeconds / 4, 1), 60))
    }

    /// Starts the expiry sweep; from here on the application is ready.
    public func start() {
        sweeper.start()
        readiness.enter(.serving)
    }

    /// Turns readiness to 503 (`shutting down`) while everything else keeps serving.
    public func stopBeingReady() {
        readiness.enter(.draining)
    }

    /// The first half of a stop: not ready, no more sweeps, long polls answer 304 and event
    /// streams end. Requests in flight may still finish.
    func stopServing() {
        stopBeingReady()
        sweeper.stop()
        service.notifier.publish(.shutdown)
    }

    /// The second half, once no request is in flight: checkpoints and closes the store.
    func close() {
        service.close()
        accessLog.output.flush()
    }

    /// Stops and closes everything (for an application no transport serves).
    public func stop() {
        stopServing()
        close()
    }

    /// Counts a finished request in the metrics and writes its access-log line.
    func record(_ completed: CompletedRequest) {
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

    // MARK: Files the configuration names

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
