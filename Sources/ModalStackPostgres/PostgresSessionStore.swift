import CLibPQ
import ModalStackCore
import ModalStackStore
import Timekeeping

/// The PostgreSQL session store over libpq, for instances sharing one database: reads on a pool
/// of connections, commits on a connection of their own (one transaction per group commit, each
/// write checking the version it expects), and a listening connection that hears what other
/// instances commit.
public final class PostgresSessionStore: SessionStore {
    /// Where the store connects, with any password left out: for messages.
    public let displayName: String
    /// Where LISTEN connects: PostgreSQL itself, never through a pooler.
    private let listenConnectionString: String
    private let retention: RetentionPolicy
    private let time: any TimeSource
    private let readers: PostgresPool
    private let writers: PostgresPool
    private let changeNotifications = PostgresChangeNotifications()
    /// Reads that do not hold their caller's thread, many answered per round trip: of sessions,
    /// of idempotency keys' responses, and of logged changes.
    private let batchReads: PostgresBatchReads<StampedRead>
    private let keyLookups: PostgresBatchReads<KeyLookup>
    private let changeReads: PostgresBatchReads<ChangesRead>
    /// Reads too rare to batch (a listing, a dismissed presentation, a version's history): one
    /// statement of its own each, still without holding the caller's thread.
    private let singleReads: PostgresBatchReads<SingleRead>

    /// Connects to the database of `connectionString` (a libpq string or a `postgresql://` URL),
    /// creates or migrates the schema under an advisory lock (so instances starting together
    /// migrate once), and refuses a database holding another application's tables or a schema
    /// newer than this build, without writing to it.
    /// - Parameters:
    ///   - poolSize: how many connections synchronous reads use at most; the callback forms read on
    ///     four of their own, commits and listening on one each.
    ///   - durability: `.full` waits for the server to flush each commit to disk
    ///     (`synchronous_commit = on`); `.normal` does not (`off`): a crash of ModalStack loses
    ///     nothing, but a crash of the database server or its machine may lose the last commits
    ///     (at most about three times `wal_writer_delay`), never leaving the database inconsistent.
    ///   - pooler: what stands between the store and PostgreSQL on `connectionString`; through a
    ///     transaction pooler, statements are sent unnamed.
    ///   - listenConnectionString: where LISTEN connects (`connectionString` when nil): PostgreSQL
    ///     itself, as a transaction pooler cannot keep a LISTEN.
    public init(
        connectionString: String, poolSize: Int = 4, durability: Durability = .normal,
        pooler: PostgresOptions.Pooler = .none, listenConnectionString: String? = nil,
        retention: RetentionPolicy = .standard, time: any TimeSource = SystemTime()
    ) throws(StoreError) {
        displayName = Self.withoutPassword(connectionString)
        self.listenConnectionString = listenConnectionString ?? connectionString
        self.retention = retention
        self.time = time
        let prepares = pooler == .none
        readers = PostgresPool(connectionString: connectionString, size: poolSize, preparesStatements: prepares)
        // Through a transaction pooler the setting travels with each BEGIN rather than living in
        // a session the pooler may hand to another client.
        writers = PostgresPool(
            connectionString: connectionString, size: 1, preparesStatements: prepares,
            settings: [("synchronous_commit", durability == .full ? "on" : "off")])
        let name = displayName
        batchReads = PostgresBatchReads(
            connectionString: connectionString, preparesStatement: prepares,
            statement: { reads in .init(sql: Self.stampedReadSQL, parameters: Self.stampedReadParameters(reads)) },
            deliver: { reads, result in
                Self.deliver(reads, result, database: name, answers: Self.storedSessions, to: \.done)
            })
        keyLookups = PostgresBatchReads(
            connectionString: connectionString, preparesStatement: prepares,
            statement: { [retention, time] lookups in
                .init(
                    sql: Self.keyLookupSQL,
                    parameters: Self.keyLookupParameters(
                        lookups, oldestKept: retention.oldestResponseKept(at: time.now())))
            },
            deliver: { lookups, result in
                Self.deliver(lookups, result, database: name, answers: Self.storedResponses, to: \.done)
            })
        let eventLogSize = retention.eventLogSize
        changeReads = PostgresBatchReads(
            connectionString: connectionString, preparesStatement: prepares,
            statement: { reads in
                .init(sql: Self.changesSQL, parameters: Self.changesParameters(reads, eventLogSize: eventLogSize))
            },
            deliver: { reads, result in
                Self.deliver(reads, result, database: name, answers: Self.loggedChanges, to: \.done)
            })
        singleReads = PostgresBatchReads(
            connectionString: connectionString, preparesStatement: false, maxBatch: 1,
            statement: { reads in reads[0].statement },
            deliver: { reads, result in
                // One read per round trip; more only when the reads left at a stop all fail at once.
                for read in reads { read.done(result.mapError { Self.storeError($0, database: name) }) }
            })
        let refusal: String?
        do {
            refusal = try writers.withConnection { connection throws(PostgresError) in try Self.migrate(connection) }
        } catch {
            throw Self.storeError(error, database: name)
        }
        if let refusal { throw StoreError(.corrupt, "\(name): \(refusal)") }
    }

    public func session(id: String) throws(StoreError) -> Session? {
        let rows = try query(
            "SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions WHERE id = $1", [id])
        return try rows.rows.first.map { row throws(StoreError) in try Self.session(row) }
    }

    public func session(id: String, unlessAt stamp: SessionStamp?) throws(StoreError) -> StoredSession {
        let read = [StampedRead(sessionID: id, stamp: stamp, done: { _ in })]
        return try Self.storedSessions(read, from: try query(Self.stampedReadSQL, Self.stampedReadParameters(read)))[0]
    }

    public func session(
        id: String, unlessAt stamp: SessionStamp?,
        then done: @escaping @Sendable (Result<StoredSession, StoreError>) -> Void
    ) {
        batchReads.submit(StampedRead(sessionID: id, stamp: stamp, done: done))
    }

    /// A read of a session by one who holds it at `stamp` (nil: holds none).
    struct StampedRead: Sendable {
        let sessionID: String
        let stamp: SessionStamp?
        let done: @Sendable (Result<StoredSession, StoreError>) -> Void
    }

    /// One statement for many stamped reads: the whole session only where the stamp is not the
    /// stored one, else only the read's position. A read's answer is the row of its position
    /// (none: no session).
    static let stampedReadSQL = """
        SELECT w.n, d.id, d.version, d.created_at, d.updated_at, d.stack, d.queue, d.ttl, d.path
        FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
            WITH ORDINALITY AS w(id, version, created_at, updated_at, n)
        JOIN sessions s ON s.id = w.id
        LEFT JOIN LATERAL (SELECT s.id, s.version, s.created_at, s.updated_at, s.stack, s.queue, s.ttl, s.path
            WHERE (s.version, s.created_at, s.updated_at)
                IS DISTINCT FROM (w.version, w.created_at, w.updated_at)) d ON true
        """

    static func stampedReadParameters(_ reads: [StampedRead]) -> [String?] {
        [
            PostgresArray.text(reads.map(\.sessionID)),
            PostgresArray.bigint(reads.map { $0.stamp?.version }),
            PostgresArray.bigint(reads.map { $0.stamp?.createdAt.millisecondsSinceEpoch }),
            PostgresArray.bigint(reads.map { $0.stamp?.updatedAt.millisecondsSinceEpoch }),
        ]
    }

    /// What the store holds for each of `reads`, in their order, from the rows of their statement.
    static func storedSessions(_ reads: [StampedRead], from rows: PostgresRows) throws(StoreError) -> [StoredSession] {
        var stored = [StoredSession](repeating: .changed(nil), count: reads.count)
        for row in rows.rows {
            guard row.count == 9, let position = row[0].flatMap({ Int($0) }), reads.indices.contains(position - 1)
            else { throw StoreError(.corrupt, "a stored session's stamp is not in the expected form") }
            stored[position - 1] = row[1] == nil ? .unchanged : .changed(try session(Array(row[1...])))
        }
        return stored
    }

    /// Answers one round trip's reads (`answers` turns its rows into one answer per read, in order).
    private static func deliver<Read, Answer>(
        _ reads: [Read], _ result: Result<PostgresRows, PostgresError>, database: String,
        answers: ([Read], PostgresRows) throws(StoreError) -> [Answer],
        to done: (Read) -> @Sendable (Result<Answer, StoreError>) -> Void
    ) {
        let answered: Result<[Answer], StoreError>
        switch result {
        case .success(let rows): answered = Result { () throws(StoreError) in try answers(reads, rows) }
        case .failure(let error): answered = .failure(storeError(error, database: database))
        }
        for (index, read) in reads.enumerated() {
            done(read)(answered.map { $0[index] })
        }
    }

    public func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError)
        -> [Session]
    {
        try Self.sessions(try query(Self.recentSessions(after: cursor, limit: limit, at: now)))
    }

    public func recentSessions(
        after cursor: SessionCursor?, limit: Int, at now: Timestamp,
        then done: @escaping @Sendable (Result<[Session], StoreError>) -> Void
    ) {
        read(Self.recentSessions(after: cursor, limit: limit, at: now), then: done, answer: Self.sessions)
    }

    private static func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp)
        -> PostgresConnection.Statement
    {
        guard let cursor else {
            return .init(
                sql: """
                    SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions
                    WHERE expires_at > $1 ORDER BY updated_at DESC, id DESC LIMIT $2
                    """,
                parameters: [String(now.millisecondsSinceEpoch), String(limit)])
        }
        return .init(
            sql: """
                SELECT id, version, created_at, updated_at, stack, queue, ttl, path FROM sessions
                WHERE (updated_at, id) < ($1, $2) AND expires_at > $3
                ORDER BY updated_at DESC, id DESC LIMIT $4
                """,
            parameters: [
                String(cursor.updatedAt.millisecondsSinceEpoch), cursor.id, String(now.millisecondsSinceEpoch),
                String(limit),
            ])
    }

    private static func sessions(_ rows: PostgresRows) throws(StoreError) -> [Session] {
        try rows.rows.map { row throws(StoreError) in try session(row) }
    }

    public func sessionCount() throws(StoreError) -> Int {
        Int(try query("SELECT count(*) FROM sessions", []).scalar ?? "0") ?? 0
    }

    /// The live rows PostgreSQL's statistics count, read from shared memory rather than by a scan
    /// of the table: exact once each backend has reported its inserts and deletes (within a few
    /// seconds), an estimate again after ANALYZE or VACUUM of a large table.
    public func estimatedSessionCount() throws(StoreError) -> Int {
        Int(
            try query("SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = 'sessions'::regclass", []).scalar
                ?? "0") ?? 0
    }

    public func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String] {
        try query(
            "SELECT id FROM sessions WHERE expires_at <= $1 LIMIT $2",
            [String(now.millisecondsSinceEpoch), String(limit)]
        ).rows.compactMap { $0[0] }
    }

    public func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation? {
        try Self.presentation(try query(Self.dismissedPresentation(id: id, sessionID: sessionID)))
    }

    public func dismissedPresentation(
        id: String, sessionID: String, then done: @escaping @Sendable (Result<Presentation?, StoreError>) -> Void
    ) {
        read(Self.dismissedPresentation(id: id, sessionID: sessionID), then: done, answer: Self.presentation)
    }

    private static func dismissedPresentation(id: String, sessionID: String) -> PostgresConnection.Statement {
        .init(
            sql: "SELECT document FROM dismissed_presentations WHERE session_id = $1 AND id = $2",
            parameters: [sessionID, id])
    }

    private static func presentation(_ rows: PostgresRows) throws(StoreError) -> Presentation? {
        try rows.scalar.map { document throws(StoreError) in try RowCodec.decodeOne(document) }
    }

    /// The changes the log shows, the newest ``RetentionPolicy/eventLogSize``; the table may
    /// hold a few older ones, down to a checkpoint (``RetentionPolicy/changesDeleted(whenLogging:)``).
    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]
    {
        let read = [ChangesRead(sessionID: sessionID, after: version, eventLimit: eventLimit, done: { _ in })]
        let parameters = Self.changesParameters(read, eventLogSize: retention.eventLogSize)
        return try Self.loggedChanges(read, from: try query(Self.changesSQL, parameters))[0]
    }

    public func changes(
        sessionID: String, after version: Int64, eventLimit: Int,
        then done: @escaping @Sendable (Result<[SessionChange], StoreError>) -> Void
    ) {
        changeReads.submit(ChangesRead(sessionID: sessionID, after: version, eventLimit: eventLimit, done: done))
    }

    /// A read of a session's logged changes after a version.
    struct ChangesRead: Sendable {
        let sessionID: String
        let after: Int64
        let eventLimit: Int
        let done: @Sendable (Result<[SessionChange], StoreError>) -> Void
    }

    /// One statement for many reads of changes: each read's records, in version order, after its
    /// version and within the log shown. A change holds at least one event, so `eventLimit` rows
    /// are always enough.
    static let changesSQL = """
        SELECT w.n, c.record
        FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS w(id, after, rows, n)
        CROSS JOIN LATERAL (
            SELECT version, record FROM changes WHERE session_id = w.id AND version > w.after
                AND version > (SELECT version FROM sessions WHERE id = w.id) - $4
            ORDER BY version LIMIT w.rows) c
        ORDER BY w.n, c.version
        """

    static func changesParameters(_ reads: [ChangesRead], eventLogSize: Int) -> [String?] {
        [
            PostgresArray.text(reads.map(\.sessionID)), PostgresArray.bigint(reads.map(\.after)),
            PostgresArray.bigint(reads.map { Int64(max($0.eventLimit, 1)) }), String(eventLogSize),
        ]
    }

    /// Each read's changes, in order, from the rows of their statement.
    static func loggedChanges(_ reads: [ChangesRead], from rows: PostgresRows) throws(StoreError) -> [[SessionChange]] {
        var records = [[String]](repeating: [], count: reads.count)
        for row in rows.rows {
            guard row.count == 2, let position = row[0].flatMap({ Int($0) }), reads.indices.contains(position - 1),
                let record = row[1]
            else { throw StoreError(.corrupt, "a stored change is not in the expected form") }
            records[position - 1].append(record)
        }
        var changes: [[SessionChange]] = []
        for (read, records) in zip(reads, records) {
            changes.append(
                try RowCodec.decodeChanges(records, sessionID: read.sessionID, eventLimit: read.eventLimit))
        }
        return changes
    }

    public func history(sessionID: String, through version: Int64) throws(StoreError) -> SessionHistory? {
        try Self.history(
            try query(Self.history(sessionID: sessionID, through: version)), sessionID: sessionID, version: version,
            retention: retention)
    }

    public func history(
        sessionID: String, through version: Int64,
        then done: @escaping @Sendable (Result<SessionHistory?, StoreError>) -> Void
    ) {
        read(Self.history(sessionID: sessionID, through: version), then: done) { [retention] rows throws(StoreError) in
            try Self.history(rows, sessionID: sessionID, version: version, retention: retention)
        }
    }

    /// The changes from the last checkpoint at or before `version` (or the first) through it.
    private static func history(sessionID: String, through version: Int64) -> PostgresConnection.Statement {
        .init(
            sql: """
                SELECT c.version, c.record, c.checkpoint, s.version
                FROM changes c JOIN sessions s ON s.id = c.session_id
                WHERE c.session_id = $1 AND c.version <= $2
                    AND c.version >= coalesce((SELECT max(version) FROM changes
                        WHERE session_id = $1 AND version <= $2 AND checkpoint IS NOT NULL), 1)
                ORDER BY c.version
                """,
            parameters: [sessionID, String(version)])
    }

    private static func history(
        _ rows: PostgresRows, sessionID: String, version: Int64, retention: RetentionPolicy
    ) throws(StoreError) -> SessionHistory? {
        var logged: [LoggedChange] = []
        var current: Int64 = 0
        for row in rows.rows {
            guard row.count == 4, let version = row[0].flatMap({ Int64($0) }), let record = row[1],
                let sessionVersion = row[3].flatMap({ Int64($0) })
            else { throw StoreError(.corrupt, "a stored change of session \(sessionID) is not in the expected form") }
            logged.append(LoggedChange(version: version, record: record, checkpoint: row[2]))
            current = sessionVersion
        }
        return try SessionHistory(
            sessionID: sessionID, version: version, current: current, rows: logged, retention: retention)
    }

    public func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse? {
        let lookup = [KeyLookup(scope: scope, key: key, done: { _ in })]
        let parameters = Self.keyLookupParameters(lookup, oldestKept: retention.oldestResponseKept(at: time.now()))
        return try Self.storedResponses(lookup, from: try query(Self.keyLookupSQL, parameters))[0]
    }

    public func idempotentResponse(
        scope: String, key: String, then done: @escaping @Sendable (Result<StoredResponse?, StoreError>) -> Void
    ) {
        keyLookups.submit(KeyLookup(scope: scope, key: key, done: done))
    }

    /// A lookup of the response stored for an idempotency key.
    struct KeyLookup: Sendable {
        let scope: String
        let key: String
        let done: @Sendable (Result<StoredResponse?, StoreError>) -> Void
    }

    /// One statement for many key lookups; a lookup's answer is the row of its position (none:
    /// no response kept).
    static let keyLookupSQL = """
        SELECT w.n, r.fingerprint, r.status, r.headers, r.body, r.created_at
        FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(scope, key, n)
        JOIN idempotent_responses r ON r.scope = w.scope AND r.key = w.key
        WHERE r.created_at >= $3
        """

    /// The lookups' keys, and the oldest response still replayed.
    static func keyLookupParameters(_ lookups: [KeyLookup], oldestKept: Int64) -> [String?] {
        [PostgresArray.text(lookups.map(\.scope)), PostgresArray.text(lookups.map(\.key)), String(oldestKept)]
    }

    static func storedResponses(_ lookups: [KeyLookup], from rows: PostgresRows) throws(StoreError)
        -> [StoredResponse?]
    {
        var stored = [StoredResponse?](repeating: nil, count: lookups.count)
        for row in rows.rows {
            guard row.count == 6, let position = row[0].flatMap({ Int($0) }), lookups.indices.contains(position - 1),
                let fingerprint = row[1].flatMap(PostgresBytes.decode), let status = row[2].flatMap({ Int($0) }),
                let headers = row[3], let body = row[4].flatMap(PostgresBytes.decode),
                let createdAt = row[5].flatMap({ Int64($0) })
            else {
                throw StoreError(.corrupt, "a stored response is not in the expected form")
            }
            let lookup = lookups[position - 1]
            stored[position - 1] = StoredResponse(
                scope: lookup.scope, key: lookup.key, fingerprint: fingerprint, status: status,
                headers: try RowCodec.decodeHeaders(headers), body: body,
                createdAt: Timestamp(millisecondsSinceEpoch: createdAt))
        }
        return stored
    }

    /// Instances share the database: what one holds in memory may be stale.
    public var isShared: Bool { true }

    @discardableResult
    public func commit(_ writes: [SessionWrite]) throws(StoreError) -> Set<String> {
        guard !writes.isEmpty else { return [] }
        let oldestResponseKept = retention.oldestResponseKept(at: time.now())
        // Each session's writes in their order, the sessions in id order: instances committing the
        // same sessions lock their rows in the same order, so they never deadlock.
        let sessions = Dictionary(grouping: writes, by: \.sessionID).sorted { $0.key < $1.key }
        var superseded: Set<String> = []
        try writer { connection throws(PostgresError) in
            // Every statement of the batch goes out in one pipeline. A session another writer got
            // to first rolls the transaction back, which is tried again without it.
            while true {
                var statements: [PostgresConnection.Statement] = []
                var checks: [WriteCheck] = []
                var written: [String] = []
                for (id, writes) in sessions where !superseded.contains(id) {
                    for write in writes {
                        append(write, to: &statements, checks: &checks, oldestResponseKept: oldestResponseKept)
                    }
                    written.append(id)
                }
                guard !written.isEmpty else { return }
                for payload in changeNotifications.payloads(for: written) {
                    statements.append(
                        PostgresConnection.Statement(
                            sql: "SELECT pg_notify($1, $2)", parameters: [PostgresChangeNotifications.channel, payload])
                    )
                }
                var lost: Set<String> = []
                let end = try connection.transaction(pipelining: statements) { rows in
                    lost = Set(checks.filter { !$0.holds(rows[$0.statement]) }.map(\.sessionID))
                    return lost.isEmpty ? .commit : .rollBack
                }
                if end == .commit { return }
                superseded.formUnion(lost)
            }
        }
        return superseded
    }

    /// Rows another instance's sweep is deleting are skipped, not waited for.
    public func pruneIdempotentResponses(at now: Timestamp, limit: Int) throws(StoreError) -> Int {
        try writer { connection throws(PostgresError) in
            try connection.execute(
                """
                DELETE FROM idempotent_responses WHERE ctid IN (
                    SELECT ctid FROM idempotent_responses WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
                """,
                [String(retention.oldestResponseKept(at: now)), String(limit)]
            ).affected
        }
    }

    public func observeOtherWriters(_ handler: @escaping @Sendable (String?) -> Void) {
        changeNotifications.listen(connectionString: listenConnectionString, handler)
    }

    public func checkHealth() throws(StoreError) {
        let writable = try query(
            "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'", []
        ).scalar
        guard writable == "t" else {
            throw StoreError(.unavailable, "the database \(displayName) is read-only (a standby, or read-only mode)")
        }
    }

    /// A setting of the server as the store's commits see it, inside a transaction of the
    /// connection that commits, for tests.
    func setting(_ name: String) throws(StoreError) -> String? {
        try writer { connection throws(PostgresError) in
            var value: String?
            try connection.transaction { () throws(PostgresError) in
                value = try connection.execute("SELECT current_setting($1)", [name]).scalar
                return .rollBack
            }
            return value
        }
    }

    /// Stops listening and closes the pools' connections; the store then answers every call as unavailable.
    public func close() {
        changeNotifications.stop()
        batchReads.stop()
        keyLookups.stop()
        changeReads.stop()
        singleReads.stop()
        readers.close()
        writers.close()
    }

    /// What one statement of a commit must have done for its session's writes to hold: when it
    /// did not, another writer got to the session first.
    private struct WriteCheck {
        enum Expectation {
            /// The statement's one value is 1 (the session was at the version expected).
            case one
            /// It changed one row (the idempotency key's response was stored).
            case oneRowChanged
        }

        let statement: Int
        let sessionID: String
        let expectation: Expectation

        func holds(_ rows: PostgresRows) -> Bool {
            switch expectation {
            case .one: rows.scalar == "1"
            case .oneRowChanged: rows.affected == 1
            }
        }
    }

    /// Appends the statements of one write, each checking what it expects to find.
    private func append(
        _ write: SessionWrite, to statements: inout [PostgresConnection.Statement], checks: inout [WriteCheck],
        oldestResponseKept: Int64
    ) {
        func add(_ statement: PostgresConnection.Statement, expecting expectation: WriteCheck.Expectation? = nil) {
            if let expectation {
                checks.append(
                    WriteCheck(statement: statements.count, sessionID: write.sessionID, expectation: expectation))
            }
            statements.append(statement)
        }
        switch write {
        case .save(let update):
            add(save(update), expecting: .one)
            if let statement = saveDismissed(update.dismissed, of: update.session) { add(statement) }
            // Another instance may have answered the same key first (a retry that landed there).
            if let response = update.response {
                add(store(response, oldestKept: oldestResponseKept), expecting: .oneRowChanged)
            }
        case .delete(let id, let expected):
            add(delete(id, expectedVersion: expected, skipLocked: false), expecting: .one)
        case .expire(let id, let version):
            add(delete(id, expectedVersion: version, skipLocked: true), expecting: .one)
        }
    }

    /// Writes the session's new version, logs its change and prunes the log, in one statement,
    /// if the session is at the version before (absent, for version 1); its value is 1 if it was.
    /// A later version of a session that is gone (another instance deleted it) is not written:
    /// that would bring it back.
    private func save(_ update: SessionUpdate) -> PostgresConnection.Statement {
        let session = update.session
        return PostgresConnection.Statement(
            sql: """
                WITH saved AS (
                    INSERT INTO sessions AS s (id, version, created_at, updated_at, stack, queue, ttl, expires_at, path)
                    SELECT $1::text, $2::bigint, $3::bigint, $4::bigint, $5::text, $6::text, $7::bigint, $8::bigint,
                        $11::text
                    WHERE $2::bigint = 1 OR EXISTS (SELECT 1 FROM sessions WHERE id = $1)
                    ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                        stack = excluded.stack, queue = excluded.queue, ttl = excluded.ttl, expires_at = excluded.expires_at,
                        path = excluded.path
                    WHERE s.version = excluded.version - 1
                    RETURNING 1
                ), logged AS (
                    INSERT INTO changes (session_id, version, record, checkpoint) SELECT $1, $2, $9, $12 FROM saved
                    ON CONFLICT (session_id, version) DO UPDATE SET record = excluded.record,
                        checkpoint = excluded.checkpoint
                ), pruned AS (
                    DELETE FROM changes WHERE session_id = $1 AND version < $10 AND EXISTS (SELECT 1 FROM saved)
                )
                SELECT count(*) FROM saved
                """,
            parameters: [
                session.id, String(session.version), String(session.createdAt.millisecondsSinceEpoch),
                String(session.updatedAt.millisecondsSinceEpoch), update.document.stackText,
                update.document.queueText, String(session.ttlSeconds),
                String(session.expiresAt.millisecondsSinceEpoch), update.change.jsonText,
                retention.changesDeleted(whenLogging: update.change.version).map { String($0) },
                update.document.pathText,
                RetentionPolicy.isCheckpoint(session.version)
                    ? RowCodec.encodeCheckpoint(session, document: update.document) : nil,
            ])
    }

    /// Keeps a response for its idempotency key, unless the key holds one still replayed: then it
    /// changes no row.
    private func store(_ response: StoredResponse, oldestKept: Int64) -> PostgresConnection.Statement {
        PostgresConnection.Statement(
            sql: """
                INSERT INTO idempotent_responses AS r (scope, key, fingerprint, status, headers, body, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint,
                    status = excluded.status, headers = excluded.headers, body = excluded.body,
                    created_at = excluded.created_at
                WHERE r.created_at < $8
                """,
            parameters: [
                response.scope, response.key, PostgresBytes.encode(response.fingerprint),
                String(response.status), RowCodec.encodeHeaders(response.headers),
                PostgresBytes.encode(response.body), String(response.createdAt.millisecondsSinceEpoch),
                String(oldestKept),
            ])
    }

    /// Removes the session and what it owns, in one statement, if it is at `expectedVersion` (nil:
    /// if it exists at all, or not). With `skipLocked`, a session another transaction holds is
    /// left alone. Its value is 1 if the session was as expected.
    private func delete(_ id: String, expectedVersion: Int64?, skipLocked: Bool) -> PostgresConnection.Statement {
        PostgresConnection.Statement(
            sql: skipLocked ? Self.deleteSkippingLocked : Self.delete,
            parameters: [id, expectedVersion.map { String($0) }])
    }

    private static let delete = deleteStatement(lock: "FOR UPDATE")
    private static let deleteSkippingLocked = deleteStatement(lock: "FOR UPDATE SKIP LOCKED")

    private static func deleteStatement(lock: String) -> String {
        """
        WITH gone AS (
            DELETE FROM sessions WHERE id = (
                SELECT id FROM sessions WHERE id = $1 AND ($2::bigint IS NULL OR version = $2) \(lock))
            RETURNING 1
        ), owned AS (
            SELECT 1 WHERE $2::bigint IS NULL OR EXISTS (SELECT 1 FROM gone)
        ), changes_gone AS (
            DELETE FROM changes WHERE session_id = $1 AND EXISTS (SELECT 1 FROM owned)
        ), dismissed_gone AS (
            DELETE FROM dismissed_presentations WHERE session_id = $1 AND EXISTS (SELECT 1 FROM owned)
        ), responses_gone AS (
            DELETE FROM idempotent_responses WHERE scope = $1 AND EXISTS (SELECT 1 FROM owned)
        )
        SELECT count(*) FROM owned
        """
    }

    /// Keeps what left the session readable, and no more than the newest the retention policy
    /// keeps per session, in one statement. Those this change dismisses are the newest; of the
    /// session's others, the newest that still fit stay.
    private func saveDismissed(_ dismissed: [Presentation], of session: Session) -> PostgresConnection.Statement? {
        let newest = retention.dismissedKept(
            dismissed.enumerated().map { offset, presentation in
                (
                    id: presentation.id, sequence: RowCodec.dismissedSequence(version: session.version, offset: offset),
                    document: presentation.jsonText
                )
            }, id: \.id)
        guard !newest.isEmpty else { return nil }
        return PostgresConnection.Statement(
            sql: """
                WITH saved AS (
                    INSERT INTO dismissed_presentations (session_id, id, sequence, document)
                    SELECT $1, d.id, d.sequence, d.document
                    FROM unnest($2::text[], $3::bigint[], $4::text[]) AS d(id, sequence, document)
                    ON CONFLICT (session_id, id) DO UPDATE SET sequence = excluded.sequence, document = excluded.document
                )
                DELETE FROM dismissed_presentations WHERE session_id = $1 AND id <> ALL($2::text[])
                    AND ($5::integer < 0 OR sequence < (
                        SELECT sequence FROM dismissed_presentations WHERE session_id = $1 AND id <> ALL($2::text[])
                        ORDER BY sequence DESC LIMIT 1 OFFSET greatest($5::integer, 0)))
                """,
            parameters: [
                session.id, PostgresArray.text(newest.map(\.id)), PostgresArray.bigint(newest.map(\.sequence)),
                PostgresArray.text(newest.map(\.document)),
                String(retention.dismissedPresentationsKept - newest.count - 1),
            ])
    }

    /// Runs one statement on a reader connection, outside any transaction.
    private func query(_ sql: String, _ parameters: [String?]) throws(StoreError) -> PostgresRows {
        try use(readers) { connection throws(PostgresError) in try connection.execute(sql, parameters) }
    }

    private func query(_ statement: PostgresConnection.Statement) throws(StoreError) -> PostgresRows {
        try query(statement.sql, statement.parameters)
    }

    /// A read too rare to batch, of a statement of its own.
    struct SingleRead: Sendable {
        let statement: PostgresConnection.Statement
        let done: @Sendable (Result<PostgresRows, StoreError>) -> Void
    }

    /// Runs `statement` without holding the caller's thread; `done` gets what `answer` makes of its rows.
    private func read<Answer>(
        _ statement: PostgresConnection.Statement, then done: @escaping @Sendable (Result<Answer, StoreError>) -> Void,
        answer: @escaping @Sendable (PostgresRows) throws(StoreError) -> Answer
    ) {
        singleReads.submit(
            SingleRead(
                statement: statement,
                done: { rows in done(rows.flatMap { rows in Result { () throws(StoreError) in try answer(rows) } }) }))
    }

    /// Runs `body` on the writer connection, which commits never share with reads.
    private func writer<Result>(_ body: (PostgresConnection) throws(PostgresError) -> Result) throws(StoreError)
        -> Result
    {
        try use(writers, body)
    }

    /// Runs `body` on a connection of `pool`, turning libpq errors into store errors.
    private func use<Result>(_ pool: PostgresPool, _ body: (PostgresConnection) throws(PostgresError) -> Result)
        throws(StoreError) -> Result
    {
        do {
            return try pool.withConnection(body)
        } catch {
            throw Self.storeError(error, database: displayName)
        }
    }

    private static func session(_ row: [String?]) throws(StoreError) -> Session {
        guard row.count == 8, let id = row[0], let version = row[1].flatMap({ Int64($0) }),
            let createdAt = row[2].flatMap({ Int64($0) }), let updatedAt = row[3].flatMap({ Int64($0) }),
            let stack = row[4], let queue = row[5], let ttl = row[6].flatMap({ Int64($0) }), let path = row[7]
        else {
            throw StoreError(.corrupt, "a stored session is not in the expected form")
        }
        return try RowCodec.session(
            id: id, version: version, createdAt: createdAt, updatedAt: updatedAt, path: path, stack: stack,
            queue: queue,
            ttl: ttl)
    }

    /// Creates or brings the schema to `PostgresSchema.currentVersion`, one step per transaction.
    /// Returns why the database is refused, without having written to it, or nil when it is ready.
    private static func migrate(_ connection: PostgresConnection) throws(PostgresError) -> String? {
        while true {
            var step = MigrationStep.upToDate
            try connection.transaction { () throws(PostgresError) in
                step = try migrateOneStep(connection)
                return step == .applied ? .commit : .rollBack
            }
            switch step {
            case .applied: continue
            case .upToDate: return nil
            case .refused(let reason): return reason
            }
        }
    }

    private enum MigrationStep: Equatable {
        case applied
        case upToDate
        case refused(String)
    }

    /// Applies the next migration, if any, under the advisory lock that instances starting
    /// together take in turn. The lock is the transaction's: a session's lock, through a
    /// transaction pooler, could be left held on a server session another client then uses.
    private static func migrateOneStep(_ connection: PostgresConnection) throws(PostgresError) -> MigrationStep {
        try connection.execute("SELECT pg_advisory_xact_lock($1)", [String(PostgresSchema.migrationLockKey)])
        let table = PostgresSchema.versionTable
        let marked = try connection.execute("SELECT to_regclass($1) IS NOT NULL", [table]).scalar == "t"
        var version = 0
        if marked {
            version = Int(try connection.execute("SELECT coalesce(max(version), 0) FROM \(table)").scalar ?? "0") ?? 0
            guard version <= PostgresSchema.currentVersion else {
                return .refused(
                    "the database has ModalStack schema version \(version), newer than this build's \(PostgresSchema.currentVersion)"
                )
            }
            if version == PostgresSchema.currentVersion { return .upToDate }
        } else {
            // Only an empty schema becomes ModalStack's: never write into another application's tables.
            let others = try connection.execute(
                """
                SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
                WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p', 'v', 'm', 'f')
                """
            ).scalar
            if let others {
                return .refused(
                    "the database's schema holds tables of another application (\(others)) and no \(table); refusing to use it"
                )
            }
            try connection.execute(
                """
                CREATE TABLE \(table) (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
        }
        try connection.execute(PostgresSchema.migrations[version])
        try connection.execute("INSERT INTO \(table) (version) VALUES ($1)", [String(version + 1)])
        return .applied
    }

    /// Sorts a failure by what a client can do about it.
    static func storeError(_ error: PostgresError, database: String) -> StoreError {
        let state = error.sqlState ?? ""
        if error.connectionBroken || state.hasPrefix("08") || state.hasPrefix("57P") {
            return StoreError(.unavailable, "the database \(database) is unavailable: \(error)")
        }
        switch state {
        case "53100":
            return StoreError(.full, "the database \(database) is full: \(error)")
        case _ where state.hasPrefix("53"), "40001", "40P01", "55P03", "25006":
            // Out of memory or connections, a serialization failure or deadlock, a lock not
            // available, a read-only transaction (a standby): all pass; try again later.
            return StoreError(.unavailable, "the database \(database) is unavailable: \(error)")
        default:
            return StoreError(.failed, "database \(database): \(error)")
        }
    }

    /// The connection string as libpq reads it, without the options libpq marks secret (the
    /// password, a key's passphrase), for messages. Parsed by libpq, so a password in any form it
    /// accepts (`user:pw@`, `?password=`, `password = 'p w'`) is left out; a string libpq cannot
    /// read is not shown at all.
    public static func withoutPassword(_ connectionString: String) -> String {
        guard let options = PQconninfoParse(connectionString, nil) else {
            return "(a connection string libpq cannot read)"
        }
        defer { PQconninfoFree(options) }
        var shown: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val, String(cString: option.pointee.dispchar) != "*" {
                shown.append("\(String(cString: keyword))=\(quoted(String(cString: value)))")
            }
            option += 1
        }
        return shown.joined(separator: " ")
    }

    /// A value as a libpq keyword/value string writes it: in single quotes, each quote and
    /// backslash escaped with a backslash, when it is empty or holds a space, a quote or a backslash.
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "'" || $0 == "\\" }) else { return value }
        var quoted = "'"
        for character in value {
            if character == "'" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "'"
    }
}
