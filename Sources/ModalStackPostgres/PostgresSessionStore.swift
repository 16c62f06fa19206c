import ModalStackCore
import ModalStackStore
import Timekeeping

/// The PostgreSQL session store over libpq: a pool of connections to one database, each call on
/// one connection, each ``commit(_:)`` one transaction (group commit). The same semantics as the
/// SQLite engine for one instance; what several instances on one database need (expected
/// versions, notifications, a shared sweep) is not here yet.
public final class PostgresSessionStore: SessionStore {
    /// How many dismissed presentations each session keeps readable; older ones are pruned.
    public static let dismissedKeptPerSession = 64

    /// Where the store connects, with any password left out: for messages.
    public let displayName: String
    private let eventLogSize: Int
    private let idempotencyLifetimeMilliseconds: Int64
    private let time: any TimeSource
    private let pool: PostgresPool

    /// Connects to the database of `connectionString` (a libpq string or a `postgresql://` URL),
    /// creates or migrates the schema under an advisory lock (so instances starting together
    /// migrate once), and refuses a database holding another application's tables or a schema
    /// newer than this build, without writing to it.
    /// - Parameters:
    ///   - poolSize: how many connections the store opens at most.
    ///   - durability: `.full` waits for the server to flush each commit to disk
    ///     (`synchronous_commit = on`); `.normal` does not (`off`): a crash of ModalStack loses
    ///     nothing, but a crash of the database server or its machine may lose the last commits
    ///     (at most about three times `wal_writer_delay`), never leaving the database inconsistent.
    public init(
        connectionString: String, poolSize: Int = 4, durability: Durability = .normal,
        eventLogSize: Int = StoreDefaults.eventLogSize,
        idempotencyLifetimeMilliseconds: Int64 = StoreDefaults.idempotencyLifetimeMilliseconds,
        time: any TimeSource = SystemTime()
    ) throws(StoreError) {
        displayName = Self.displayName(connectionString)
        self.eventLogSize = eventLogSize
        self.idempotencyLifetimeMilliseconds = idempotencyLifetimeMilliseconds
        self.time = time
        pool = PostgresPool(
            connectionString: connectionString, size: poolSize,
            setup: "SET synchronous_commit = \(durability == .full ? "on" : "off")")
        let name = displayName
        let refusal: String?
        do {
            refusal = try pool.withConnection { connection throws(PostgresError) in try Self.migrate(connection) }
        } catch {
            throw Self.storeError(error, database: name)
        }
        if let refusal { throw StoreError(.corrupt, "\(name): \(refusal)") }
    }

    public func session(id: String) throws(StoreError) -> Session? {
        let rows = try query(
            "SELECT id, version, created_at, updated_at, stack, queue, ttl FROM sessions WHERE id = $1", [id])
        return try rows.rows.first.map { row throws(StoreError) in try Self.session(row) }
    }

    public func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError)
        -> [Session]
    {
        let rows: PostgresRows
        if let cursor {
            rows = try query(
                """
                SELECT id, version, created_at, updated_at, stack, queue, ttl FROM sessions
                WHERE (updated_at, id) < ($1, $2) AND expires_at > $3
                ORDER BY updated_at DESC, id DESC LIMIT $4
                """,
                [
                    String(cursor.updatedAt.millisecondsSinceEpoch), cursor.id, String(now.millisecondsSinceEpoch),
                    String(limit),
                ])
        } else {
            rows = try query(
                """
                SELECT id, version, created_at, updated_at, stack, queue, ttl FROM sessions
                WHERE expires_at > $1 ORDER BY updated_at DESC, id DESC LIMIT $2
                """,
                [String(now.millisecondsSinceEpoch), String(limit)])
        }
        return try rows.rows.map { row throws(StoreError) in try Self.session(row) }
    }

    public func sessionCount() throws(StoreError) -> Int {
        Int(try query("SELECT count(*) FROM sessions", []).scalar ?? "0") ?? 0
    }

    public func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String] {
        try query(
            "SELECT id FROM sessions WHERE expires_at <= $1 LIMIT $2",
            [String(now.millisecondsSinceEpoch), String(limit)]
        ).rows.compactMap { $0[0] }
    }

    public func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation? {
        let rows = try query(
            "SELECT document FROM dismissed_presentations WHERE session_id = $1 AND id = $2", [sessionID, id])
        return try rows.scalar.map { document throws(StoreError) in try StoredSession.decodeOne(document) }
    }

    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]
    {
        // A change holds at least one event, so `eventLimit` rows are always enough.
        let rows = try query(
            "SELECT record FROM changes WHERE session_id = $1 AND version > $2 ORDER BY version LIMIT $3",
            [sessionID, String(version), String(max(eventLimit, 1))])
        var changes: [SessionChange] = []
        var eventCount = 0
        for record in rows.rows.compactMap({ $0[0] }) where eventCount < eventLimit {
            let change = try StoredSession.decodeChange(record, sessionID: sessionID)
            changes.append(change)
            eventCount += change.events.count
        }
        return changes
    }

    public func change(sessionID: String, version: Int64) throws(StoreError) -> SessionChange? {
        let rows = try query(
            "SELECT record FROM changes WHERE session_id = $1 AND version = $2", [sessionID, String(version)])
        return try rows.scalar.map { record throws(StoreError) in
            try StoredSession.decodeChange(record, sessionID: sessionID)
        }
    }

    public func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse? {
        let oldestKept = time.wallMilliseconds() - idempotencyLifetimeMilliseconds
        let rows = try query(
            """
            SELECT fingerprint, status, headers, body, created_at FROM idempotent_responses
            WHERE scope = $1 AND key = $2 AND created_at >= $3
            """,
            [scope, key, String(oldestKept)])
        guard let row = rows.rows.first else { return nil }
        guard let fingerprint = row[0].flatMap(PostgresBytes.decode), let status = row[1].flatMap({ Int($0) }),
            let headers = row[2], let body = row[3].flatMap(PostgresBytes.decode),
            let createdAt = row[4].flatMap({ Int64($0) })
        else {
            throw StoreError(.corrupt, "a stored response in \(displayName) is not in the expected form")
        }
        return StoredResponse(
            scope: scope, key: key, fingerprint: fingerprint, status: status,
            headers: try StoredSession.decodeHeaders(headers), body: body,
            createdAt: Timestamp(millisecondsSinceEpoch: createdAt))
    }

    public func commit(_ writes: [SessionWrite]) throws(StoreError) {
        guard !writes.isEmpty else { return }
        let oldestResponseKept = time.wallMilliseconds() - idempotencyLifetimeMilliseconds
        try use { connection throws(PostgresError) in
            try connection.transaction { () throws(PostgresError) in
                for write in writes {
                    try apply(write, on: connection)
                }
                try connection.execute(
                    "DELETE FROM idempotent_responses WHERE created_at < $1", [String(oldestResponseKept)])
            }
        }
    }

    public func checkHealth() throws(StoreError) {
        let writable = try query(
            "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'", []
        ).scalar
        guard writable == "t" else {
            throw StoreError(.unavailable, "the database \(displayName) is read-only (a standby, or read-only mode)")
        }
    }

    /// A setting of the server as the store's connections see it (`SHOW name`), for tests.
    func setting(_ name: String) throws(StoreError) -> String? {
        try query("SELECT current_setting($1)", [name]).scalar
    }

    /// Closes the pool's connections; the store then answers every call as unavailable.
    public func close() {
        pool.close()
    }

    private func apply(_ write: SessionWrite, on connection: PostgresConnection) throws(PostgresError) {
        switch write {
        case .save(let update):
            let session = update.session
            let expiresAt = session.expiresAt.millisecondsSinceEpoch
            try connection.execute(
                """
                INSERT INTO sessions (id, version, created_at, updated_at, stack, queue, ttl, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                    stack = excluded.stack, queue = excluded.queue, ttl = excluded.ttl, expires_at = excluded.expires_at
                """,
                [
                    session.id, String(session.version), String(session.createdAt.millisecondsSinceEpoch),
                    String(session.updatedAt.millisecondsSinceEpoch), StoredSession.encode(session.stack),
                    StoredSession.encode(session.queue), String(session.ttlSeconds), String(expiresAt),
                ])
            try saveRetired(update.retired, of: session, on: connection)
            try connection.execute(
                """
                INSERT INTO changes (session_id, version, record) VALUES ($1, $2, $3)
                ON CONFLICT (session_id, version) DO UPDATE SET record = excluded.record
                """,
                [session.id, String(update.change.version), update.change.jsonText])
            // A session's versions start at 1: until it passes the log's size, nothing is old enough.
            let oldestKept = update.change.version - Int64(eventLogSize) + 1
            if oldestKept > 1 {
                try connection.execute(
                    "DELETE FROM changes WHERE session_id = $1 AND version < $2", [session.id, String(oldestKept)])
            }
            if let response = update.response {
                try connection.execute(
                    """
                    INSERT INTO idempotent_responses (scope, key, fingerprint, status, headers, body, created_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7)
                    ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint,
                        status = excluded.status, headers = excluded.headers, body = excluded.body,
                        created_at = excluded.created_at
                    """,
                    [
                        response.scope, response.key, PostgresBytes.encode(response.fingerprint),
                        String(response.status), StoredSession.encodeHeaders(response.headers),
                        PostgresBytes.encode(response.body), String(response.createdAt.millisecondsSinceEpoch),
                    ])
            }
        case .delete(let sessionID):
            for statement in [
                "DELETE FROM sessions WHERE id = $1", "DELETE FROM dismissed_presentations WHERE session_id = $1",
                "DELETE FROM changes WHERE session_id = $1", "DELETE FROM idempotent_responses WHERE scope = $1",
            ] {
                try connection.execute(statement, [sessionID])
            }
        }
    }

    /// Keeps what left the session readable: the newest `dismissedKeptPerSession` per session.
    private func saveRetired(_ retired: [Presentation], of session: Session, on connection: PostgresConnection)
        throws(PostgresError)
    {
        guard !retired.isEmpty else { return }
        for (offset, presentation) in retired.enumerated() {
            // Ordered by the version that retired them, then by their order in that change.
            let sequence = session.version << 16 + Int64(offset)
            try connection.execute(
                """
                INSERT INTO dismissed_presentations (session_id, id, sequence, document) VALUES ($1, $2, $3, $4)
                ON CONFLICT (session_id, id) DO UPDATE SET sequence = excluded.sequence, document = excluded.document
                """,
                [session.id, presentation.id, String(sequence), presentation.jsonText])
        }
        try connection.execute(
            """
            DELETE FROM dismissed_presentations WHERE session_id = $1 AND sequence <
                (SELECT sequence FROM dismissed_presentations WHERE session_id = $1
                 ORDER BY sequence DESC LIMIT 1 OFFSET $2)
            """,
            [session.id, String(Self.dismissedKeptPerSession - 1)])
    }

    /// Runs one statement on a connection of the pool, outside any transaction.
    private func query(_ sql: String, _ parameters: [String?]) throws(StoreError) -> PostgresRows {
        try use { connection throws(PostgresError) in try connection.execute(sql, parameters) }
    }

    /// Runs `body` on a connection of the pool, turning libpq errors into store errors.
    private func use<Result>(_ body: (PostgresConnection) throws(PostgresError) -> Result) throws(StoreError)
        -> Result
    {
        do {
            return try pool.withConnection(body)
        } catch {
            throw Self.storeError(error, database: displayName)
        }
    }

    private static func session(_ row: [String?]) throws(StoreError) -> Session {
        guard row.count == 7, let id = row[0], let version = row[1].flatMap({ Int64($0) }),
            let createdAt = row[2].flatMap({ Int64($0) }), let updatedAt = row[3].flatMap({ Int64($0) }),
            let stack = row[4], let queue = row[5], let ttl = row[6].flatMap({ Int64($0) })
        else {
            throw StoreError(.corrupt, "a stored session is not in the expected form")
        }
        return Session(
            id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: createdAt),
            updatedAt: Timestamp(millisecondsSinceEpoch: updatedAt), stack: try StoredSession.decodeList(stack),
            queue: try StoredSession.decodeList(queue), ttlSeconds: ttl)
    }

    /// Creates or brings the schema to `PostgresSchema.currentVersion`, each step in its own
    /// transaction, holding the advisory lock so that only one instance migrates at a time.
    /// Returns why the database is refused, without having written to it, or nil when it is ready.
    private static func migrate(_ connection: PostgresConnection) throws(PostgresError) -> String? {
        try connection.execute("SELECT pg_advisory_lock($1)", [String(PostgresSchema.migrationLockKey)])
        defer {
            _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [String(PostgresSchema.migrationLockKey)])
        }
        let table = PostgresSchema.versionTable
        let marked = try connection.execute("SELECT to_regclass($1) IS NOT NULL", [table]).scalar == "t"
        var version = 0
        if marked {
            version = Int(try connection.execute("SELECT coalesce(max(version), 0) FROM \(table)").scalar ?? "0") ?? 0
            guard version <= PostgresSchema.currentVersion else {
                return
                    "the database has ModalStack schema version \(version), newer than this build's \(PostgresSchema.currentVersion)"
            }
        } else {
            // Only an empty schema becomes ModalStack's: never write into another application's tables.
            let others = try connection.execute(
                """
                SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
                WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p', 'v', 'm', 'f')
                """
            ).scalar
            if let others {
                return
                    "the database's schema holds tables of another application (\(others)) and no \(table); refusing to use it"
            }
            try connection.execute(
                """
                CREATE TABLE \(table) (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
        }
        for step in version..<PostgresSchema.currentVersion {
            try connection.transaction { () throws(PostgresError) in
                try connection.execute(PostgresSchema.migrations[step])
                try connection.execute("INSERT INTO \(table) (version) VALUES ($1)", [String(step + 1)])
            }
        }
        return nil
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

    /// The connection string without its password, for messages.
    static func displayName(_ connectionString: String) -> String {
        for scheme in ["postgresql://", "postgres://"] where connectionString.hasPrefix(scheme) {
            // postgresql://user:secret@host/db → postgresql://user@host/db
            let rest = connectionString.dropFirst(scheme.count)
            guard let at = rest.lastIndex(of: "@") else { return connectionString }
            let user = rest[..<at].split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            return scheme + user + String(rest[at...])
        }
        return connectionString.split(separator: " ").filter { !$0.hasPrefix("password=") }.joined(separator: " ")
    }
}
