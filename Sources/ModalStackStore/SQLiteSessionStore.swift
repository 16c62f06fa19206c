import CSQLite
import ModalStackCore
import Synchronization

/// The SQLite session store: one writer connection and one reader connection over a WAL
/// database, so reads never wait for a commit.
public final class SQLiteSessionStore: SessionStore {
    /// What a commit survives before it is acknowledged.
    public enum Durability: String, Sendable, CaseIterable {
        /// WAL with `synchronous=NORMAL`: survives a crash of the process, may lose the last
        /// commits on power loss.
        case normal
        /// WAL with `synchronous=FULL`: the WAL is synced on every commit; survives power loss.
        case full
    }

    public let path: String
    private let writer: Mutex<SQLiteConnection>
    private let reader: Mutex<SQLiteConnection>

    /// Opens the database at `path`, creating and migrating it when new. Refuses a file that is
    /// not a ModalStack database or is newer than this build, and never writes to such a file.
    public init(path: String, durability: Durability = .normal, busyTimeoutMilliseconds: Int32 = 5000) throws(StoreError) {
        self.path = path
        let writer: SQLiteConnection
        let reader: SQLiteConnection
        do {
            writer = try SQLiteConnection(path: path, create: true)
            sqlite3_busy_timeout(writer.handle, busyTimeoutMilliseconds)
            try Self.migrate(writer)
            try writer.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=\(durability.rawValue.uppercased())")
            reader = try SQLiteConnection(path: path)
            sqlite3_busy_timeout(reader.handle, busyTimeoutMilliseconds)
        } catch {
            throw Self.storeError(error, path: path)
        }
        self.writer = Mutex(writer)
        self.reader = Mutex(reader)
    }

    public func session(id: String) throws(StoreError) -> Session? {
        let row: (Int64, Int64, Int64, String)?
        do {
            row = try reader.withLock { connection throws(SQLiteError) in
                let statement = try connection.statement(
                    "SELECT version, created_at, updated_at, stack FROM sessions WHERE id = ?")
                try statement.bind([.text(id)])
                defer { statement.reset() }
                guard try statement.step() else { return nil }
                return (
                    statement.integer(at: 0), statement.integer(at: 1), statement.integer(at: 2),
                    statement.text(at: 3)
                )
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
        guard let (version, createdAt, updatedAt, stack) = row else { return nil }
        return Session(
            id: id, version: version,
            createdAt: Timestamp(millisecondsSinceEpoch: createdAt),
            updatedAt: Timestamp(millisecondsSinceEpoch: updatedAt),
            stack: try StoredSession.decodeStack(stack))
    }

    public func commit(_ writes: [SessionWrite]) throws(StoreError) {
        guard !writes.isEmpty else { return }
        do {
            try writer.withLock { connection throws(SQLiteError) in
                try connection.writeTransaction { () throws(SQLiteError) in
                    for write in writes {
                        try Self.apply(write, on: connection)
                    }
                }
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    public func checkHealth() throws(StoreError) {
        do {
            try writer.withLock { connection throws(SQLiteError) in
                // Taking the write lock proves the file is writable and not held by another process.
                try connection.writeTransaction { () throws(SQLiteError) in
                    _ = try connection.integer("SELECT count(*) FROM sqlite_schema")
                }
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Runs `PRAGMA integrity_check` and returns its report (`["ok"]` when the file is sound).
    public func integrityCheck() throws(StoreError) -> [String] {
        do {
            return try reader.withLock { connection throws(SQLiteError) in
                let statement = try connection.statement("PRAGMA integrity_check")
                try statement.bind([])
                defer { statement.reset() }
                var lines: [String] = []
                while try statement.step() { lines.append(statement.text(at: 0)) }
                return lines
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private static func apply(_ write: SessionWrite, on connection: SQLiteConnection) throws(SQLiteError) {
        switch write {
        case .save(let session):
            try connection.statement(
                """
                INSERT INTO sessions (id, version, created_at, updated_at, stack) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                    stack = excluded.stack
                """
            ).run([
                .text(session.id), .integer(session.version), .integer(session.createdAt.millisecondsSinceEpoch),
                .integer(session.updatedAt.millisecondsSinceEpoch), .text(StoredSession.encodeStack(session.stack)),
            ])
        case .delete(let sessionID):
            try connection.statement("DELETE FROM sessions WHERE id = ?").run([.text(sessionID)])
        }
    }

    /// Brings the schema to `Schema.currentVersion`, each step in its own transaction.
    private static func migrate(_ connection: SQLiteConnection) throws(StoreError) {
        do {
            // Reading the header first: garbage or a truncated file fails here, before any write.
            let applicationID = try connection.integer("PRAGMA application_id") ?? 0
            let version = try connection.integer("PRAGMA user_version") ?? 0
            let tables = try connection.integer("SELECT count(*) FROM sqlite_schema") ?? 0
            let isNew = applicationID == 0 && version == 0 && tables == 0
            guard isNew || applicationID == Schema.applicationID else {
                throw StoreError(.corrupt, "\(connection.path) is an SQLite database of another application (application_id \(applicationID)); refusing to use it")
            }
            guard version <= Schema.currentVersion else {
                throw StoreError(.corrupt, "\(connection.path) has schema version \(version), newer than this build's \(Schema.currentVersion)")
            }
            for step in Int(version)..<Schema.migrations.count {
                try connection.writeTransaction { () throws(SQLiteError) in
                    try connection.execute(Schema.migrations[step])
                    try connection.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(step + 1)")
                }
            }
        } catch {
            throw storeError(error, path: connection.path)
        }
    }

    /// Sorts a failure by what a client can do about it.
    static func storeError(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? SQLiteError else { return StoreError(.failed, "database \(path): \(error)") }
        switch error.primaryCode {
        case SQLITE_FULL:
            return StoreError(.full, "the database \(path) is full: \(error.message)")
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_PERM:
            return StoreError(.unavailable, "the database \(path) is unavailable: \(error)")
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StoreError(.corrupt, "\(path) is not a valid ModalStack database: \(error)")
        default:
            return StoreError(.failed, "database \(path): \(error)")
        }
    }
}
