import CSQLite
import ModalStackCore
import ModalStackStore

/// The `sessions` and `dismissed_presentations` rows: how a session's row is written, and read
/// back. A row may be older than the session's newest version (see ``UnwrittenSessions``).
struct SessionRows: Sendable {
    let retention: RetentionPolicy

    /// Writes the row of `session` and what left it since the row was last written.
    func writeBack(_ session: Session, dismissed: [DismissedPresentation], on connection: SQLiteConnection)
        throws(SQLiteError)
    {
        try save(
            session, path: RowCodec.encode(session.path), stack: RowCodec.encode(session.stack),
            queue: RowCodec.encode(session.queue), on: connection)
        try saveDismissed(dismissed, sessionID: session.id, on: connection)
    }

    /// Inserts or updates the session's row. Most changes leave its expiry and its change time in
    /// the same buckets: those update the row alone, without touching either index.
    func save(_ session: Session, path: String, stack: String, queue: String, on connection: SQLiteConnection)
        throws(SQLiteError)
    {
        let expiresAt = session.expiresAt.millisecondsSinceEpoch
        let updatedAt = session.updatedAt.millisecondsSinceEpoch
        let values: [SQLiteStatement.Value] = [
            .text(session.id), .integer(session.version), .integer(session.createdAt.millisecondsSinceEpoch),
            .integer(updatedAt), .text(stack), .text(queue), .integer(session.ttlSeconds), .integer(expiresAt),
            .integer(expiresAt / Schema.expiryBucketMilliseconds),
            .integer(updatedAt / Schema.updatedBucketMilliseconds), .text(path),
        ]
        try connection.statement(
            """
            UPDATE sessions SET version = ?2, updated_at = ?4, stack = ?5, queue = ?6, ttl = ?7, expires_at = ?8,
                path = ?11
            WHERE id = ?1 AND expiry_bucket = ?9 AND updated_bucket = ?10
            """
        ).run(values)
        guard sqlite3_changes(connection.handle) == 0 else { return }
        try connection.statement(
            """
            INSERT INTO sessions (
                id, version, created_at, updated_at, stack, queue, ttl, expires_at, expiry_bucket, updated_bucket, path)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                stack = excluded.stack, queue = excluded.queue, ttl = excluded.ttl, expires_at = excluded.expires_at,
                expiry_bucket = excluded.expiry_bucket, updated_bucket = excluded.updated_bucket, path = excluded.path
            """
        ).run(values)
    }

    /// Keeps what left the session readable: the newest the retention policy keeps per session.
    func saveDismissed(_ dismissed: [DismissedPresentation], sessionID: String, on connection: SQLiteConnection)
        throws(SQLiteError)
    {
        guard !dismissed.isEmpty else { return }
        let insert = try connection.statement(
            "INSERT OR REPLACE INTO dismissed_presentations (session_id, id, sequence, document) VALUES (?, ?, ?, ?)")
        for dismissed in dismissed {
            try insert.run([
                .text(sessionID), .text(dismissed.presentation.id), .integer(dismissed.sequence),
                .text(dismissed.presentation.jsonText),
            ])
        }
        try connection.statement(
            """
            DELETE FROM dismissed_presentations WHERE session_id = ?1 AND sequence <
                (SELECT sequence FROM dismissed_presentations WHERE session_id = ?1
                 ORDER BY sequence DESC LIMIT 1 OFFSET ?2)
            """
        ).run([.text(sessionID), .integer(Int64(retention.dismissedPresentationsKept - 1))])
    }

    /// The session's row, as written.
    func row(_ id: String, on connection: SQLiteConnection) throws(SQLiteError) -> SessionRow? {
        let statement = try connection.statement(
            "SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions WHERE id = ?")
        try statement.bind([.text(id)])
        defer { statement.reset() }
        return try statement.step() ? SessionRow(statement) : nil
    }
}

/// A `sessions` row as read by `SELECT id, version, created_at, updated_at, stack, queue, ttl, path`,
/// copied out of the statement on the connection's lock and decoded after it.
struct SessionRow: Sendable {
    let id: String
    let version: Int64
    let createdAt: Int64
    let updatedAt: Int64
    let stack: String
    let queue: String
    let ttl: Int64
    let path: String

    init(_ statement: SQLiteStatement) {
        id = statement.text(at: 0)
        version = statement.integer(at: 1)
        createdAt = statement.integer(at: 2)
        updatedAt = statement.integer(at: 3)
        stack = statement.text(at: 4)
        queue = statement.text(at: 5)
        ttl = statement.integer(at: 6)
        path = statement.text(at: 7)
    }

    func session() throws(StoreError) -> Session {
        try RowCodec.session(
            id: id, version: version, createdAt: createdAt, updatedAt: updatedAt, path: path, stack: stack,
            queue: queue, ttl: ttl)
    }
}
