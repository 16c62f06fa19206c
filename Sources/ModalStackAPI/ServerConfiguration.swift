import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// Every setting of the server. Each is a flag and a `MODALSTACK_*` environment variable;
/// flags win over the environment, the environment over the defaults. An empty variable counts as
/// unset (as `VAR=` in a compose file or a shell leaves it), so the default holds.
public struct ServerConfiguration: Sendable, Equatable {
    public var host = "0.0.0.0"
    public var port: UInt16 = 8080
    public var databasePath = "./data/modalstack.sqlite"
    /// A PostgreSQL connection URL or libpq string: when set, sessions live there, not in the
    /// SQLite file. Never printed (it may hold a password).
    public var databaseURL: String?
    /// How many connections to PostgreSQL reads use at most.
    public var databasePoolSize = 8
    public var catalogPath: String?
    public var maxDepth = SessionRules.defaultMaxDepth
    public var queueSize = SessionRules.defaultQueueSize
    public var maxPathDepth = SessionRules.defaultMaxPathDepth
    public var durability = Durability.normal
    /// A quota for the database file in bytes; 0 is none.
    public var maxDatabaseBytes = 0
    public var requireIfMatch = false
    public var maxWaitSeconds = 30
    public var eventLogSize = RetentionPolicy.standard.eventLogSize
    public var idempotencyLifetimeSeconds = Int(RetentionPolicy.standard.idempotencyLifetimeMilliseconds / 1000)
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
    /// How many sessions the in-memory working set holds; misses read from the store.
    public var workingSetSessions = 10_000
    public var threads = 2
    public var connectionLimit = 1024
    public var connectionTimeoutSeconds = 30
    public var maxBodyBytes = 64 * 1024

    public init() {}

    /// What the store keeps of each session's past, and for how long.
    public var retention: RetentionPolicy {
        RetentionPolicy(
            eventLogSize: eventLogSize, dismissedPresentationsKept: RetentionPolicy.standard.dismissedPresentationsKept,
            idempotencyLifetimeMilliseconds: Int64(idempotencyLifetimeSeconds) * 1000)
    }

    /// Reads the command line (without the program name) over the environment.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError)
        -> ServerConfiguration
    {
        var configuration = ServerConfiguration()
        for setting in settings {
            if let value = environment[setting.environmentVariable], !value.isEmpty {
                try setting.apply(value, to: &configuration, from: setting.environmentVariable)
            }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inlineValue) = splitFlag(argument)
            guard let setting = settings.first(where: { "--" + $0.flag == flag }) else {
                throw ConfigurationError("unknown option \(argument); see --help")
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if let alone = setting.valueWhenAlone,
                index + 1 == arguments.count || arguments[index + 1].hasPrefix("-")
            {
                value = alone
            } else {
                index += 1
                guard index < arguments.count else { throw ConfigurationError("--\(setting.flag) needs a value") }
                value = arguments[index]
            }
            try setting.apply(value, to: &configuration, from: "--" + setting.flag)
            index += 1
        }
        return configuration
    }

    /// The text of `modalstack --help`.
    public static var helpText: String {
        let defaults = ServerConfiguration()
        var lines = [
            "usage: modalstack [options]",
            "",
            "ModalStack serves the modal navigation state of apps, per session, over HTTP.",
            "Every option may also be given as its environment variable; options win.",
            "A true/false option given alone means true.",
            "",
        ]
        for setting in settings {
            lines.append("  --\(setting.flag) \(setting.valueName)")
            lines.append(
                "      \(setting.summary) (env \(setting.environmentVariable), default \(setting.defaultValue(defaults)))"
            )
        }
        lines.append("  --help")
        lines.append("      print this text and exit")
        return lines.joined(separator: "\n")
    }

    private static func splitFlag(_ argument: String) -> (flag: String, value: String?) {
        guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}

/// A setting that cannot be used; the message names it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// One setting: its flag, its environment variable, how to read it, and its documentation.
private struct Setting: Sendable {
    let flag: String
    let valueName: String
    let summary: String
    let defaultValue: @Sendable (ServerConfiguration) -> String
    let assign: @Sendable (inout ServerConfiguration, String) -> String?
    /// The value of the flag given alone (at the end, or before another option); `nil` when it
    /// always takes one. Otherwise the next argument is its value, refused if it is not valid.
    var valueWhenAlone: String? = nil

    var environmentVariable: String {
        "MODALSTACK_" + flag.uppercased().replacing("-", with: "_")
    }

    /// Applies `value`, or fails naming `source` and what is wrong.
    func apply(_ value: String, to configuration: inout ServerConfiguration, from source: String)
        throws(ConfigurationError)
    {
        if let problem = assign(&configuration, value) {
            throw ConfigurationError("invalid \(source) \"\(value)\": \(problem)")
        }
    }

    /// A whole-number setting within `range`.
    static func integer(
        _ flag: String, _ summary: String, _ range: ClosedRange<Int>,
        _ keyPath: any WritableKeyPath<ServerConfiguration, Int> & Sendable
    ) -> Setting {
        Setting(
            flag: flag, valueName: "N", summary: summary,
            defaultValue: { String($0[keyPath: keyPath]) },
            assign: { configuration, text in
                guard let value = Int(text), range.contains(value) else {
                    return "expected a whole number from \(range.lowerBound) to \(range.upperBound)"
                }
                configuration[keyPath: keyPath] = value
                return nil
            })
    }

    /// A `true`/`false` setting; the flag alone means `true`.
    static func boolean(
        _ flag: String, _ summary: String, _ keyPath: any WritableKeyPath<ServerConfiguration, Bool> & Sendable
    ) -> Setting {
        Setting(
            flag: flag, valueName: "[true|false]", summary: summary,
            defaultValue: { String($0[keyPath: keyPath]) },
            assign: { configuration, text in
                guard let value = Bool(text) else { return "expected true or false" }
                configuration[keyPath: keyPath] = value
                return nil
            },
            valueWhenAlone: "true")
    }

    /// One of an enumeration's raw values.
    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ flag: String, _ valueName: String, _ summary: String,
        _ keyPath: any WritableKeyPath<ServerConfiguration, Choice> & Sendable
    ) -> Setting where Choice.RawValue == String {
        Setting(
            flag: flag, valueName: valueName, summary: summary,
            defaultValue: { $0[keyPath: keyPath].rawValue },
            assign: { configuration, text in
                guard let value = Choice(rawValue: text) else {
                    return "expected one of " + Choice.allCases.map(\.rawValue).joined(separator: ", ")
                }
                configuration[keyPath: keyPath] = value
                return nil
            })
    }

    /// A comma-separated list of one or more non-empty items, each refused when `itemProblem` names
    /// what is wrong with it; a secret one is never printed.
    static func list(
        _ flag: String, _ valueName: String, _ summary: String,
        _ keyPath: any WritableKeyPath<ServerConfiguration, [String]> & Sendable, printed: Bool,
        itemProblem: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> Setting {
        Setting(
            flag: flag, valueName: valueName, summary: summary,
            defaultValue: { configuration in
                let items = configuration[keyPath: keyPath]
                return printed && !items.isEmpty ? items.joined(separator: ",") : "none"
            },
            assign: { configuration, text in
                let items = text.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
                guard !items.isEmpty else { return "expected one or more comma-separated values" }
                if let problem = items.lazy.compactMap(itemProblem).first { return problem }
                configuration[keyPath: keyPath] = items
                return nil
            })
    }

    /// A file path (or other non-empty text) that may be absent.
    static func path(
        _ flag: String, _ summary: String, _ keyPath: any WritableKeyPath<ServerConfiguration, String?> & Sendable
    ) -> Setting {
        Setting(
            flag: flag, valueName: "FILE", summary: summary,
            defaultValue: { $0[keyPath: keyPath] ?? "none" },
            assign: { configuration, text in
                guard !text.isEmpty else { return "expected a file path" }
                configuration[keyPath: keyPath] = text
                return nil
            })
    }
}

private let settings: [Setting] = [
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
    Setting(
        flag: "db", valueName: "PATH", summary: "the SQLite database file; its directory is created",
        defaultValue: { $0.databasePath },
        assign: { configuration, text in
            guard !text.isEmpty else { return "expected a file path" }
            configuration.databasePath = text
            return nil
        }),
    Setting(
        flag: "database-url", valueName: "URL",
        summary: "a PostgreSQL database (postgresql://user:password@host/name) instead of the SQLite file",
        defaultValue: { $0.databaseURL == nil ? "none" : "set" },
        assign: { configuration, text in
            guard !text.isEmpty else { return "expected a postgresql:// URL or a libpq connection string" }
            configuration.databaseURL = text
            return nil
        }),
    .integer(
        "database-pool-size", "connections to PostgreSQL for reads (commits and notifications use one more each)",
        1...1000, \.databasePoolSize),
    .path(
        "catalog", "a JSON catalog of destinations; without one any destination and style is accepted", \.catalogPath),
    .integer("max-depth", "the most presentations one stack may hold", 1...64, \.maxDepth),
    .integer("queue-size", "the most presentations one session's queue may hold", 0...1024, \.queueSize),
    .integer("max-path-depth", "the most screens one level's push path may hold", 1...64, \.maxPathDepth),
    .choice(
        "durability", "MODE", "normal: a commit survives a crash of the process; full: it also survives power loss",
        \.durability),
    .integer(
        "max-db-size", "a quota for the SQLite database in bytes (0: none); past it writes answer 507 and reads go on",
        0...Int(Int32.max) * 4096, \.maxDatabaseBytes),
    .boolean("require-if-match", "refuse changes without If-Match (428)", \.requireIfMatch),
    .integer("max-wait", "the longest a long poll (Prefer: wait) is held, in seconds", 0...3600, \.maxWaitSeconds),
    .integer(
        "event-log-size", "changes kept in each session's event log; older ones are pruned", 1...1_000_000,
        \.eventLogSize),
    .integer(
        "idempotency-ttl", "seconds an Idempotency-Key's response is kept for replay", 1...30 * 86_400,
        \.idempotencyLifetimeSeconds),
    .integer("sse-heartbeat", "seconds between heartbeat comments on event streams", 1...3600, \.heartbeatSeconds),
    .integer(
        "session-ttl", "seconds a session lives without a change; a session may ask for its own (ttl)",
        1...Int(SessionRules.sessionTTLRange.upperBound), \.sessionTTLSeconds),
    .list(
        "api-key", "KEYS", "API keys (comma-separated) that /v1 requests must send as Authorization: Bearer",
        \.apiKeys, printed: false),
    .path("api-key-file", "a file of API keys, one per line (added to --api-key)", \.apiKeyFile),
    .boolean("auth-operations", "require the API key on /livez, /readyz and /metrics too", \.authenticateOperations),
    .list(
        "token-secret", "SECRETS", "HS256 secrets (comma-separated) client tokens may be signed with; the first signs",
        \.tokenSecrets, printed: false),
    .path("token-secret-file", "a file of token secrets, one per line (added to --token-secret)", \.tokenSecretFile),
    .list(
        "token-public-key", "FILES",
        "PEM public keys (Ed25519 or P-256, comma-separated files) tokens may be signed for",
        \.tokenPublicKeyFiles, printed: true),
    Setting(
        flag: "token-audience", valueName: "AUDIENCE", summary: "the aud a client token must name",
        defaultValue: { $0.tokenAudience ?? "none" },
        assign: { configuration, text in
            guard !text.isEmpty else { return "expected an audience" }
            configuration.tokenAudience = text
            return nil
        }),
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
        \.workingSetSessions),
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
