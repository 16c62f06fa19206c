import Locking
import ModalStackCore
import ModalStackStore
import Synchronization
import Timekeeping

/// The one owner of each session's latest state: what is committed (the session cache, filled
/// from the store) and what is decided but not committed yet (pending), with the queue of
/// commits, behind one lock. ``latest(_:read:in:)`` is the state the next change is decided on.
final class LatestSessions: Sendable {
    /// A session's latest state: pending, else committed (an expired one included, for the caller
    /// to judge). Nil session: it does not exist, or its deletion is pending.
    struct Latest {
        var session: Session?
        var isPending: Bool
    }

    /// What the lock guards: the pending state of each session and the commit queue.
    struct WritePath {
        fileprivate struct PendingSession {
            /// Nil: a deletion is pending.
            var session: Session?
            var count: Int
        }

        fileprivate var pending: [String: PendingSession] = [:]
        var queue = CommitQueue()

        func hasPending(_ id: String) -> Bool {
            pending[id] != nil
        }

        /// Takes a place in the queue for a change decided now; it makes `commit.session` the
        /// session's latest state (unless it writes nothing: then it only waits for those ahead).
        mutating func reserve(_ commit: PendingCommit, writesNothing: Bool) -> CommitQueue.Ticket {
            noteQueued(commit, writesNothing: writesNothing)
            return queue.reserve(commit)
        }

        mutating func enqueue(_ commit: PendingCommit) -> CommitQueue.Action {
            noteQueued(commit, writesNothing: commit.writes.isEmpty)
            return queue.enqueue(commit)
        }

        private mutating func noteQueued(_ commit: PendingCommit, writesNothing: Bool) {
            guard !writesNothing || pending[commit.sessionID] != nil else { return }
            let count = (pending[commit.sessionID]?.count ?? 0) + 1
            let session = writesNothing ? pending[commit.sessionID]?.session : commit.session
            pending[commit.sessionID] = PendingSession(session: session, count: count)
        }

        /// One of the session's pending commits is done; the last one hands it back to the cache.
        fileprivate mutating func settle(_ id: String) {
            guard var entry = pending[id] else { return }
            entry.count -= 1
            pending[id] = entry.count > 0 ? entry : nil
        }
    }

    let cache: SessionCache
    private let store: any SessionStore
    /// How old a shared store's session held here may be and still be shown without asking the
    /// store; 0: never (every read is confirmed).
    private let maxStalenessNanoseconds: Int64
    private let time: any TimeSource
    private let writePath = LockedValue(WritePath())
    /// Counts the batches settled (committed or failed), changed under the lock: a state read
    /// from the store outside the lock is current if no batch settled since.
    private let settledBatches = Atomic<UInt64>(0)

    init(store: any SessionStore, cacheSize: Int, time: any TimeSource, maxStaleness: Duration = .zero) {
        self.store = store
        self.time = time
        maxStalenessNanoseconds = maxStaleness.saturatingNanoseconds
        cache = SessionCache(capacity: cacheSize, clock: { time.monotonicNanoseconds() })
    }

    // MARK: Committed state, read outside the lock

    /// The committed state of a session: from the session cache, or from the store when the cache
    /// does not have it. A shared store may hold a newer state another instance committed, so
    /// there the cached session is shown only once the store proves it current by its stamp, a
    /// round trip that transfers no document; or, within the staleness allowed, if the store showed
    /// it current that recently (another instance's change is forgotten as soon as it is heard of).
    func readCommitted(_ id: String) throws(StoreError) -> CommittedRead {
        switch held(id) {
        case .answered(let read): return read
        case .ask(let settled, let held):
            return try answer(settled, held, try store.session(id: id, unlessAt: held.map { SessionStamp($0.session) }))
        }
    }

    /// ``readCommitted(_:)`` without holding the caller's thread while a shared store answers:
    /// `done` runs once, on the store's thread, or before this returns when no round trip is needed.
    ///
    /// With `unconfirmedForChange`, a shared store's session held in the cache is answered at once,
    /// unconfirmed (``CommittedRead/isConfirmed``): a change decided on it is checked by its commit,
    /// which finds it superseded if another instance changed the session first; any other outcome
    /// must be decided again on a confirmed read.
    func readCommitted(
        _ id: String, unconfirmedForChange: Bool = false,
        then done: @escaping @Sendable (Result<CommittedRead, StoreError>) -> Void
    ) {
        switch held(id, unconfirmedForChange: unconfirmedForChange) {
        case .answered(let read): done(.success(read))
        case .ask(let settled, let held):
            store.session(id: id, unlessAt: held.map { SessionStamp($0.session) }) { [self] stored in
                done(Result { () throws(StoreError) in try answer(settled, held, try stored.get()) })
            }
        }
    }

    /// A session the cache holds, with its rendering.
    private struct Held: Sendable {
        let session: Session
        let rendered: [UInt8]?
    }

    /// What the cache can answer for a session without the store, or what to ask the store.
    private enum CachedAnswer {
        case answered(CommittedRead)
        /// Ask the store whether it holds `held` (nil: the cache holds no session).
        case ask(settled: UInt64, held: Held?)
    }

    private func held(_ id: String, unconfirmedForChange: Bool = false) -> CachedAnswer {
        let settled = settledBatches.load(ordering: .acquiring)
        switch cache.lookup(id) {
        case .session(let session, let rendered, _) where unconfirmedForChange && store.isShared:
            return .answered(
                CommittedRead(
                    settledBatches: settled, session: session, fromStore: false, rendered: rendered, isConfirmed: false)
            )
        case .session(let session, let rendered, let confirmedAt):
            guard store.isShared && !mayShowUnconfirmed(since: confirmedAt) else {
                return .answered(
                    CommittedRead(settledBatches: settled, session: session, fromStore: false, rendered: rendered))
            }
            return .ask(settled: settled, held: Held(session: session, rendered: rendered))
        case .deleted where !store.isShared:
            return .answered(CommittedRead(settledBatches: settled, session: nil, fromStore: false))
        case .deleted, .miss: return .ask(settled: settled, held: nil)
        }
    }

    /// The read, once the store said what it holds against what the cache held.
    private func answer(_ settled: UInt64, _ held: Held?, _ stored: StoredSession) -> CommittedRead {
        switch (stored, held) {
        case (.unchanged, let held?):
            cache.confirmed(held.session)
            return CommittedRead(
                settledBatches: settled, session: held.session, fromStore: false, rendered: held.rendered)
        case (.changed(let session), _):
            return CommittedRead(settledBatches: settled, session: session, fromStore: true)
        case (.unchanged, nil):
            preconditionFailure("a store answered a read of no stamp with unchanged")
        }
    }

    /// Whether a session the store last showed current at `confirmedAt` is within the staleness
    /// allowed (never, when none is).
    private func mayShowUnconfirmed(since confirmedAt: Int64) -> Bool {
        maxStalenessNanoseconds > 0 && time.monotonicNanoseconds() - confirmedAt <= maxStalenessNanoseconds
    }

    /// The session as the store holds it, whatever the cache holds: `done` runs once, on the
    /// store's thread when a shared store is asked.
    func readFromStore(_ id: String, then done: @escaping @Sendable (Result<CommittedRead, StoreError>) -> Void) {
        let settled = settledBatches.load(ordering: .acquiring)
        store.session(id: id, unlessAt: nil) { [self] stored in done(stored.map { answer(settled, nil, $0) }) }
    }

    /// Keeps a session read from the store in the cache, if no batch settled since the read.
    func loaded(_ read: CommittedRead) {
        guard read.fromStore, let session = read.session else { return }
        writePath.withLock { _ in
            if read.isCurrent(settledBatches) { cache.loaded(session) }
        }
    }

    // MARK: The write path, under the lock

    /// Runs `body` under the lock with the session's latest state; nil when `read` is no longer
    /// current and the cache does not hold the session: then read again.
    func decide<Result>(_ id: String, read: CommittedRead, _ body: (inout WritePath, Latest) -> Result) -> Result? {
        writePath.withLock { path in
            guard let latest = latest(id, read: read, in: path) else { return nil }
            return body(&path, latest)
        }
    }

    /// Runs `body` under the lock.
    func withWritePath<Result>(_ body: (inout WritePath) -> Result) -> Result {
        writePath.withLock { body(&$0) }
    }

    /// A batch is durable but for the `superseded` sessions: the cache learns what it committed,
    /// and the superseded sessions' queued changes are taken out, in order after the batch's own.
    func committed(_ batch: [PendingCommit], except superseded: Set<String>) -> [PendingCommit] {
        writePath.withLock { path in
            for commit in batch where !commit.writes.isEmpty && !superseded.contains(commit.sessionID) {
                cache.committed(commit.session, id: commit.sessionID)
            }
            for commit in batch where !superseded.contains(commit.sessionID) {
                path.settle(commit.sessionID)
            }
            defer { settledBatches.add(1, ordering: .releasing) }
            guard !superseded.isEmpty else { return [] }
            let queued = path.queue.removeCommits(of: superseded)
            for id in superseded {
                path.pending[id] = nil
                cache.forget(id)
            }
            return batch.filter { superseded.contains($0.sessionID) } + queued
        }
    }

    /// Nothing of the batch was written: every queued change is taken out (they may build on
    /// it), and every session goes back to its committed state.
    func failed(_ batch: [PendingCommit]) -> [PendingCommit] {
        writePath.withLock { path in
            let rest = path.queue.removeAll()
            path.pending.removeAll()
            settledBatches.add(1, ordering: .releasing)
            return batch + rest
        }
    }

    /// Another instance changed the session: what the cache holds of it is dropped.
    func forget(_ id: String) {
        writePath.withLock { _ in cache.forget(id) }
    }

    private func latest(_ id: String, read: CommittedRead, in path: WritePath) -> Latest? {
        if let pending = path.pending[id] { return Latest(session: pending.session, isPending: true) }
        if read.isCurrent(settledBatches) {
            if read.fromStore, let session = read.session { cache.loaded(session) }
            return Latest(session: read.session, isPending: false)
        }
        // A batch settled since: the cache knows what it committed, unless it let it go.
        switch cache.lookup(id) {
        case .session(let session, _, _): return Latest(session: session, isPending: false)
        case .deleted: return Latest(session: nil, isPending: false)
        case .miss: return nil
        }
    }
}

/// A session's committed state as read outside the lock, and when it was read.
struct CommittedRead {
    /// ``LatestSessions``' count of settled batches before the read.
    let settledBatches: UInt64
    /// Nil: the session does not exist, or is deleted.
    let session: Session?
    /// Whether it came from the store (the session cache did not hold it, or the store
    /// is shared), so the session cache may be given it.
    let fromStore: Bool
    /// The session's JSON, when the session cache held it rendered.
    var rendered: [UInt8]? = nil
    /// False for a shared store's session shown from the cache without asking the store (see
    /// ``LatestSessions/readCommitted(_:unconfirmedForChange:then:)``).
    var isConfirmed = true

    /// Whether no batch settled since the read, so it is still the committed state: only a
    /// settling batch changes what the store or the session cache holds for a session.
    func isCurrent(_ settled: borrowing Atomic<UInt64>) -> Bool {
        settled.load(ordering: .acquiring) == settledBatches
    }
}
