import Glibc
import ModalStackAPI
import ModalStackPostgres
import ModalStackSQLite
import ModalStackStore
import Timekeeping

/// Where sessions live, chosen and set up from the configuration: PostgreSQL when a database URL
/// is given (instances may share it), otherwise the embedded SQLite file. The executable and the
/// in-process test server open their store here.
public enum Storage {
    public static func open(_ configuration: ServerConfiguration, time: any TimeSource) throws -> any SessionStore {
        if let url = configuration.databaseURL {
            guard configuration.maxDatabaseBytes == 0 else {
                throw ConfigurationError("--max-db-size is for the SQLite file; PostgreSQL has its own quotas")
            }
            return try PostgresSessionStore(
                connectionString: url, poolSize: configuration.databasePoolSize, durability: configuration.durability,
                retention: configuration.retention, time: time)
        }
        try createParentDirectory(of: configuration.databasePath)
        return try SQLiteSessionStore(
            path: configuration.databasePath, durability: configuration.durability, retention: configuration.retention,
            maxSizeBytes: configuration.maxDatabaseBytes > 0 ? Int64(configuration.maxDatabaseBytes) : nil, time: time)
    }

    /// Where sessions live, for the start-up line (a PostgreSQL URL without its password).
    public static func describe(_ configuration: ServerConfiguration) -> String {
        configuration.databaseURL.map { "PostgreSQL " + PostgresSessionStore.withoutPassword($0) }
            ?? "SQLite " + configuration.databasePath
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
