import CSQLite
import Glibc
import Locking
import ModalStackCore
import ModalStackStore
import Timekeeping

/// The SQLite session store: one writer connection and one reader connection over a WAL
/// database, so reads never wait for a commit.
///
/// A change is durable as its record alone, a row appended to `changes` on pages the whole group
/// commit shares. The session's own row, on a page of its own, is written back later: once the
/// change is ``writeBackAge`` changes old, before the event log would delete an unwritten change,
/// and when the store closes; until then ``UnwrittenSessions`` answers for it. Opening the file
/// replays the changes a killed process left beyond the rows onto them, with the core's one
/// `apply` (``SessionHistory``).
public final class SQLiteSessionStore: SessionStore {
    public let path: String
    /// How many changes later an unwritten session's row is written back: in this window, every
    /// further change of the session costs no write of its row. Up to this many sessions are held
    /// in memory meanwhile; at 16,384 a write load over 100k sessions took 10 MiB more.
    public let writeBackAge: Int64
    let retention: RetentionPolicy
    let rows: SessionRows
    private let time: any TimeSource
    let unwritten: LockedValue<UnwrittenSessions>
    /// Nil once the store is closed.
    private let writer: LockedValue<SQLiteConnection?>
    private let reader: LockedValue<SQLiteConnection?>
    private let checkpointer: WALCheckpointer

    /// Opens the database at `path`, creating and migrating it when new. Refuses a file that is
    /// not a ModalStack database or is newer than this build, and never writes to such a file.
    public init(
        path: String, durability: Durability = .normal, retention: RetentionPolicy = .standard,
        maxSizeBytes: Int64? = nil, busyTimeoutMilliseconds: Int32 = 5000, writeBackAge: Int64 = 4096,
        time: any TimeSource = SystemTime()
    ) throws(StoreError) {
        self.path = path
        self.writeBackAge = writeBackAge
        self.time = time
        self.retention = retention
        rows = SessionRows(retention: retention)
        let writer: SQLiteConnection
        let reader: SQLiteConnection
        let checkpointer: WALCheckpointer
        do {
            if access(path, F_OK) == 0 {
                // Identify an existing file on a read-only connection first: closing a read-write
                // one would checkpoint another application's WAL into its database.
                _ = try Self.schemaVersion(of: try SQLiteConnection(path: path, readOnly: true))
            }
            writer = try SQLiteConnection(path: path, create: true)
            sqlite3_busy_timeout(writer.handle, busyTimeoutMilliseconds)
            try Self.migrate(writer, rows: rows)
            // normal is synchronous=NORMAL (a crash of the process loses nothing); full is FULL (the
            // WAL is synced on every commit, so power loss loses nothing either).
            let synchronous = durability.rawValue.uppercased()
            try writer.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous)")
            checkpointer = try WALCheckpointer(path: path, synchronous: synchronous, writer: writer)
            if let maxSizeBytes {
                // A quota: past it, writes fail with SQLITE_FULL (507) and reads go on.
                let pageSize = try writer.integer("PRAGMA page_size") ?? 4096
                _ = try writer.integer("PRAGMA max_page_count = \(max(maxSizeBytes / pageSize, 1))")
            }
            reader = try SQLiteConnection(path: path)
            sqlite3_busy_timeout(reader.handle, busyTimeoutMilliseconds)
        } catch {
            throw Self.storeError(error, path: path)
        }
        self.writer = LockedValue(writer)
        self.reader = LockedValue(reader)
        self.checkpointer = checkpointer
        unwritten = LockedValue(UnwrittenSessions(nextRowID: 1, writtenThrough: 0))
        try recover()
    }

    /// One process owns the file: the session cache in memory is the truth.
    public var isShared: Bool { false }

    public func session(id: String) throws(StoreError) -> Session? {
        if let entry = unwritten.withLock({ $0.entries[id] }) { return entry.session }
        let rows = self.rows
        return try read { connection throws(SQLiteError) in try rows.row(id, on: connection) }?.session()
    }

    /// The rows' order, with the unwritten sessions in their place: their rows are skipped, their
    /// newest versions merged in.
    public func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError)
        -> [Session]
    {
        func isBefore(_ a: Session, _ b: SessionCursor) -> Bool {
            a.updatedAt != b.updatedAt ? a.updatedAt < b.updatedAt : a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
        let (candidates, unwrittenIDs) = unwritten.withLock { state in
            (
                state.entries.values.map(\.session).filter { session in
                    !session.isExpired(at: now) && cursor.map { isBefore(session, $0) } ?? true
                }, Set(state.entries.keys)
            )
        }
        var sessions: [Session] = []
        var tableCursor = cursor
        while true {
            let page = try storedSessions(after: tableCursor, limit: limit, at: now)
            sessions += page.filter { !unwrittenIDs.contains($0.id) }
            guard let last = page.last, page.count == limit, sessions.count < limit else { break }
            tableCursor = SessionCursor(updatedAt: last.updatedAt, id: last.id)
        }
        guard !candidates.isEmpty else { return Array(sessions.prefix(limit)) }
        return Array(
            (sessions + candidates).sorted { a, b in isBefore(b, SessionCursor(updatedAt: a.updatedAt, id: a.id)) }
                .prefix(limit))
    }

    /// A page of ``recentSessions(after:limit:at:)`` as the rows have it.
    private func storedSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError)
        -> [Session]
    {
        let rows: [SessionRow] = try read { connection throws(SQLiteError) in
            // The index orders by the minute; SQLite sorts each minute's rows by the rest of the key.
            let statement = try connection.statement(
                """
                SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions
                WHERE updated_bucket <= ?1 / ?2 AND (updated_at, id) < (?1, ?3) AND expires_at > ?4
                ORDER BY updated_bucket DESC, updated_at DESC, id DESC LIMIT ?5
                """)
            try statement.bind([
                .integer(cursor?.updatedAt.millisecondsSinceEpoch ?? Int64.max),
                .integer(Schema.updatedBucketMilliseconds), .text(cursor?.id ?? ""),
                .integer(now.millisecondsSinceEpoch), .integer(Int64(limit)),
            ])
            defer { statement.reset() }
            var rows: [SessionRow] = []
            while try statement.step() { rows.append(SessionRow(statement)) }
            return rows
        }
        return try rows.map { row throws(StoreError) in try row.session() }
    }

    public func sessionCount() throws(StoreError) -> Int {
        try read { connection throws(SQLiteError) in Int(try connection.integer("SELECT count(*) FROM sessions") ?? 0) }
    }

    /// An unwritten session's row may hold an earlier expiry: the unwritten sessions are judged
    /// by their newest versions instead.
    public func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String] {
        let (expired, unwrittenIDs) = unwritten.withLock { state in
            (state.entries.values.filter { $0.session.isExpired(at: now) }.map(\.session.id), Set(state.entries.keys))
        }
        let stored = try storedExpiredSessionIDs(at: now, limit: limit + unwrittenIDs.count)
        return Array((stored.filter { !unwrittenIDs.contains($0) } + expired).prefix(limit))
    }

    private func storedExpiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String] {
        return try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                "SELECT id FROM sessions WHERE expiry_bucket <= ?1 / ?2 AND expires_at <= ?1 LIMIT ?3")
            try statement.bind([
                .integer(now.millisecondsSinceEpoch), .integer(Schema.expiryBucketMilliseconds), .integer(Int64(limit)),
            ])
            defer { statement.reset() }
            var ids: [String] = []
            while try statement.step() { ids.append(statement.text(at: 0)) }
            return ids
        }
    }

    public func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation? {
        let dismissed = unwritten.withLock { $0.entries[sessionID]?.dismissed.last { $0.presentation.id == id } }
        if let dismissed { return dismissed.presentation }
        let document: String?
        document = try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                "SELECT document FROM dismissed_presentations WHERE session_id = ? AND id = ?")
            try statement.bind([.text(sessionID), .text(id)])
            defer { statement.reset() }
            return try statement.step() ? statement.text(at: 0) : nil
        }
        return try document.map { document throws(StoreError) in try RowCodec.decodeOne(document) }
    }

    /// The changes the log shows, the newest ``RetentionPolicy/eventLogSize``; the table may
    /// hold a few older ones, down to a checkpoint (``RetentionPolicy/changesDeleted(whenLogging:)``).
    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]
    {
        let eventLogSize = Int64(retention.eventLogSize)
        let records: [String]
        records = try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                """
                SELECT record FROM changes WHERE session_id = ?1 AND version > ?2
                    AND version > (SELECT max(version) FROM changes WHERE session_id = ?1) - ?3
                ORDER BY version LIMIT ?4
                """)
            // A change holds at least one event, so `eventLimit` rows are always enough.
            try statement.bind([
                .text(sessionID), .integer(version), .integer(eventLogSize), .integer(Int64(max(eventLimit, 1))),
            ])
            defer { statement.reset() }
            var records: [String] = []
            while try statement.step() { records.append(statement.text(at: 0)) }
            return records
        }
        return try RowCodec.decodeChanges(records, sessionID: sessionID, eventLimit: eventLimit)
    }

    public func history(sessionID: String, through version: Int64) throws(StoreError) -> SessionHistory? {
        let (current, logged) = try read { connection throws(SQLiteError) in
            let current = try connection.statement("SELECT max(version) FROM changes WHERE session_id = ?")
            try current.bind([.text(sessionID)])
            defer { current.reset() }
            guard try current.step(), !current.isNull(at: 0) else { return (Int64(0), [LoggedChange]()) }
            let statement = try connection.statement(
                """
                SELECT version, record, checkpoint FROM changes WHERE session_id = ?1 AND version <= ?2
                    AND version >= coalesce((SELECT max(version) FROM changes
                        WHERE session_id = ?1 AND version <= ?2 AND checkpoint IS NOT NULL), 1)
                ORDER BY version
                """)
            try statement.bind([.text(sessionID), .integer(version)])
            defer { statement.reset() }
            var logged: [LoggedChange] = []
            while try statement.step() {
                logged.append(
                    LoggedChange(
                        version: statement.integer(at: 0), record: statement.text(at: 1),
                        checkpoint: statement.isNull(at: 2) ? nil : statement.text(at: 2)))
            }
            return (current.integer(at: 0), logged)
        }
        return try SessionHistory(
            sessionID: sessionID, version: version, current: current, rows: logged, retention: retention)
    }

    public func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse? {
        let oldestKept = retention.oldestResponseKept(at: time.now())
        let row: (fingerprint: [UInt8], status: Int64, headers: String, body: [UInt8], createdAt: Int64)?
        row = try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                """
                SELECT fingerprint, status, headers, body, created_at FROM idempotent_responses
                WHERE scope = ? AND key = ? AND created_at >= ?
                """)
            try statement.bind([.text(scope), .text(key), .integer(oldestKept)])
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return (
                statement.bytes(at: 0), statement.integer(at: 1), statement.text(at: 2), statement.bytes(at: 3),
                statement.integer(at: 4)
            )
        }
        guard let row else { return nil }
        return StoredResponse(
            scope: scope, key: key, fingerprint: row.fingerprint, status: Int(row.status),
            headers: try RowCodec.decodeHeaders(row.headers), body: row.body,
            createdAt: Timestamp(millisecondsSinceEpoch: row.createdAt))
    }

    /// The writes' expected versions are not checked: the service that owns the file decided
    /// each change on the latest state, and no other process writes to it.
    @discardableResult
    public func commit(_ writes: [SessionWrite]) throws(StoreError) -> Set<String> {
        guard !writes.isEmpty else { return [] }
        try write { connection throws(SQLiteError) in
            let batch = try connection.writeTransaction { () throws(SQLiteError) in
                var batch = unwritten.withLock { UnwrittenSessions.Batch(after: $0) }
                for write in writes {
                    try apply(write, on: connection, batch: &batch)
                }
                try writeBackDue(on: connection, batch: &batch)
                return batch
            }
            unwritten.withLock { $0.apply(batch) }
            if checkpointer.writerShouldCheckpoint { checkpointer.writerCheckpoint(connection) }
        }
        return []
    }

    public func pruneIdempotentResponses(at now: Timestamp, limit: Int) throws(StoreError) -> Int {
        try write { connection throws(SQLiteError) in
            try connection.statement(
                """
                DELETE FROM idempotent_responses WHERE (scope, key) IN
                    (SELECT scope, key FROM idempotent_responses WHERE created_at < ? LIMIT ?)
                """
            ).run([.integer(retention.oldestResponseKept(at: now)), .integer(Int64(limit))])
            return Int(sqlite3_changes(connection.handle))
        }
    }

    public func observeOtherWriters(_ handler: @escaping @Sendable (String?) -> Void) {}

    public func checkHealth() throws(StoreError) {
        try write { connection throws(SQLiteError) in
            // Taking the write lock proves the file is writable and not held by another process.
            try connection.writeTransaction { () throws(SQLiteError) in
                _ = try connection.integer("SELECT count(*) FROM sqlite_schema")
            }
        }
    }

    /// Runs `PRAGMA integrity_check` and returns its report (`["ok"]` when the file is sound).
    public func integrityCheck() throws(StoreError) -> [String] {
        return try read { connection throws(SQLiteError) in
            let statement = try connection.statement("PRAGMA integrity_check")
            try statement.bind([])
            defer { statement.reset() }
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(at: 0)) }
            return lines
        }
    }

    private func apply(_ write: SessionWrite, on connection: SQLiteConnection, batch: inout UnwrittenSessions.Batch)
        throws(SQLiteError)
    {
        switch write {
        case .save(let update):
            var session = update.session
            if session.version == 1 {
                // A session's first version is its row, so that every session has one: the count
                // and the indexes never miss a session.
                try rows.save(
                    session, path: update.document.pathText, stack: update.document.stackText,
                    queue: update.document.queueText, on: connection)
                try rows.saveDismissed(
                    DismissedPresentation.list(update.dismissed, dismissedBy: 1), sessionID: session.id, on: connection)
                batch.changed[session.id] = .some(nil)
            } else {
                session = try logUnwritten(update, on: connection, batch: &batch)
            }
            try connection.statement(
                "INSERT OR REPLACE INTO changes (rowid, session_id, version, record, checkpoint) VALUES (?, ?, ?, ?, ?)"
            ).run([
                .integer(batch.nextRowID), .text(session.id), .integer(session.version), .text(update.change.jsonText),
                RetentionPolicy.isCheckpoint(session.version)
                    ? .text(RowCodec.encodeCheckpoint(session, document: update.document)) : .null,
            ])
            batch.nextRowID += 1
            if let below = retention.changesDeleted(whenLogging: session.version) {
                try connection.statement("DELETE FROM changes WHERE session_id = ? AND version < ?")
                    .run([.text(session.id), .integer(below)])
            }
            if let response = update.response {
                try connection.statement(
                    """
                    INSERT OR REPLACE INTO idempotent_responses (scope, key, fingerprint, status, headers, body, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
                ).run([
                    .text(response.scope), .text(response.key), .blob(response.fingerprint),
                    .integer(Int64(response.status)),
                    .text(RowCodec.encodeHeaders(response.headers)), .blob(response.body),
                    .integer(response.createdAt.millisecondsSinceEpoch),
                ])
            }
        case .delete(let sessionID, _), .expire(let sessionID, _):
            for statement: StaticString in [
                "DELETE FROM sessions WHERE id = ?", "DELETE FROM dismissed_presentations WHERE session_id = ?",
                "DELETE FROM changes WHERE session_id = ?", "DELETE FROM idempotent_responses WHERE scope = ?",
            ] {
                try connection.statement(statement).run([.text(sessionID)])
            }
            batch.changed[sessionID] = .some(nil)
        }
    }

    /// Checkpoints the WAL into the database file and closes both connections; the store then
    /// answers every call as unavailable. Called once, on shutdown.
    public func close() {
        writer.withLock { connection in
            if let writer = connection {
                // If this fails (a full disk), the changes still hold them for the next start.
                let (entries, last) = unwritten.withLock { (Array($0.entries.values), $0.nextRowID - 1) }
                _ = try? writer.writeTransaction { () throws(SQLiteError) in
                    for entry in entries { try rows.writeBack(entry.session, dismissed: entry.dismissed, on: writer) }
                    try writer.statement("UPDATE log_state SET written_through = ?").run([.integer(last)])
                }
                unwritten.withLock { $0 = UnwrittenSessions(nextRowID: last + 1, writtenThrough: last) }
                checkpointer.stop(writer: writer)
            }
            _ = try? connection?.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection = nil
        }
        reader.withLock { $0 = nil }
    }

    /// Runs `body` on the reader connection, turning SQLite errors into store errors.
    private func read<Result>(_ body: @Sendable (SQLiteConnection) throws(SQLiteError) -> Result) throws(StoreError)
        -> Result
    {
        try use(reader, body)
    }

    /// Runs `body` on the writer connection, turning SQLite errors into store errors. Refuses,
    /// without running it, when the file is no longer at ``path`` (deleted, renamed, or its
    /// directory removed): SQLite would go on writing into the unlinked file, and every write
    /// acknowledged from then on would be gone at the next start. Only a restart opens the path again.
    func write<Result>(_ body: @Sendable (SQLiteConnection) throws(SQLiteError) -> Result) throws(StoreError)
        -> Result
    {
        let outcome = try use(writer) { connection throws(SQLiteError) -> Result? in
            var moved: Int32 = 0
            _ = sqlite3_file_control(connection.handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved)
            return moved == 0 ? try body(connection) : nil
        }
        guard let outcome else {
            throw StoreError(
                .unavailable,
                "the database \(path) was deleted or moved while the server ran; restart the server to open it again")
        }
        return outcome
    }

    private func use<Result>(
        _ connection: LockedValue<SQLiteConnection?>, _ body: @Sendable (SQLiteConnection) throws(SQLiteError) -> Result
    ) throws(StoreError) -> Result {
        let outcome = connection.withLock { connection -> Swift.Result<Result, SQLiteError>? in
            guard let connection else { return nil }
            do throws(SQLiteError) {
                return .success(try body(connection))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case nil: throw StoreError(.unavailable, "the database \(path) is closed")
        case .success(let result)?: return result
        case .failure(let error)?: throw Self.storeError(error, path: path)
        }
    }
}
