import Glibc
import ModalStackAPI
import ModalStackSQLite
import ModalStackStore
import Timekeeping

/// The store engine, chosen and set up from the configuration: SQLite, embedded, for now the
/// only one.
enum StoreEngine {
    static func open(_ configuration: ServerConfiguration, time: any TimeSource) throws -> any SessionStore {
        try createParentDirectory(of: configuration.databasePath)
        return try SQLiteSessionStore(
            path: configuration.databasePath, durability: configuration.durability,
            eventLogSize: configuration.eventLogSize,
            idempotencyLifetimeMilliseconds: Int64(configuration.idempotencyLifetimeSeconds) * 1000,
            maxSizeBytes: configuration.maxDatabaseBytes > 0 ? Int64(configuration.maxDatabaseBytes) : nil, time: time)
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
