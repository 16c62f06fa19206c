import Settings

/// The PostgreSQL database sessions live in, when one is given, and how many connections reach it.
public struct PostgresOptions: Sendable, Equatable {
    /// A PostgreSQL connection URL or libpq string. Never printed (it may hold a password).
    public var url: String?
    /// How many connections to PostgreSQL reads use at most.
    public var poolSize = 8

    public init() {}

    public static let settings = SettingsTable<PostgresOptions>([
        .text(
            "database-url", "URL",
            "a PostgreSQL database (postgresql://user:password@host/name) instead of the SQLite file", \.url,
            printed: false, expected: "expected a postgresql:// URL or a libpq connection string"),
        .integer(
            "database-pool-size", "connections to PostgreSQL for reads (commits and notifications use one more each)",
            1...1000, \.poolSize),
    ])
}
