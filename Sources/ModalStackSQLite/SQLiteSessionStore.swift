import CSQLite
import Glibc
import Locking
import ModalStackCore
import ModalStackStore
import Timekeeping

/// The SQLite session store: one writer connection and one reader connection over a WAL
/// database, so reads never wait for a commit.
///
/// A change is durable as two appended rows, its event and the session after it (the session
/// log), on pages the whole group commit shares. The session's own row, on a page of its own,
/// is written back later: once the change is ``writeBackAge`` changes old, or when the store
/// closes; until then ``UnwrittenSessions`` answers for it. Opening the file writes back what
/// the log holds beyond the rows, which is what a killed process left.
public final class SQLiteSessionStore: SessionStore {
    public let path: String
    /// How many changes later an unwritten session's row is written back: in this window, every
    /// further change of the session costs no write of its row. Up to this many sessions are held
    /// in memory meanwhile; at 16,384 a write load over 100k sessions took 10 MiB more.
    public let writeBackAge: Int64
    private let retention: RetentionPolicy
    private let time: any TimeSource
    private let unwritten = LockedValue(UnwrittenSessions())
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
            try Self.migrate(writer)
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
        try recover()
    }

    /// Writes back what the session log holds beyond the rows, the changes of a process that
    /// ended without closing the store, and empties the log.
    private func recover() throws(StoreError) {
        let rows: [LogRow] = try write { connection throws(SQLiteError) in
            let statement = try connection.statement(
                """
                SELECT session_id, version, created_at, updated_at, ttl, stack, queue, dismissed, path
                FROM session_log ORDER BY rowid
                """)
            try statement.bind([])
            defer { statement.reset() }
            var rows: [LogRow] = []
            while try statement.step() { rows.append(LogRow(statement)) }
            return rows
        }
        guard !rows.isEmpty else { return }
        // Each session's newest version since its last deletion, and what its changes dismissed.
        var latest: [String: UnwrittenSessions.Entry] = [:]
        for row in rows {
            guard let logged = try row.session() else {
                latest[row.sessionID] = nil
                continue
            }
            let dismissed =
                try row.dismissed.map { text throws(StoreError) in try RowCodec.decodeList(text) } ?? []
            var entry =
                latest[row.sessionID]
                ?? UnwrittenSessions.Entry(session: logged, dismissed: [], since: 0, firstRowID: 0)
            entry.session = logged
            entry.dismissed += DismissedPresentation.list(dismissed, dismissedBy: logged.version)
            latest[row.sessionID] = entry
        }
        let recovered = Array(latest.values)
        try write { connection throws(SQLiteError) in
            try connection.writeTransaction { () throws(SQLiteError) in
                let version = try connection.statement("SELECT version FROM sessions WHERE id = ?")
                for var entry in recovered {
                    try version.bind([.text(entry.session.id)])
                    let stored = try version.step() ? version.integer(at: 0) : 0
                    version.reset()
                    guard stored < entry.session.version else { continue }
                    entry.dismissed.removeAll {
                        $0.sequence < RowCodec.dismissedSequence(version: stored + 1, offset: 0)
                    }
                    try writeBack(entry, on: connection)
                }
                try connection.execute("DELETE FROM session_log")
            }
        }
    }

    /// One process owns the file: the session cache in memory is the truth.
    public var isShared: Bool { false }

    public func session(id: String) throws(StoreError) -> Session? {
        if let entry = unwritten.withLock({ $0.entries[id] }) { return entry.session }
        let row: SessionRow?
        row = try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                "SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions WHERE id = ?")
            try statement.bind([.text(id)])
            defer { statement.reset() }
            return try statement.step() ? SessionRow(statement) : nil
        }
        return try row?.session()
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

    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]
    {
        let records: [String]
        records = try read { connection throws(SQLiteError) in
            let statement = try connection.statement(
                "SELECT record FROM changes WHERE session_id = ? AND version > ? ORDER BY version LIMIT ?")
            // A change holds at least one event, so `eventLimit` rows are always enough.
            try statement.bind([.text(sessionID), .integer(version), .integer(Int64(max(eventLimit, 1)))])
            defer { statement.reset() }
            var records: [String] = []
            while try statement.step() { records.append(statement.text(at: 0)) }
            return records
        }
        var changes: [SessionChange] = []
        var eventCount = 0
        for record in records where eventCount < eventLimit {
            let change = try RowCodec.decodeChange(record, sessionID: sessionID)
            changes.append(change)
            eventCount += change.events.count
        }
        return changes
    }

    public func change(sessionID: String, version: Int64) throws(StoreError) -> SessionChange? {
        let record: String?
        record = try read { connection throws(SQLiteError) in
            let statement = try connection.statement("SELECT record FROM changes WHERE session_id = ? AND version = ?")
            try statement.bind([.text(sessionID), .integer(version)])
            defer { statement.reset() }
            return try statement.step() ? statement.text(at: 0) : nil
        }
        return try record.map { record throws(StoreError) in
            try RowCodec.decodeChange(record, sessionID: sessionID)
        }
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
                var batch = unwritten.withLock { UnwrittenSessions.Batch(startingAt: $0.position) }
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
            let session = update.session
            let dismissed = DismissedPresentation.list(update.dismissed, dismissedBy: session.version)
            if session.version == 1 {
                // A session's first version is its row, so that every session has one: the count
                // and the indexes never miss a session.
                try save(
                    session, path: update.document.pathText, stack: update.document.stackText,
                    queue: update.document.queueText, on: connection)
                try saveDismissed(dismissed, sessionID: session.id, on: connection)
                batch.changed[session.id] = .some(nil)
            } else {
                try log(update, dismissed: dismissed, on: connection, batch: &batch)
            }
            try connection.statement("INSERT OR REPLACE INTO changes (session_id, version, record) VALUES (?, ?, ?)")
                .run([.text(session.id), .integer(update.change.version), .text(update.change.jsonText)])
            if let oldestKept = retention.oldestChangeKept(whenLogging: update.change.version) {
                try connection.statement("DELETE FROM changes WHERE session_id = ? AND version < ?")
                    .run([.text(session.id), .integer(oldestKept)])
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
            // The deletion's mark in the session log (a NULL version), where the log may hold the
            // session's earlier changes. An empty log needs none, so a full disk never stops a deletion then.
            if batch.appendedToLog || unwritten.withLock({ $0.logHoldsRows }) {
                try connection.statement("INSERT INTO session_log (session_id) VALUES (?)").run([.text(sessionID)])
                batch.appendedToLog = true
            }
        }
    }

    /// Appends the session after a change to the session log and makes it the session's unwritten entry.
    private func log(
        _ update: SessionUpdate, dismissed: [DismissedPresentation], on connection: SQLiteConnection,
        batch: inout UnwrittenSessions.Batch
    ) throws(SQLiteError) {
        var session = update.session
        try connection.statement(
            """
            INSERT INTO session_log (session_id, version, created_at, updated_at, ttl, stack, queue, dismissed, path)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run([
            .text(session.id), .integer(session.version), .integer(session.createdAt.millisecondsSinceEpoch),
            .integer(session.updatedAt.millisecondsSinceEpoch), .integer(session.ttlSeconds),
            .text(update.document.stackText), .text(update.document.queueText),
            dismissed.isEmpty ? .null : .text(RowCodec.encode(dismissed.map(\.presentation))),
            .text(update.document.pathText),
        ])
        let rowID = sqlite3_last_insert_rowid(connection.handle)
        batch.appendedToLog = true
        let current = unwritten.withLock { batch.entry(session.id, in: $0) }
        var entry: UnwrittenSessions.Entry
        if let current {
            entry = current
            session.createdAt = current.session.createdAt
        } else {
            // The row keeps its creation time, whatever a later version says.
            let createdAt = try connection.statement("SELECT created_at FROM sessions WHERE id = ?")
            try createdAt.bind([.text(session.id)])
            if try createdAt.step() { session.createdAt = Timestamp(millisecondsSinceEpoch: createdAt.integer(at: 0)) }
            createdAt.reset()
            entry = UnwrittenSessions.Entry(session: session, dismissed: [], since: batch.position, firstRowID: rowID)
            batch.appended.append(UnwrittenSessions.Record(since: batch.position, sessionID: session.id))
        }
        entry.session = session
        entry.dismissed = Array((entry.dismissed + dismissed).suffix(retention.dismissedPresentationsKept))
        batch.changed[session.id] = entry
        batch.position += 1
    }

    /// Writes back the rows of the sessions whose oldest unwritten change is ``writeBackAge``
    /// old, then deletes log rows no session needs any more: from the front, or all of them once
    /// no session is unwritten.
    private func writeBackDue(on connection: SQLiteConnection, batch: inout UnwrittenSessions.Batch)
        throws(SQLiteError)
    {
        let due = unwritten.withLock { $0.due(age: writeBackAge, in: batch) }
        for record in due {
            guard let entry = unwritten.withLock({ batch.entry(record.sessionID, in: $0) }) else { continue }
            try writeBack(entry, on: connection)
            batch.changed[record.sessionID] = .some(nil)
        }
        let (oldestNeeded, truncatedBelow, logHoldsRows) = unwritten.withLock {
            ($0.oldestNeededRowID(after: batch), $0.truncatedBelow, $0.logHoldsRows)
        }
        if let oldestNeeded {
            // At most a few hundred rows per commit, so that no commit waits long for the delete.
            let below = min(oldestNeeded, truncatedBelow + 256)
            guard below - truncatedBelow >= 64 else { return }
            try connection.statement("DELETE FROM session_log WHERE rowid < ?").run([.integer(below)])
            batch.truncatedBelow = below
        } else if batch.appendedToLog || logHoldsRows {
            // Empty, the log starts its rowids over.
            try connection.execute("DELETE FROM session_log")
            batch.truncatedBelow = 0
            batch.appendedToLog = false
            batch.emptiedLog = true
        }
    }

    private func writeBack(_ entry: UnwrittenSessions.Entry, on connection: SQLiteConnection) throws(SQLiteError) {
        let session = entry.session
        try save(
            session, path: RowCodec.encode(session.path), stack: RowCodec.encode(session.stack),
            queue: RowCodec.encode(session.queue), on: connection)
        try saveDismissed(entry.dismissed, sessionID: entry.session.id, on: connection)
    }

    /// Inserts or updates the session's row. Most changes leave its expiry and its change time in
    /// the same buckets: those update the row alone, without touching either index.
    private func save(
        _ session: Session, path: String, stack: String, queue: String, on connection: SQLiteConnection
    ) throws(SQLiteError) {
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
    private func saveDismissed(_ dismissed: [DismissedPresentation], sessionID: String, on connection: SQLiteConnection)
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

    /// Checkpoints the WAL into the database file and closes both connections; the store then
    /// answers every call as unavailable. Called once, on shutdown.
    public func close() {
        writer.withLock { connection in
            if let writer = connection {
                // If this fails (a full disk), the log still holds them for the next start.
                let entries = unwritten.withLock { Array($0.entries.values) }
                _ = try? writer.writeTransaction { () throws(SQLiteError) in
                    for entry in entries { try writeBack(entry, on: writer) }
                    try writer.execute("DELETE FROM session_log")
                }
                unwritten.withLock { $0 = UnwrittenSessions() }
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
    private func write<Result>(_ body: @Sendable (SQLiteConnection) throws(SQLiteError) -> Result) throws(StoreError)
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

    /// Brings the schema to `Schema.currentVersion`, each step in its own transaction.
    private static func migrate(_ connection: SQLiteConnection) throws(StoreError) {
        let version = try schemaVersion(of: connection)
        do {
            for step in Int(version)..<Schema.migrations.count {
                try connection.writeTransaction { () throws(SQLiteError) in
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
    private static func schemaVersion(of connection: SQLiteConnection) throws(StoreError) -> Int64 {
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

/// A `sessions` row as read by `SELECT id, version, created_at, updated_at, stack, queue, ttl, path`,
/// copied out of the statement on the reader's lock and decoded after it.
private struct SessionRow: Sendable {
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
            queue: queue,
            ttl: ttl)
    }
}

/// A `session_log` row, as read by recovery.
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
