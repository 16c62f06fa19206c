import Locking
import ModalStackCore
import ModalStackPostgres
import ModalStackService
import ModalStackStore
import ModalStackTestSupport
import Testing

/// Two services on one PostgreSQL database, as two instances: a change one decided on a state the
/// other then changed is superseded at its commit and decided again on what is stored now.
@Suite(
    "Session service on a shared database",
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
)
struct SharedStoreServiceTests {
    /// Two harnesses (instances) on a new database; the first one's commits can be held.
    private func instances() throws -> (first: ServiceHarness, second: ServiceHarness) {
        let server = try PostgresServer.shared()
        let database = server.connectionString(database: try server.createDatabase("service"))
        let open: @Sendable (ManualTime) throws -> any SessionStore = { time in
            try PostgresSessionStore(connectionString: database, time: time)
        }
        return (try ServiceHarness(store: open), try ServiceHarness(store: open))
    }

    /// Two harnesses on a new database; the first hears nothing of the other's commits, as an
    /// instance before the notification arrives.
    private func deafAndListening() throws -> (first: ServiceHarness, second: ServiceHarness) {
        let server = try PostgresServer.shared()
        let database = server.connectionString(database: try server.createDatabase("service"))
        let first = try ServiceHarness { time in
            NotListening(base: try PostgresSessionStore(connectionString: database, time: time))
        }
        return (first, try ServiceHarness { time in try PostgresSessionStore(connectionString: database, time: time) })
    }

    private func present(_ destination: String) -> Command {
        .present(PresentRequest(destination: destination))
    }

    @Test("a change superseded by another instance's is decided again on top of it: both are kept")
    func supersededChangeIsDecidedAgain() throws {
        let (first, second) = try instances()
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        // The first instance decides on version 1; its commit waits while the second commits version 2.
        first.store.closeGate()
        let held = first.submit(present("b"), on: "s")
        #expect(first.store.waitForHeldCommit())
        #expect(second.change(present("c"), on: "s")?.answer?.version == 2)
        first.store.open()
        let answer = try #require(held.wait()?.answer)
        #expect(answer.version == 3)
        let session = try #require(try second.service.session(id: "s"))
        #expect(session.version == 3)
        #expect(session.stack.map(\.destination) == ["a", "c", "b"])
        #expect(try first.service.changes(sessionID: "s", after: 0, eventLimit: 10).map(\.version) == [1, 2, 3])
    }

    @Test("with If-Match, a change superseded by another instance's is refused with the version it lost to")
    func supersededConditionalChangeIsRefused() throws {
        let (first, second) = try instances()
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        first.store.closeGate()
        let held = first.submit(present("b"), on: "s", expecting: .oneOf([1]))
        #expect(first.store.waitForHeldCommit())
        #expect(second.change(present("c"), on: "s")?.answer?.version == 2)
        first.store.open()
        guard case .versionMismatch(let current) = held.wait()?.refusal else {
            Issue.record("the superseded conditional change was not refused as a version mismatch")
            return
        }
        #expect(current == 2)
        #expect(try first.service.session(id: "s")?.stack.map(\.destination) == ["a", "c"])
    }

    @Test("the same idempotency key on two instances at once: the change is made once, the other gets the replay")
    func keyRacingAcrossInstances() throws {
        let (first, second) = try instances()
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        let key = IdempotencyKey(scope: "s", key: "retry-1", fingerprint: [7])
        first.store.closeGate()
        let held = first.submit(present("b"), on: "s", key: key)
        #expect(first.store.waitForHeldCommit())
        // The client's retry lands on the other instance while the first is still committing.
        #expect(second.change(present("b"), on: "s", key: key)?.answer?.version == 2)
        first.store.open()
        let replayed = try #require(held.wait()?.replayed)
        #expect(replayed.headers["Version"] == "2")
        #expect(try first.service.session(id: "s")?.stack.map(\.destination) == ["a", "b"])
    }

    @Test("another instance committing the same key between this one's key lookup and its read: a replay")
    func keyCommittedBetweenLookupAndRead() throws {
        let server = try PostgresServer.shared()
        let database = server.connectionString(database: try server.createDatabase("service"))
        let first = try ServiceHarness { time in try PostgresSessionStore(connectionString: database, time: time) }
        let key = IdempotencyKey(scope: "s", key: "retry-2", fingerprint: [9])
        // The second instance's first lookup of the key finds nothing, and the first instance then
        // commits the same request before the second reads the session.
        let second = try ServiceHarness { time in
            AfterFirstKeyLookup(base: try PostgresSessionStore(connectionString: database, time: time)) {
                #expect(first.change(present("b"), on: "s", key: key)?.answer?.version == 2)
            }
        }
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        let replayed = try #require(second.change(present("b"), on: "s", key: key)?.replayed)
        #expect(replayed.headers["Version"] == "2")
        #expect(try first.service.session(id: "s")?.version == 2)
    }

    @Test("a deletion superseded by another instance's change still deletes; one with If-Match is refused")
    func supersededDeletion() throws {
        let (first, second) = try instances()
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        #expect(first.change(present("a"), on: "t")?.answer?.version == 1)
        first.store.closeGate()
        let unconditional = Eventually<Result<Void, ChangeRefusal>>()
        first.service.delete(sessionID: "s", expecting: nil) { unconditional.set($0) }
        let conditional = Eventually<Result<Void, ChangeRefusal>>()
        first.service.delete(sessionID: "t", expecting: .oneOf([1])) { conditional.set($0) }
        #expect(first.store.waitForHeldCommit())
        #expect(second.change(present("c"), on: "s")?.answer?.version == 2)
        #expect(second.change(present("c"), on: "t")?.answer?.version == 2)
        first.store.open()
        #expect((try? unconditional.wait()?.get()) != nil)
        #expect(try second.service.session(id: "s") == nil)
        guard case .failure(.versionMismatch(let current)) = conditional.wait() else {
            Issue.record("the superseded conditional deletion was not refused")
            return
        }
        #expect(current == 2)
        #expect(try second.service.session(id: "t")?.version == 2)
    }

    @Test(
        "a read answers from memory while the store's stamp matches; another instance's change, or the session made again, is read whole"
    )
    func readsFromMemoryWhileCurrent() throws {
        // Only the stamp can tell the first instance of the other's commits.
        let (first, second) = try deafAndListening()
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        let reads = first.store.sessionReads
        #expect(try first.service.session(id: "s")?.stack.map(\.destination) == ["a"])
        #expect(first.store.sessionReads == reads, "a session the store holds as it is in memory was read whole")

        #expect(second.change(present("b"), on: "s")?.answer?.version == 2)
        #expect(try first.service.session(id: "s")?.stack.map(\.destination) == ["a", "b"])
        #expect(try first.service.session(id: "s")?.version == 2)
        #expect(first.store.sessionReads == reads + 1, "the newer version was not read once and then kept")

        // Held at version 1, then deleted and made again on the other instance a second later:
        // version 1 again, but another state.
        #expect(first.change(present("c"), on: "t")?.answer?.version == 1)
        #expect(try first.service.session(id: "t")?.stack.map(\.destination) == ["c"])
        let deleted = Eventually<Result<Void, ChangeRefusal>>()
        second.service.delete(sessionID: "t", expecting: nil) { deleted.set($0) }
        #expect((try? deleted.wait()?.get()) != nil)
        second.time.advance(by: .seconds(1))
        #expect(second.change(present("d"), on: "t")?.answer?.version == 1)
        #expect(try first.service.session(id: "t")?.stack.map(\.destination) == ["d"])
    }

    @Test(
        "a change decided on a session held in memory that another instance changed or deleted is decided again, never stored over it"
    )
    func changesOnStaleMemory() throws {
        // What the first instance holds stays stale.
        let (first, second) = try deafAndListening()

        // Deleted on the second: a change on the first is refused, not written as version 2.
        #expect(first.change(present("a"), on: "s")?.answer?.version == 1)
        let deleted = Eventually<Result<Void, ChangeRefusal>>()
        second.service.delete(sessionID: "s", expecting: nil) { deleted.set($0) }
        #expect((try? deleted.wait()?.get()) != nil)
        let refusal = first.change(present("b"), on: "s", createsSession: false)?.refusal
        #expect(
            refusal.map { if case .sessionNotFound = $0 { true } else { false } } == true,
            "\(String(describing: refusal))")
        #expect(try second.service.session(id: "s") == nil)

        // Changed on the second: a precondition the held version fails but the stored one meets
        // is met, and a change builds on the stored version.
        #expect(first.change(present("c"), on: "t")?.answer?.version == 1)
        #expect(second.change(present("d"), on: "t")?.answer?.version == 2)
        #expect(first.change(present("e"), on: "t", expecting: .oneOf([2]))?.answer?.version == 3)
        #expect(second.change(present("f"), on: "t")?.answer?.version == 4)
        #expect(first.change(present("g"), on: "t")?.answer?.version == 5)
        #expect(try second.service.session(id: "t")?.stack.map(\.destination) == ["c", "d", "e", "f", "g"])
    }

    @Test(
        "with a staleness allowed, a read may show a state the other instance replaced, until it is that old or heard of"
    )
    func boundedStaleness() throws {
        let server = try PostgresServer.shared()
        let database = server.connectionString(database: try server.createDatabase("service"))
        let deaf = try ServiceHarness(maxStaleness: .seconds(1)) { time in
            NotListening(base: try PostgresSessionStore(connectionString: database, time: time))
        }
        let listening = try ServiceHarness(maxStaleness: .seconds(60)) { time in
            try PostgresSessionStore(connectionString: database, time: time)
        }
        let writer = try ServiceHarness { time in try PostgresSessionStore(connectionString: database, time: time) }
        #expect(writer.change(present("a"), on: "s")?.answer?.version == 1)
        #expect(try deaf.service.session(id: "s")?.version == 1)
        #expect(try listening.service.session(id: "s")?.version == 1)
        #expect(writer.change(present("b"), on: "s")?.answer?.version == 2)

        // Not heard of: version 1 is shown for as long as the bound allows, not a moment longer.
        deaf.time.advance(by: .milliseconds(1000))
        #expect(try deaf.service.session(id: "s")?.version == 1)
        deaf.time.advance(by: .milliseconds(1))
        #expect(try deaf.service.session(id: "s")?.version == 2)
        // Heard of: the notification ends it long before the minute.
        #expect(
            try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(1)) {
                try listening.service.session(id: "s")?.version == 2
            })
    }

    @Test("reads on one instance see what another committed, whatever the first holds in memory")
    func readYourWritesAcrossInstances() throws {
        let (first, second) = try instances()
        for round in 1...20 {
            let written = try #require(second.change(present("p\(round)"), on: "s")?.answer?.version)
            #expect(try first.service.session(id: "s")?.version == written)
        }
        let deleted = Eventually<Result<Void, ChangeRefusal>>()
        second.service.delete(sessionID: "s", expecting: nil) { deleted.set($0) }
        #expect((try? deleted.wait()?.get()) != nil)
        #expect(try first.service.session(id: "s") == nil)
    }
}

/// A store that never hears of other instances' commits, as an instance before the
/// notification arrives.
private final class NotListening: ForwardingSessionStore, @unchecked Sendable {
    let base: any SessionStore

    init(base: any SessionStore) {
        self.base = base
    }

    func observeOtherWriters(_ handler: @escaping @Sendable (String?) -> Void) {}
}

/// A store that runs `hook` once, right after its first idempotent-response lookup.
private final class AfterFirstKeyLookup: ForwardingSessionStore, @unchecked Sendable {
    let base: any SessionStore
    private let hook: LockedValue<(@Sendable () -> Void)?>

    init(base: any SessionStore, hook: @escaping @Sendable () -> Void) {
        self.base = base
        self.hook = LockedValue(hook)
    }

    func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse? {
        let found = try base.idempotentResponse(scope: scope, key: key)
        runHook()
        return found
    }

    func idempotentResponse(
        scope: String, key: String, then done: @escaping @Sendable (Result<StoredResponse?, StoreError>) -> Void
    ) {
        base.idempotentResponse(scope: scope, key: key) { [self] found in
            runHook()
            done(found)
        }
    }

    private func runHook() {
        hook.withLock { hook in
            defer { hook = nil }
            return hook
        }?()
    }
}
