import Dispatch
import Locking
import ModalStackCore
import ModalStackSQLite
import ModalStackService
import ModalStackStore
import ModalStackTestSupport

/// A service over a real SQLite file, with time moved by hand and a gate in front of the
/// store's commits, so a test can hold the committer and see what queues behind it.
final class ServiceHarness: Sendable {
    let directory: TemporaryDirectory
    let time = ManualTime()
    let store: GatedStore
    let service: SessionService
    let metrics = CountedCommits()

    /// A service over a new SQLite file, or over `store` when given (a shared PostgreSQL database).
    init(
        cacheSize: Int = 100, maxStaleness: Duration = .zero,
        store: (@Sendable (ManualTime) throws -> any SessionStore)? = nil
    ) throws {
        directory = try TemporaryDirectory()
        let path = directory.appending("sessions.sqlite")
        let time = time
        let base: any SessionStore = try store?(time) ?? SQLiteSessionStore(path: path, time: time)
        self.store = GatedStore(base)
        service = SessionService(
            store: self.store, rules: SessionRules(), catalog: nil, metrics: metrics,
            cacheSize: cacheSize, maxStaleness: maxStaleness, time: time)
    }

    deinit {
        store.close()
    }

    /// Submits a change; the returned box gets its result.
    func submit(
        _ command: Command, on sessionID: String, createsSession: Bool = true, expecting: ExpectedVersion? = nil,
        key: IdempotencyKey? = nil
    ) -> Eventually<ChangeResult<TestAnswer>> {
        let result = Eventually<ChangeResult<TestAnswer>>()
        let request = ChangeRequest(
            sessionID: sessionID, command: command, createsSession: createsSession, expectedVersion: expecting,
            idempotencyKey: key)
        service.submit(request, render: TestAnswer.init) { result.set($0) }
        return result
    }

    /// Submits a change and waits for its result.
    func change(
        _ command: Command, on sessionID: String, createsSession: Bool = true, expecting: ExpectedVersion? = nil,
        key: IdempotencyKey? = nil
    ) -> ChangeResult<TestAnswer>? {
        submit(command, on: sessionID, createsSession: createsSession, expecting: expecting, key: key).wait()
    }
}

/// What the tests render from an outcome: the session's version and JSON.
struct TestAnswer: ReplayableAnswer {
    let version: Int64
    let body: [UInt8]

    init(_ outcome: CommandOutcome, _ document: SessionDocument) {
        version = outcome.session.version
        body = document.bytes
    }

    var recorded: (status: Int, headers: [String: String], body: [UInt8]) {
        (200, ["Version": String(version)], body)
    }
}

extension ChangeResult {
    var answer: Answer? {
        if case .answered(let answer) = self { return answer }
        return nil
    }

    var replayed: StoredResponse? {
        if case .replayed(let stored) = self { return stored }
        return nil
    }

    var refusal: ChangeRefusal? {
        if case .refused(let refusal) = self { return refusal }
        return nil
    }
}

/// A value set once, from another thread, and waited for.
final class Eventually<Value: Sendable>: Sendable {
    private let value = LockedValue<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func set(_ newValue: Value) {
        value.withLock { $0 = newValue }
        done.signal()
    }

    /// The value, once set; nil if it is not set within ten seconds.
    func wait() -> Value? {
        guard done.wait(timeout: .now() + .seconds(10)) == .success else { return nil }
        done.signal()
        return value.withLock { $0 }
    }

    var isSet: Bool { value.withLock { $0 != nil } }
}

/// A store, with every commit and every whole read of a session counted and, while the gate is
/// closed, the next commit held until the test opens it.
final class GatedStore: ForwardingSessionStore {
    let base: any SessionStore
    private let state = LockedValue((closed: false, commitSizes: [Int](), sessionReads: 0))
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    init(_ base: any SessionStore) {
        self.base = base
    }

    /// The next commit waits for ``open()``.
    func closeGate() {
        state.withLock { $0.closed = true }
    }

    /// Waits until a commit is held at the closed gate.
    func waitForHeldCommit() -> Bool {
        entered.wait(timeout: .now() + .seconds(10)) == .success
    }

    func open() {
        state.withLock { $0.closed = false }
        opened.signal()
    }

    /// How many writes each commit so far carried.
    var commitSizes: [Int] { state.withLock { $0.commitSizes } }

    /// How many times a whole session was read.
    var sessionReads: Int { state.withLock { $0.sessionReads } }

    func session(id: String) throws(StoreError) -> Session? {
        state.withLock { $0.sessionReads += 1 }
        return try base.session(id: id)
    }

    func session(id: String, unlessAt stamp: SessionStamp?) throws(StoreError) -> StoredSession {
        let stored = try base.session(id: id, unlessAt: stamp)
        if case .changed = stored { state.withLock { $0.sessionReads += 1 } }
        return stored
    }

    func session(
        id: String, unlessAt stamp: SessionStamp?,
        then done: @escaping @Sendable (Result<StoredSession, StoreError>) -> Void
    ) {
        base.session(id: id, unlessAt: stamp) { [self] stored in
            if case .success(.changed) = stored { state.withLock { $0.sessionReads += 1 } }
            done(stored)
        }
    }

    func commit(_ writes: [SessionWrite]) throws(StoreError) -> Set<String> {
        let held = state.withLock { state in
            state.commitSizes.append(writes.count)
            return state.closed
        }
        if held {
            entered.signal()
            opened.wait()
        }
        return try base.commit(writes)
    }
}

/// Counts what the service reports about its commits.
final class CountedCommits: CommitMetrics {
    private let state = LockedValue((commits: 0, events: 0))

    func recordCommit(seconds: Double) {
        state.withLock { $0.commits += 1 }
    }

    func recordEvents(_ events: [SessionEvent]) {
        state.withLock { $0.events += events.count }
    }

    var commits: Int { state.withLock { $0.commits } }
}

/// A stack of one presentation; it changes the session unless the stack already is just that.
func replaceStack(_ destination: String) -> Command {
    .replaceStack(ReplaceStackRequest(stack: [PresentRequest(destination: destination)]))
}
