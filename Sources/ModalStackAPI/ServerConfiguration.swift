import ModalStackCore
import ModalStackHTTP
import Settings

/// The settings of the server itself (the engines declare their own): each is a flag and a
/// `MODALSTACK_*` environment variable, read by ``settings``.
public struct ServerConfiguration: Sendable, Equatable {
    public var host = "0.0.0.0"
    public var port: UInt16 = 8080
    public var catalogPath: String?
    public var maxDepth = SessionRules.defaultMaxDepth
    public var queueSize = SessionRules.defaultQueueSize
    public var maxPathDepth = SessionRules.defaultMaxPathDepth
    public var requireIfMatch = false
    public var maxWaitSeconds = 30
    public var heartbeatSeconds = 15
    public var sessionTTLSeconds = Int(SessionRules.defaultSessionTTLSeconds)
    /// Keys that authorize `/v1` requests; none means the API is open. Never logged or printed.
    public var apiKeys: [String] = []
    public var apiKeyFile: String?
    /// Whether `/livez`, `/readyz` and `/metrics` need a key too.
    public var authenticateOperations = false
    /// HS256 secrets client tokens may be signed with; the first signs minted ones. Never printed.
    public var tokenSecrets: [String] = []
    public var tokenSecretFile: String?
    /// PEM files of public keys (Ed25519 or P-256) client tokens may be signed for.
    public var tokenPublicKeyFiles: [String] = []
    /// When set, a token's `aud` must name it.
    public var tokenAudience: String?
    /// The longest a token may live (`exp` after `iat`, or after now), in seconds.
    public var tokenMaxTTLSeconds = 86_400
    /// The clock skew allowed when checking `exp` and `nbf`, in seconds.
    public var tokenLeewaySeconds = 30
    /// Origins browsers may call from (exact, such as `https://app.example`), or `["*"]`; none: no CORS.
    public var corsOrigins: [String] = []
    /// Whether `/inspect` serves the inspector page.
    public var inspector = true
    public var logFormat = AccessLog.Format.json
    public var logLevel = AccessLog.Level.info
    public var shutdownTimeoutSeconds = 10
    /// Seconds between a stop signal and the drain, served as usual but with `/readyz` at 503, so that
    /// load balancers stop sending traffic before the listener closes.
    public var shutdownDelaySeconds = 0
    /// How many sessions the session cache holds in memory; misses read from the store.
    public var cacheSize = 10_000
    /// On a shared database, how old (milliseconds) a session held in memory may be and still be
    /// read without asking the database; 0: every read is confirmed (read-your-writes).
    public var maxStalenessMilliseconds = 0
    public var threads = 2
    public var connectionLimit = 1024
    public var connectionTimeoutSeconds = 30
    public var maxBodyBytes = 64 * 1024

    public init() {}

    /// Reads the command line (without the program name) over the environment, for the server's
    /// settings alone.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError)
        -> ServerConfiguration
    {
        try settings.parse(arguments: arguments, environment: environment, defaults: ServerConfiguration())
    }

    public static let settings = SettingsTable<ServerConfiguration>(serverSettings)
}

private let serverSettings: [Setting<ServerConfiguration>] = [
    Setting(
        flag: "host", valueName: "ADDRESS", summary: "the IPv4 or IPv6 address to listen on",
        defaultValue: { $0.host },
        assign: { configuration, text in
            guard HTTPServer.isValidHost(text) else { return "expected an IPv4 or IPv6 address, or localhost" }
            configuration.host = text
            return nil
        }),
    Setting(
        flag: "port", valueName: "PORT", summary: "the TCP port to listen on (0 picks a free one)",
        defaultValue: { String($0.port) },
        assign: { configuration, text in
            guard let port = UInt16(text) else { return "expected a port from 0 to 65535" }
            configuration.port = port
            return nil
        }),
    .text(
        "catalog", "FILE", "a JSON catalog of destinations; without one any destination and style is accepted",
        \.catalogPath),
    .integer("max-depth", "the most presentations one stack may hold", 1...64, \.maxDepth),
    .integer("queue-size", "the most presentations one session's queue may hold", 0...1024, \.queueSize),
    .integer("max-path-depth", "the most screens one level's push path may hold", 1...64, \.maxPathDepth),
    .boolean("require-if-match", "refuse changes without If-Match (428)", \.requireIfMatch),
    .integer("max-wait", "the longest a long poll (Prefer: wait) is held, in seconds", 0...3600, \.maxWaitSeconds),
    .integer("sse-heartbeat", "seconds between heartbeat comments on event streams", 1...3600, \.heartbeatSeconds),
    .integer(
        "session-ttl", "seconds a session lives without a change; a session may ask for its own (ttl)",
        1...Int(SessionRules.sessionTTLRange.upperBound), \.sessionTTLSeconds),
    .list(
        "api-key", "KEYS", "API keys (comma-separated) that /v1 requests must send as Authorization: Bearer",
        \.apiKeys, printed: false),
    .text("api-key-file", "FILE", "a file of API keys, one per line (added to --api-key)", \.apiKeyFile),
    .boolean("auth-operations", "require the API key on /livez, /readyz and /metrics too", \.authenticateOperations),
    .list(
        "token-secret", "SECRETS", "HS256 secrets (comma-separated) client tokens may be signed with; the first signs",
        \.tokenSecrets, printed: false),
    .text(
        "token-secret-file", "FILE", "a file of token secrets, one per line (added to --token-secret)",
        \.tokenSecretFile),
    .list(
        "token-public-key", "FILES",
        "PEM public keys (Ed25519 or P-256, comma-separated files) tokens may be signed for",
        \.tokenPublicKeyFiles, printed: true),
    .text(
        "token-audience", "AUDIENCE", "the aud a client token must name", \.tokenAudience,
        expected: "expected an audience"),
    .integer(
        "token-max-ttl", "the longest a client token may live, in seconds", 60...30 * 86_400, \.tokenMaxTTLSeconds),
    .integer("token-leeway", "clock skew allowed on a token's exp and nbf, in seconds", 0...300, \.tokenLeewaySeconds),
    .list(
        "cors-origins", "ORIGINS", "origins browsers may call from (comma-separated, exact), or *",
        \.corsOrigins, printed: true, itemProblem: originProblem),
    .boolean("inspector", "serve the inspector page at /inspect", \.inspector),
    .choice("log-format", "FORMAT", "access log lines on standard output: json or logfmt", \.logFormat),
    .choice("log-level", "LEVEL", "debug, info, warn, error or off (requests log at info, 5xx at error)", \.logLevel),
    .integer(
        "shutdown-delay", "seconds to keep serving, not ready, after SIGTERM before draining", 0...300,
        \.shutdownDelaySeconds),
    .integer(
        "shutdown-timeout", "seconds the drain after SIGTERM may take before the process exits anyway", 1...600,
        \.shutdownTimeoutSeconds),
    .integer(
        "cache-size", "sessions kept in memory (least recently used dropped; misses read the database)", 0...10_000_000,
        \.cacheSize),
    .integer(
        "max-staleness-ms",
        "on PostgreSQL, how old a session in memory may be and be read without asking the database (0: never)",
        0...60_000, \.maxStalenessMilliseconds),
    .integer("threads", "HTTP worker threads", 1...256, \.threads),
    .integer("connection-limit", "the most simultaneous connections; more are refused", 1...100_000, \.connectionLimit),
    .integer(
        "connection-timeout", "seconds an idle connection is kept open, and each request has to arrive in full",
        1...3600, \.connectionTimeoutSeconds),
    .integer("max-body", "the largest request body in bytes (larger: 413)", 1024...16 * 1024 * 1024, \.maxBodyBytes),
]

/// What is wrong with a `--cors-origins` item, or nil: `*`, or an origin as browsers send it in
/// `Origin` (RFC 6454: `scheme://host[:port]`, lowercase, no path), to which it is compared exactly.
private func originProblem(_ item: String) -> String? {
    if item == "*" { return nil }
    let notAnOrigin =
        "\(item) is not an origin: expected * or origins such as https://app.example "
        + "(scheme://host[:port], lowercase, no path)"
    guard let separator = item.firstRange(of: "://") else { return notAnOrigin }
    let scheme = item[..<separator.lowerBound]
    let authority = item[separator.upperBound...]
    // An IPv6 host is bracketed: its colons are not the port's.
    let hostEnd =
        authority.hasPrefix("[")
        ? authority.firstIndex(of: "]").map(authority.index(after:))
        : authority.firstIndex(of: ":") ?? authority.endIndex
    guard let hostEnd else { return notAnOrigin }
    let host = authority[..<hostEnd]
    let port = authority[hostEnd...]
    let isSchemeValid =
        scheme.first.map { ("a"..."z").contains($0) } == true
        && scheme.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".contains($0) }
    let isHostValid =
        !host.isEmpty
        && host.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "-._~[]:".contains($0) }
    let isPortValid = port.isEmpty || (port.hasPrefix(":") && UInt16(port.dropFirst()) != nil)
    return isSchemeValid && isHostValid && isPortValid ? nil : notAnOrigin
}
