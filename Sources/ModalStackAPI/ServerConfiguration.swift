import ModalStackCore
import ModalStackStore

/// Every setting of the server. Each is a flag and a `MODALSTACK_*` environment variable;
/// flags win over the environment, the environment over the defaults.
public struct ServerConfiguration: Sendable, Equatable {
    public var host = "0.0.0.0"
    public var port: UInt16 = 8080
    public var databasePath = "./data/modalstack.sqlite"
    public var maxDepth = SessionRules.defaultMaxDepth
    public var durability = SQLiteSessionStore.Durability.normal
    public var threads = 2
    public var connectionLimit = 1024
    public var connectionTimeoutSeconds = 30
    public var maxBodyBytes = 64 * 1024

    public init() {}

    /// Reads the command line (without the program name) over the environment.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        for setting in settings {
            if let value = environment[setting.environmentVariable] {
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
            "",
        ]
        for setting in settings {
            lines.append("  --\(setting.flag) \(setting.valueName)")
            lines.append("      \(setting.summary) (env \(setting.environmentVariable), default \(setting.defaultValue(defaults)))")
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

    init(_ description: String) {
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

    var environmentVariable: String {
        "MODALSTACK_" + flag.uppercased().replacing("-", with: "_")
    }

    /// Applies `value`, or fails naming `source` and what is wrong.
    func apply(_ value: String, to configuration: inout ServerConfiguration, from source: String) throws(ConfigurationError) {
        if let problem = assign(&configuration, value) {
            throw ConfigurationError("invalid \(source) \"\(value)\": \(problem)")
        }
    }

    /// A whole-number setting within `range`.
    static func integer(
        _ flag: String, _ summary: String, _ range: ClosedRange<Int>, _ keyPath: any WritableKeyPath<ServerConfiguration, Int> & Sendable
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
}

private let settings: [Setting] = [
    Setting(
        flag: "host", valueName: "ADDRESS", summary: "the IPv4 or IPv6 address to listen on",
        defaultValue: { $0.host },
        assign: { configuration, text in
            guard !text.isEmpty else { return "expected an address" }
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
    .integer("max-depth", "the most presentations one stack may hold", 1...64, \.maxDepth),
    Setting(
        flag: "durability", valueName: "MODE",
        summary: "normal: a commit survives a crash of the process; full: it also survives power loss",
        defaultValue: { $0.durability.rawValue },
        assign: { configuration, text in
            guard let mode = SQLiteSessionStore.Durability(rawValue: text) else { return "expected normal or full" }
            configuration.durability = mode
            return nil
        }),
    .integer("threads", "HTTP worker threads", 1...256, \.threads),
    .integer("connection-limit", "the most simultaneous connections; more are refused", 1...100_000, \.connectionLimit),
    .integer("connection-timeout", "seconds an idle connection is kept open", 1...3600, \.connectionTimeoutSeconds),
    .integer("max-body", "the largest request body in bytes (larger: 413)", 1024...16 * 1024 * 1024, \.maxBodyBytes),
]
