import Glibc
import ModalStackPostgres
import ModalStackSQLite
import ModalStackStore
import Settings
import Timekeeping

/// The options of every engine, and which one they choose: PostgreSQL when a database URL is
/// given (instances may share it), otherwise the embedded SQLite file.
public struct StorageOptions: Sendable, Equatable {
    public var sqlite = SQLiteOptions()
    public var postgres = PostgresOptions()
    public var store = StoreOptions()

    public init() {}

    public static let settings =
        SQLiteOptions.settings.on(\StorageOptions.sqlite) + PostgresOptions.settings.on(\StorageOptions.postgres)
        + StoreOptions.settings.on(\StorageOptions.store)
        + SettingsTable(
            [],
            checks: [
                { options in
                    options.postgres.url != nil && options.sqlite.maxSizeBytes != 0
                        ? "--max-db-size is for the SQLite file; PostgreSQL has its own quotas" : nil
                }
            ])
}

/// Opens the store the options choose.
public enum Storage {
    public static func open(_ options: StorageOptions, time: any TimeSource) throws -> any SessionStore {
        if let url = options.postgres.url {
            return try PostgresSessionStore(
                connectionString: url, poolSize: options.postgres.poolSize, durability: options.store.durability,
                pooler: options.postgres.pooler, listenConnectionString: options.postgres.listenURL,
                retention: options.store.retention, time: time)
        }
        try createParentDirectory(of: options.sqlite.path)
        return try SQLiteSessionStore(
            path: options.sqlite.path, durability: options.store.durability, retention: options.store.retention,
            maxSizeBytes: options.sqlite.maxSizeBytes > 0 ? Int64(options.sqlite.maxSizeBytes) : nil, time: time)
    }

    /// Where sessions live, for the start-up line (a PostgreSQL URL without its password).
    public static func describe(_ options: StorageOptions) -> String {
        options.postgres.url.map { "PostgreSQL " + PostgresSessionStore.withoutPassword($0) }
            ?? "SQLite " + options.sqlite.path
    }

    /// `mkdir -p` for the database's directory.
    private static func createParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        var prefix = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            prefix += component + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw StoreError(
                    .unavailable, "cannot create the database directory \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }
}
