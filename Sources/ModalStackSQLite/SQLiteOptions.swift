import Settings

/// Where the SQLite engine keeps sessions, and how large the file may grow.
public struct SQLiteOptions: Sendable, Equatable {
    public var path = "./data/modalstack.sqlite"
    /// A quota for the database file in bytes; 0 is none.
    public var maxSizeBytes = 0

    public init() {}

    public static let settings = SettingsTable<SQLiteOptions>([
        Setting(
            flag: "db", valueName: "PATH", summary: "the SQLite database file; its directory is created",
            defaultValue: { $0.path },
            assign: { options, text in
                guard !text.isEmpty else { return "expected a file path" }
                options.path = text
                return nil
            }),
        .integer(
            "max-db-size",
            "a quota for the SQLite database in bytes (0: none); past it writes answer 507 and reads go on",
            0...Int(Int32.max) * 4096, \.maxSizeBytes),
    ])
}
