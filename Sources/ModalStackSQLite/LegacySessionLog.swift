import ModalStackCore
import ModalStackStore

/// The session log of schema versions 5 to 7: each change appended the session after it there,
/// and recovery wrote the newest back. A file a killed process of such a build left is written
/// back by ``writeBack(on:rows:)`` before migration 8 drops the table.
enum LegacySessionLog {
    /// Writes back what the log holds beyond the rows; runs in the migration's transaction.
    static func writeBack(on connection: SQLiteConnection, rows: SessionRows) throws(StoreError) {
        var logged: [LogRow] = []
        do {
            let statement = try SQLiteStatement(
                """
                SELECT session_id, version, created_at, updated_at, ttl, stack, queue, dismissed, path
                FROM session_log ORDER BY rowid
                """, on: connection)
            try statement.bind([])
            defer { statement.reset() }
            while try statement.step() { logged.append(LogRow(statement)) }
        } catch {
            throw SQLiteSessionStore.storeError(error, path: connection.path)
        }
        // Each session's newest version since its last deletion, and what its changes dismissed.
        var latest: [String: (session: Session, dismissed: [DismissedPresentation])] = [:]
        for row in logged {
            guard let session = try row.session() else {
                latest[row.sessionID] = nil
                continue
            }
            let dismissed = try row.dismissed.map { text throws(StoreError) in try RowCodec.decodeList(text) } ?? []
            latest[row.sessionID] = (
                session,
                (latest[row.sessionID]?.dismissed ?? [])
                    + DismissedPresentation.list(dismissed, dismissedBy: session.version)
            )
        }
        do {
            for (session, var dismissed) in latest.values {
                let stored = try rows.row(session.id, on: connection)?.version ?? 0
                guard stored < session.version else { continue }
                dismissed.removeAll { $0.sequence < RowCodec.dismissedSequence(version: stored + 1, offset: 0) }
                try rows.writeBack(session, dismissed: dismissed, on: connection)
            }
        } catch {
            throw SQLiteSessionStore.storeError(error, path: connection.path)
        }
    }
}

/// A `session_log` row.
private struct LogRow: Sendable {
    let sessionID: String
    /// Nil for the mark of a deletion.
    let version: Int64?
    let createdAt: Int64
    let updatedAt: Int64
    let ttl: Int64
    let stack: String
    let queue: String
    let dismissed: String?
    let path: String

    init(_ statement: SQLiteStatement) {
        sessionID = statement.text(at: 0)
        version = statement.isNull(at: 1) ? nil : statement.integer(at: 1)
        createdAt = statement.integer(at: 2)
        updatedAt = statement.integer(at: 3)
        ttl = statement.integer(at: 4)
        stack = statement.text(at: 5)
        queue = statement.text(at: 6)
        dismissed = statement.isNull(at: 7) ? nil : statement.text(at: 7)
        path = statement.isNull(at: 8) ? "[]" : statement.text(at: 8)
    }

    /// The session after the change, or nil for a deletion.
    func session() throws(StoreError) -> Session? {
        guard let version else { return nil }
        return try RowCodec.session(
            id: sessionID, version: version, createdAt: createdAt, updatedAt: updatedAt, path: path, stack: stack,
            queue: queue, ttl: ttl)
    }
}
