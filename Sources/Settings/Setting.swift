/// One setting of some `Options`: its flag, its environment variable, how to read it, and its
/// documentation. Each part of the server declares its own; ``SettingsTable`` puts them together.
public struct Setting<Options>: Sendable {
    public let flag: String
    public let valueName: String
    public let summary: String
    let defaultValue: @Sendable (Options) -> String
    let assign: @Sendable (inout Options, String) -> String?
    /// The value of the flag given alone (at the end, or before another option); `nil` when it
    /// always takes one. Otherwise the next argument is its value, refused if it is not valid.
    let valueWhenAlone: String?

    /// A setting read by `assign`, which stores the value and returns nil, or returns what is
    /// wrong with it.
    public init(
        flag: String, valueName: String, summary: String, defaultValue: @escaping @Sendable (Options) -> String,
        valueWhenAlone: String? = nil, assign: @escaping @Sendable (inout Options, String) -> String?
    ) {
        self.flag = flag
        self.valueName = valueName
        self.summary = summary
        self.defaultValue = defaultValue
        self.valueWhenAlone = valueWhenAlone
        self.assign = assign
    }

    /// `MODALSTACK_` and the flag in capitals, dashes as underscores.
    public var environmentVariable: String {
        "MODALSTACK_" + flag.uppercased().replacing("-", with: "_")
    }

    /// Applies `value`, or fails naming `source` and what is wrong.
    func apply(_ value: String, to options: inout Options, from source: String) throws(ConfigurationError) {
        if let problem = assign(&options, value) {
            throw ConfigurationError("invalid \(source) \"\(value)\": \(problem)")
        }
    }

    /// The same setting on the part of `Whole` that `part` reaches: how a part's settings join a
    /// larger table.
    public func on<Whole>(_ part: any WritableKeyPath<Whole, Options> & Sendable) -> Setting<Whole> {
        let defaultValue = self.defaultValue
        let assign = self.assign
        return Setting<Whole>(
            flag: flag, valueName: valueName, summary: summary, defaultValue: { defaultValue($0[keyPath: part]) },
            valueWhenAlone: valueWhenAlone, assign: { whole, text in assign(&whole[keyPath: part], text) })
    }

    // MARK: Kinds of setting

    /// A whole-number setting within `range`.
    public static func integer(
        _ flag: String, _ summary: String, _ range: ClosedRange<Int>,
        _ keyPath: any WritableKeyPath<Options, Int> & Sendable
    ) -> Setting {
        Setting(
            flag: flag, valueName: "N", summary: summary, defaultValue: { String($0[keyPath: keyPath]) },
            assign: { options, text in
                guard let value = Int(text), range.contains(value) else {
                    return "expected a whole number from \(range.lowerBound) to \(range.upperBound)"
                }
                options[keyPath: keyPath] = value
                return nil
            })
    }

    /// A `true`/`false` setting; the flag alone means `true`.
    public static func boolean(
        _ flag: String, _ summary: String, _ keyPath: any WritableKeyPath<Options, Bool> & Sendable
    ) -> Setting {
        Setting(
            flag: flag, valueName: "[true|false]", summary: summary, defaultValue: { String($0[keyPath: keyPath]) },
            valueWhenAlone: "true",
            assign: { options, text in
                guard let value = Bool(text) else { return "expected true or false" }
                options[keyPath: keyPath] = value
                return nil
            })
    }

    /// One of an enumeration's raw values.
    public static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ flag: String, _ valueName: String, _ summary: String,
        _ keyPath: any WritableKeyPath<Options, Choice> & Sendable
    ) -> Setting where Choice.RawValue == String {
        Setting(
            flag: flag, valueName: valueName, summary: summary, defaultValue: { $0[keyPath: keyPath].rawValue },
            assign: { options, text in
                guard let value = Choice(rawValue: text) else {
                    return "expected one of " + Choice.allCases.map(\.rawValue).joined(separator: ", ")
                }
                options[keyPath: keyPath] = value
                return nil
            })
    }

    /// A comma-separated list of one or more non-empty items, each refused when `itemProblem` names
    /// what is wrong with it; a secret one is never printed.
    public static func list(
        _ flag: String, _ valueName: String, _ summary: String,
        _ keyPath: any WritableKeyPath<Options, [String]> & Sendable, printed: Bool,
        itemProblem: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> Setting {
        Setting(
            flag: flag, valueName: valueName, summary: summary,
            defaultValue: { options in
                let items = options[keyPath: keyPath]
                return printed && !items.isEmpty ? items.joined(separator: ",") : "none"
            },
            assign: { options, text in
                let items = text.split(separator: ",").map { $0.trimming(" \t") }.filter { !$0.isEmpty }
                guard !items.isEmpty else { return "expected one or more comma-separated values" }
                if let problem = items.lazy.compactMap(itemProblem).first { return problem }
                options[keyPath: keyPath] = items
                return nil
            })
    }

    /// Non-empty text that may be absent (a file path, a URL, an audience); `printed: false` keeps a
    /// secret one out of `--help`, which says only whether it is set.
    public static func text(
        _ flag: String, _ valueName: String, _ summary: String,
        _ keyPath: any WritableKeyPath<Options, String?> & Sendable, printed: Bool = true,
        expected: String = "expected a file path"
    ) -> Setting {
        Setting(
            flag: flag, valueName: valueName, summary: summary,
            defaultValue: { options in
                guard let value = options[keyPath: keyPath] else { return "none" }
                return printed ? value : "set"
            },
            assign: { options, text in
                guard !text.isEmpty else { return expected }
                options[keyPath: keyPath] = text
                return nil
            })
    }
}

extension Substring {
    fileprivate func trimming(_ characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}
