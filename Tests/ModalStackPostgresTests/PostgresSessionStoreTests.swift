import Locking
import ModalStackCore
import ModalStackStore
import ModalStackTestSupport
import Testing

@testable import ModalStackPostgres

/// What only the PostgreSQL engine does: the schema's bookkeeping, refusals and connection
/// failures. What every engine promises is in ModalStackStoreContractTests.
@Suite(
    "PostgreSQL session store",
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
)
struct PostgresSessionStoreTests {
    private func newDatabase() throws -> String {
        let server = try PostgresServer.shared()
        return server.connectionString(database: try server.createDatabase("engine"))
    }

    @Test("a new database is migrated once, even by several stores starting together")
    func migratesOnce() async throws {
        let database = try newDatabase()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let store = try PostgresSessionStore(connectionString: database, poolSize: 1)
                    try store.checkHealth()
                    store.close()
                }
            }
            try await group.waitForAll()
        }
        let connection = try PostgresConnection(database)
        let versions = try connection.execute("SELECT version FROM modalstack_schema ORDER BY version").rows
        #expect(versions.map { $0[0] } == (1...PostgresSchema.currentVersion).map { String($0) })
        // Opening it again changes nothing.
        _ = try PostgresSessionStore(connectionString: database)
        #expect(
            try connection.execute("SELECT count(*) FROM modalstack_schema").scalar
                == "\(PostgresSchema.currentVersion)")
    }

    @Test("a database with another application's tables is refused and left untouched")
    func foreignDatabase() throws {
        let database = try newDatabase()
        let connection = try PostgresConnection(database)
        try connection.execute("CREATE TABLE notes (x integer); INSERT INTO notes VALUES (1)")
        let error = #expect(throws: StoreError.self) { try PostgresSessionStore(connectionString: database) }
        #expect(error?.kind == .corrupt)
        #expect(error?.message.contains("notes") == true)
        let tables = try connection.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'"
        ).rows
        #expect(tables.map { $0[0] } == ["notes"])
    }

    @Test("a schema newer than this build is refused")
    func newerSchema() throws {
        let database = try newDatabase()
        _ = try PostgresSessionStore(connectionString: database)
        let connection = try PostgresConnection(database)
        try connection.execute("INSERT INTO modalstack_schema (version) VALUES (\(PostgresSchema.currentVersion + 1))")
        let error = #expect(throws: StoreError.self) { try PostgresSessionStore(connectionString: database) }
        #expect(error?.kind == .corrupt)
    }

    @Test("no server at the address: unavailable, and the message keeps the password out")
    func connectionRefused() throws {
        let error = #expect(throws: StoreError.self) {
            try PostgresSessionStore(connectionString: "postgresql://someone:secret@127.0.0.1:1/nothing")
        }
        #expect(error?.kind == .unavailable)
        #expect(error?.message.contains("secret") == false)
    }

    @Test("a connection string is shown as libpq reads it, without a password in any form it accepts")
    func connectionStringShown() {
        #expect(PostgresSessionStore.withoutPassword("postgresql://u:pw@h:5/d") == "user=u dbname=d host=h port=5")
        #expect(PostgresSessionStore.withoutPassword("host=h password=pw dbname=d") == "dbname=d host=h")
        #expect(
            PostgresSessionStore.withoutPassword("postgresql://h/d?user=u&password=pw&sslpassword=key")
                == "user=u dbname=d host=h")
        #expect(
            PostgresSessionStore.withoutPassword("host='a b' password = 'p w' dbname='it\\'s'")
                == "dbname='it\\'s' host='a b'")
        #expect(
            PostgresSessionStore.withoutPassword("host=a,b target_session_attrs=read-write")
                == "host=a,b target_session_attrs=read-write")
        #expect(
            PostgresSessionStore.withoutPassword("host=h password='unterminated")
                == "(a connection string libpq cannot read)")
    }

    @Test("the sessions gauge reads PostgreSQL's statistics, which come to the count of live rows")
    func estimatedSessionCount() throws {
        let store = try PostgresSessionStore(connectionString: try newDatabase(), poolSize: 1)
        defer { store.close() }
        try store.commit((0..<5).map { StoreFixtures.save(StoreFixtures.session("s\($0)")) })
        // A connection reports its inserts and deletes up to 10 s after it commits them.
        #expect(
            try waitUntil(timeout: .seconds(20), pollingEvery: .milliseconds(50)) {
                try store.estimatedSessionCount() == 5
            })
        try store.commit([.delete(sessionID: "s0"), .delete(sessionID: "s1")])
        #expect(
            try waitUntil(timeout: .seconds(20), pollingEvery: .milliseconds(50)) {
                try store.estimatedSessionCount() == 3
            })
        #expect(try store.sessionCount() == 3)
    }

    @Test(
        "through PgBouncer in transaction mode: named statements meet another client's; unnamed ones, and settings per transaction, work",
        .enabled(
            if: PostgresServer.pgBouncerUnavailableReason == nil,
            Comment(rawValue: PostgresServer.pgBouncerUnavailableReason ?? "")))
    func transactionPooler() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        // One server connection, which the store's reader and writer connections take in turns.
        let bouncer = try server.startPgBouncer(poolSize: 1)
        let database = try server.createDatabase("pooled")
        let pooled = server.url(database: database, port: bouncer)

        let named = try PostgresSessionStore(connectionString: pooled, poolSize: 1)
        try named.commit([StoreFixtures.save(StoreFixtures.session("s"))])
        // The reader's first statement takes the name the writer's first one holds on that session.
        let error = #expect(throws: StoreError.self) { try named.session(id: "s") }
        #expect(error?.message.contains("already exists") == true, "\(error?.message ?? "")")
        named.close()

        let store = try PostgresSessionStore(
            connectionString: pooled, poolSize: 2, durability: .full, pooler: .transaction,
            listenConnectionString: server.connectionString(database: database))
        defer { store.close() }
        try store.commit([StoreFixtures.save(StoreFixtures.session("t"))])
        #expect(try store.session(id: "s")?.version == 1)
        #expect(try store.session(id: "t")?.version == 1)
        #expect(try store.setting("synchronous_commit") == "on")
        try store.checkHealth()
    }

    @Test("the server stopped: calls fail as unavailable; started again: the same store goes on")
    func serverRestart() throws {
        let server = try PostgresServer()
        let database = server.connectionString(database: try server.createDatabase("restart"))
        let store = try PostgresSessionStore(connectionString: database, poolSize: 2)
        let session = StoreFixtures.session("s")
        try store.commit([StoreFixtures.save(session)])
        try server.stopServer()
        for error in [
            #expect(throws: StoreError.self) { try store.session(id: "s") },
            #expect(throws: StoreError.self) { try store.commit([StoreFixtures.save(StoreFixtures.session("t"))]) },
            #expect(throws: StoreError.self) { try store.checkHealth() },
        ] {
            #expect(error?.kind == .unavailable, "\(String(describing: error))")
        }
        try server.startServer()
        // No call fails for connections that broke while idle: they are replaced on use.
        try store.checkHealth()
        #expect(try store.session(id: "s") == session)
        try store.commit([StoreFixtures.save(StoreFixtures.session("t"))])
        #expect(try store.sessionCount() == 2)
    }

    @Test("idle connections that broke are replaced without failing the call")
    func brokenIdleConnections() throws {
        let database = try newDatabase()
        let store = try PostgresSessionStore(connectionString: database, poolSize: 2)
        try store.commit([StoreFixtures.save(StoreFixtures.session("s"))])
        // Every other connection to this database is ended by the server, as a failover would.
        let admin = try PostgresConnection(database)
        try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        #expect(try store.session(id: "s") != nil)
        try store.commit([StoreFixtures.save(StoreFixtures.session("t"))])
    }

    @Test(
        "durability sets synchronous_commit in the transactions that commit, set per transaction through a pooler",
        arguments: Durability.allCases, [PostgresOptions.Pooler.none, .transaction])
    func durability(_ durability: Durability, pooler: PostgresOptions.Pooler) throws {
        let store = try PostgresSessionStore(
            connectionString: try newDatabase(), durability: durability, pooler: pooler)
        #expect(try store.setting("synchronous_commit") == (durability == .full ? "on" : "off"))
        // Statements prepared once are planned once (through a pooler none is prepared).
        #expect(try store.setting("plan_cache_mode") == (pooler == .none ? "force_generic_plan" : "auto"))
        #expect(try store.setting("enable_seqscan") == (pooler == .none ? "off" : "on"))
    }

    @Test("statements planned while the tables were empty reach rows through their indexes as the tables grow")
    func plansKeepUsingIndexes() throws {
        let database = try newDatabase()
        try PostgresSessionStore(connectionString: database).close()
        let admin = try PostgresConnection(database)
        /// Statistics reach the server when a backend ends: waits until every other one has.
        func othersEnded() -> Bool {
            waitUntil(timeout: .seconds(20), pollingEvery: .milliseconds(10)) {
                (try? admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).scalar) == "0"
            }
        }
        try #require(othersEnded())
        // The migration's index builds counted as scans. Then the empty tables are analyzed, as
        // autovacuum does a new database's: their statistics now say they hold nothing.
        try admin.execute("SELECT pg_stat_reset()")
        try admin.execute("VACUUM ANALYZE")
        let store = try PostgresSessionStore(connectionString: database)
        // The first commit prepares (and plans) the commit's statements on those tables.
        let sessions = 40
        for version in Int64(1)...6 {
            try store.commit(
                (0..<sessions).map { index in
                    let session = StoreFixtures.session("s\(index)", version: version)
                    var gone = session.stack[0]
                    gone.id = "s\(index)-gone\(version)"
                    return StoreFixtures.save(
                        session, dismissed: version > 1 ? [StoreFixtures.dismissed(gone, at: 1_790_000_001_000)] : [])
                })
        }
        for index in 0..<sessions {
            #expect(try store.session(id: "s\(index)", unlessAt: nil) != .unchanged)
            #expect(try store.changes(sessionID: "s\(index)", after: 4, eventLimit: 10).count == 2)
            #expect(try store.dismissedPresentation(id: "s\(index)-gone2", sessionID: "s\(index)") != nil)
        }
        store.close()
        try #require(othersEnded())
        let rows = try admin.execute(
            """
            SELECT relname, seq_scan, idx_scan FROM pg_stat_user_tables
            WHERE relname IN ('sessions', 'changes', 'dismissed_presentations') ORDER BY relname
            """
        ).rows
        #expect(rows.map { $0[0] } == ["changes", "dismissed_presentations", "sessions"])
        for row in rows {
            let (sequential, index) = (Int(row[1] ?? "") ?? -1, Int(row[2] ?? "") ?? -1)
            #expect(
                sequential == 0 && index >= sessions, "\(row[0] ?? ""): \(sequential) whole scans, \(index) by index")
        }
    }

    @Test("closing the store answers every read still waiting for PostgreSQL, batched or not, with an error")
    func closeAnswersWaitingReads() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("engine")
        let store = try PostgresSessionStore(connectionString: server.connectionString(database: database))
        try store.commit([StoreFixtures.save(StoreFixtures.session("s"))])
        // Every read below waits for the sessions table, as on a database that stopped answering.
        let lock = try server.lock(table: "sessions", database: database)
        defer { try? server.release(lock) }
        let failed = LockedValue<[Bool]>([])
        @Sendable func answered<Value>(_ result: Result<Value, StoreError>) {
            let isFailure = if case .failure = result { true } else { false }
            failed.withLock { $0.append(isFailure) }
        }
        let reads = 4
        for _ in 0..<reads {
            store.recentSessions(after: nil, limit: 10, at: Timestamp(millisecondsSinceEpoch: 0), then: answered)
            store.history(sessionID: "s", through: 1, then: answered)
            store.session(id: "s", unlessAt: nil, then: answered)
        }
        store.close()
        #expect(failed.withLock { $0 } == Array(repeating: true, count: reads * 3))
    }

    @Test("connections time out in seconds by default; the connection string's own timeouts win")
    func connectionDefaults() throws {
        let database = try newDatabase()
        let plain = try PostgresConnection(database)
        #expect(plain.option("connect_timeout") == "5")
        #expect(plain.option("tcp_user_timeout") == "10000")
        let chosen = try PostgresConnection(database + " connect_timeout=2")
        #expect(chosen.option("connect_timeout") == "2")
        #expect(try chosen.execute("SELECT current_database()").scalar == plain.option("dbname"))
    }

    @Test("SQLSTATEs map to what a client can do")
    func errorKinds() {
        func kind(_ state: String?, broken: Bool = false) -> StoreError.Kind {
            PostgresSessionStore.storeError(
                PostgresError(sqlState: state, message: "m", connectionBroken: broken), database: "d"
            ).kind
        }
        #expect(kind("53100") == .full)
        #expect(kind("08006") == .unavailable)
        #expect(kind("57P01") == .unavailable)
        #expect(kind("53300") == .unavailable)
        #expect(kind("40001") == .unavailable)
        #expect(kind("25006") == .unavailable)
        #expect(kind(nil, broken: true) == .unavailable)
        #expect(kind("23505") == .failed)
        #expect(kind("P0001") == .failed)
    }

    @Test("bytea hex text round-trips every byte")
    func bytes() {
        let all = (0...255).map { UInt8($0) }
        #expect(PostgresBytes.decode(PostgresBytes.encode(all)) == all)
        #expect(PostgresBytes.decode(PostgresBytes.encode([])) == [])
        #expect(PostgresBytes.decode("xyz") == nil)
    }
}
