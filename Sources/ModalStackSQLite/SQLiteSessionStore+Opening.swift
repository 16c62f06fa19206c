import CSQLite
import ModalStackStore

/// Opening a file: what it is, bringing its schema up to date, and what its failures mean.
extension SQLiteSessionStore {
    /// Brings the schema to `Schema.currentVersion`, each step in its own transaction.
    static func migrate(_ connection: SQLiteConnection, rows: SessionRows) throws(StoreError) {
        let version = try schemaVersion(of: connection)
        do {
            for step in Int(version)..<Schema.migrations.count {
                try connection.writeTransaction { () throws(SQLiteError) in
                    if step == 7 {
                        do throws(StoreError) {
                            try LegacySessionLog.writeBack(on: connection, rows: rows)
                        } catch {
                            throw SQLiteError(code: SQLITE_CORRUPT, message: error.description)
                        }
                    }
                    try connection.execute(Schema.migrations[step])
                    try connection.execute(
                        "PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(step + 1)")
                }
            }
        } catch {
            throw storeError(error, path: connection.path)
        }
    }

    /// The schema version of a new or ModalStack database; refuses anything else. Only reads:
    /// garbage or a truncated file fails here, before any write.
    static func schemaVersion(of connection: SQLiteConnection) throws(StoreError) -> Int64 {
        do {
            let applicationID = try connection.integer("PRAGMA application_id") ?? 0
            let version = try connection.integer("PRAGMA user_version") ?? 0
            let tables = try connection.integer("SELECT count(*) FROM sqlite_schema") ?? 0
            let isNew = applicationID == 0 && version == 0 && tables == 0
            guard isNew || applicationID == Schema.applicationID else {
                throw StoreError(
                    .corrupt,
                    "\(connection.path) is an SQLite database of another application (application_id \(applicationID)); refusing to use it"
                )
            }
            guard version <= Schema.currentVersion else {
                throw StoreError(
                    .corrupt,
                    "\(connection.path) has schema version \(version), newer than this build's \(Schema.currentVersion)"
                )
            }
            return version
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
