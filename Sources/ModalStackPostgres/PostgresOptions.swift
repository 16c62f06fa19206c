import Settings

/// The PostgreSQL database sessions live in, when one is given, and how many connections reach it.
public struct PostgresOptions: Sendable, Equatable {
    /// A PostgreSQL connection URL or libpq string. Never printed (it may hold a password).
    public var url: String?
    /// How many connections to PostgreSQL background reads use at most (requests read on their own).
    public var poolSize = 8
    /// What stands between the instance and PostgreSQL on `url`.
    public var pooler = Pooler.none
    /// Where LISTEN connects: PostgreSQL itself, past any pooler; `url` when nil. Never printed.
    public var listenURL: String?

    public enum Pooler: String, Sendable, CaseIterable {
        /// Each connection is a PostgreSQL session of its own.
        case none
        /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`): consecutive
        /// transactions of one connection may run on different server sessions, so nothing may
        /// outlive a transaction — no named prepared statement, no session setting, no LISTEN.
        case transaction
    }

    public init() {}

    public static let settings = SettingsTable<PostgresOptions>(
        [
            .text(
                "database-url", "URL",
                "a PostgreSQL database (postgresql://user:password@host/name) instead of the SQLite file", \.url,
                printed: false, expected: "expected a postgresql:// URL or a libpq connection string"),
            .integer(
                "database-pool-size",
                "connections to PostgreSQL for background reads (the expiry sweep, readiness, metrics); every other read goes on 4 more, commits and notifications on 1 each",
                1...1000, \.poolSize),
            .choice(
                "database-pooler", "POOLER",
                "none, or transaction when --database-url goes through PgBouncer in transaction mode", \.pooler),
            .text(
                "database-listen-url", "URL",
                "PostgreSQL itself, for LISTEN (needed with --database-pooler transaction; default --database-url)",
                \.listenURL, printed: false, expected: "expected a postgresql:// URL or a libpq connection string"),
        ],
        checks: [
            { options in
                options.pooler == .transaction && options.listenURL == nil
                    ? "--database-pooler transaction needs --database-listen-url: LISTEN needs a session of its own, which a transaction pooler does not keep"
                    : nil
            },
            { options in
                options.url == nil && (options.pooler != .none || options.listenURL != nil)
                    ? "--database-pooler and --database-listen-url are for --database-url" : nil
            },
        ])
}
