/// Every setting of some `Options`, read from the command line over the environment: flags win
/// over the environment, the environment over the defaults. An empty variable counts as unset (as
/// `VAR=` in a compose file or a shell leaves it), so the default holds. Rules that join several
/// settings are checks on the table, run once everything is read.
public struct SettingsTable<Options>: Sendable {
    public let settings: [Setting<Options>]
    /// Each returns what is wrong with a whole set of options, or nil.
    let checks: [@Sendable (Options) -> String?]

    public init(_ settings: [Setting<Options>], checks: [@Sendable (Options) -> String?] = []) {
        self.settings = settings
        self.checks = checks
    }

    /// This table's settings and checks on the part of `Whole` that `part` reaches.
    public func on<Whole>(_ part: any WritableKeyPath<Whole, Options> & Sendable) -> SettingsTable<Whole> {
        SettingsTable<Whole>(
            settings.map { $0.on(part) }, checks: checks.map { check in { whole in check(whole[keyPath: part]) } })
    }

    /// One table of both tables' settings and checks, `self`'s first.
    public static func + (first: SettingsTable, second: SettingsTable) -> SettingsTable {
        SettingsTable(first.settings + second.settings, checks: first.checks + second.checks)
    }

    /// Reads the command line (without the program name) over the environment, onto `defaults`.
    public func parse(arguments: [String], environment: [String: String], defaults: Options)
        throws(ConfigurationError) -> Options
    {
        var options = defaults
        for setting in settings {
            if let value = environment[setting.environmentVariable], !value.isEmpty {
                try setting.apply(value, to: &options, from: setting.environmentVariable)
            }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inlineValue) = Self.splitFlag(argument)
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
            try setting.apply(value, to: &options, from: "--" + setting.flag)
            index += 1
        }
        if let problem = checks.lazy.compactMap({ $0(options) }).first {
            throw ConfigurationError(problem)
        }
        return options
    }

    /// Two lines per setting for `--help`: the flag, then what it does, its variable and its default.
    public func helpLines(defaults: Options) -> [String] {
        settings.flatMap { setting in
            [
                "  --\(setting.flag) \(setting.valueName)",
                "      \(setting.summary) (env \(setting.environmentVariable), default \(setting.defaultValue(defaults)))",
            ]
        }
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
