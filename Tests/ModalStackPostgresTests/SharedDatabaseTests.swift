import Dispatch
import Locking
import ModalStackCore
import ModalStackStore
import ModalStackTestSupport
import Testing
import Timekeeping

@testable import ModalStackPostgres

private typealias Fixtures = StoreFixtures

/// Two stores on one database, as two instances would hold them: each write checks the version
/// it expects, so what one decided on a stale state is superseded, never written over the other's.
@Suite(
    "PostgreSQL shared by instances",
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
)
struct SharedDatabaseTests {
    /// A new database and a way to open stores on it.
    private func database() throws -> String {
        let server = try PostgresServer.shared()
        return server.connectionString(database: try server.createDatabase("shared"))
    }

    @Test("a save decided on a stale version is superseded; the rest of its commit lands")
    func staleSave() throws {
        let database = try database()
        let first = try PostgresSessionStore(connectionString: database)
        let second = try PostgresSessionStore(connectionString: database)
        #expect(first.isShared)
        try first.commit([Fixtures.save(Fixtures.session("s"))])
        let winner = Fixtures.session("s", version: 2, stackSize: 1)
        #expect(try second.commit([Fixtures.save(winner)]).isEmpty)

        // The first store still believes in version 1 and writes its own version 2.
        let loser = Fixtures.session("s", version: 2, stackSize: 3)
        let superseded = try first.commit([Fixtures.save(loser), Fixtures.save(Fixtures.session("t"))])
        #expect(superseded == ["s"])
        #expect(try first.session(id: "s") == winner)
        #expect(try first.change(sessionID: "s", version: 2) == Fixtures.change(of: winner))
        #expect(try first.session(id: "t") == Fixtures.session("t"))
        // A version 1 over an existing session is superseded too.
        #expect(try second.commit([Fixtures.save(Fixtures.session("t", stackSize: 0))]) == ["t"])
        #expect(try first.session(id: "t") == Fixtures.session("t"))
    }

    @Test("every write of a superseded session is left out, even those after the one that failed")
    func wholeSessionLeftOut() throws {
        let store = try PostgresSessionStore(connectionString: try database())
        try store.commit([Fixtures.save(Fixtures.session("s")), Fixtures.save(Fixtures.session("s", version: 2))])
        // Version 4 expects 3, which is not there; version 5 would follow it.
        let superseded = try store.commit([
            Fixtures.save(Fixtures.session("s", version: 4)), Fixtures.save(Fixtures.session("s", version: 5)),
        ])
        #expect(superseded == ["s"])
        #expect(try store.session(id: "s")?.version == 2)
        #expect(try store.changes(sessionID: "s", after: 0, eventLimit: 10).map(\.version) == [1, 2])
    }

    @Test("a deletion expecting another version is superseded and removes nothing; one expecting none removes")
    func conditionalDelete() throws {
        let store = try PostgresSessionStore(connectionString: try database())
        let session = Fixtures.session("s")
        try store.commit([Fixtures.save(session, dismissed: [Fixtures.dismissed(session.stack[0], at: 5)])])
        #expect(try store.commit([.delete(sessionID: "s", expectedVersion: 7)]) == ["s"])
        #expect(try store.session(id: "s") == session)
        #expect(try store.changes(sessionID: "s", after: 0, eventLimit: 10).count == 1)
        #expect(try store.dismissedPresentation(id: session.stack[0].id, sessionID: "s") != nil)

        #expect(try store.commit([.delete(sessionID: "s", expectedVersion: 1)]).isEmpty)
        #expect(try store.session(id: "s") == nil)
        try store.commit([Fixtures.save(session)])
        #expect(try store.commit([.delete(sessionID: "s")]).isEmpty)
        #expect(try store.session(id: "s") == nil)
        #expect(try store.changes(sessionID: "s", after: 0, eventLimit: 10).isEmpty)
        // Deleting what is not there, expecting nothing, is no conflict.
        #expect(try store.commit([.delete(sessionID: "s")]).isEmpty)
    }

    @Test("the sweep skips a session another transaction holds, without waiting for it")
    func expirySkipsLocked() throws {
        let database = try database()
        let store = try PostgresSessionStore(connectionString: database)
        try store.commit([Fixtures.save(Fixtures.session("held")), Fixtures.save(Fixtures.session("free"))])
        let holder = try PostgresConnection(database)
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM sessions WHERE id = 'held' FOR UPDATE")

        let result = LockedValue<Result<Set<String>, StoreError>?>(nil)
        DispatchQueue.global().async {
            let outcome = Result { () throws(StoreError) in
                try store.commit([.expire(sessionID: "held", version: 1), .expire(sessionID: "free", version: 1)])
            }
            result.withLock { $0 = outcome }
        }
        let finished = waitUntil(timeout: .seconds(10)) { result.withLock { $0 != nil } }
        try holder.execute("ROLLBACK")
        #expect(finished, "the sweep's commit waited for the transaction holding the session")
        #expect(try result.withLock { $0 }?.get() == ["held"])
        #expect(try store.session(id: "held") != nil)
        #expect(try store.session(id: "free") == nil)
        // A version that moved on is not expired any more.
        #expect(try store.commit([.expire(sessionID: "held", version: 9)]) == ["held"])
        #expect(try store.session(id: "held") != nil)
    }

    @Test("an idempotency key another instance answered first supersedes the session; the rest commits")
    func keyTakenElsewhere() throws {
        let database = try database()
        let first = try PostgresSessionStore(connectionString: database)
        let second = try PostgresSessionStore(connectionString: database)
        func response(_ body: String) -> StoredResponse {
            StoredResponse(
                scope: "", key: "create-1", fingerprint: [1, 2], status: 201, headers: ["Location": body],
                body: Array(body.utf8), createdAt: Timestamp(millisecondsSinceEpoch: SystemTime().wallMilliseconds()))
        }
        try first.commit([Fixtures.save(Fixtures.session("a"), response: response("a"))])
        // The same request retried on the other instance made another session for the same key.
        let superseded = try second.commit([
            Fixtures.save(Fixtures.session("b"), response: response("b")), Fixtures.save(Fixtures.session("c")),
        ])
        #expect(superseded == ["b"])
        #expect(try second.session(id: "b") == nil)
        #expect(try second.changes(sessionID: "b", after: 0, eventLimit: 10).isEmpty)
        #expect(try second.session(id: "c") != nil)
        #expect(try second.idempotentResponse(scope: "", key: "create-1")?.body == Array("a".utf8))
    }

    @Test("a store hears the sessions another store committed, not its own, and nil after a lost connection")
    func otherWritersHeard() throws {
        let database = try database()
        let first = try PostgresSessionStore(connectionString: database)
        let second = try PostgresSessionStore(connectionString: database)
        defer {
            first.close()
            second.close()
        }
        let heardByFirst = LockedValue<[String?]>([])
        let heardBySecond = LockedValue<[String?]>([])
        first.observeOtherWriters { id in heardByFirst.withLock { $0.append(id) } }
        second.observeOtherWriters { id in heardBySecond.withLock { $0.append(id) } }
        try first.commit([Fixtures.save(Fixtures.session("a")), Fixtures.save(Fixtures.session("b"))])
        try first.commit([.delete(sessionID: "a")])
        #expect(waitUntil { heardBySecond.withLock { $0.count == 3 } })
        #expect(heardBySecond.withLock { $0 } == ["a", "b", "a"])
        // A superseded write announces nothing.
        #expect(try second.commit([Fixtures.save(Fixtures.session("b"))]) == ["b"])
        try second.commit([Fixtures.save(Fixtures.session("c"))])
        #expect(waitUntil { heardByFirst.withLock { !$0.isEmpty } })
        #expect(heardByFirst.withLock { $0 } == ["c"])

        // The listening connection is cut: once it listens again, the store says it may have missed some.
        let killer = try PostgresConnection(database)
        try killer.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'"
        )
        #expect(waitUntil(timeout: .seconds(10)) { heardBySecond.withLock { $0.contains(nil) } })
    }

    @Test("writers on two stores racing on one session: every version is written once, none skipped")
    func racingWriters() async throws {
        let database = try database()
        let stores = try (0..<2).map { _ in try PostgresSessionStore(connectionString: database) }
        try stores[0].commit([Fixtures.save(Fixtures.session("s"))])
        let writersPerStore = 3
        let attempts = 40
        // Each writer reads the session and writes the next version with its own mark, as an
        // instance does; a superseded write is read again and retried.
        let wins = try await withThrowingTaskGroup(of: [Int64: String].self) { group in
            for (storeIndex, store) in stores.enumerated() {
                for writer in 0..<writersPerStore {
                    group.addTask {
                        var won: [Int64: String] = [:]
                        for attempt in 0..<attempts {
                            let mark = "w\(storeIndex)-\(writer)-\(attempt)"
                            while true {
                                var session = try #require(try store.session(id: "s"))
                                session.version += 1
                                session.stack[0].destination = mark
                                if try store.commit([Fixtures.save(session)]).isEmpty {
                                    won[session.version] = mark
                                    break
                                }
                            }
                        }
                        return won
                    }
                }
            }
            return try await group.reduce(into: [Int64: String]()) { all, won in
                all.merge(won) { first, _ in
                    Issue.record("version won twice")
                    return first
                }
            }
        }
        let total = stores.count * writersPerStore * attempts
        #expect(wins.count == total)
        #expect(try stores[1].session(id: "s")?.version == Int64(total + 1))
        let logged = try stores[1].changes(sessionID: "s", after: 0, eventLimit: total + 10)
        #expect(logged.map(\.version) == Array(1...Int64(total + 1)))
        // The stored state is the last winner's, not a loser's written over it.
        #expect(try stores[0].session(id: "s")?.stack[0].destination == wins[Int64(total + 1)])
    }
}
