import Dispatch
import Locking
import ModalStackCore
import ModalStackStore
import Synchronization
import Timekeeping

/// Runs changes against sessions: preconditions, idempotent replays, the core's rules, then a
/// group commit, then the answer and the notification of watchers. It knows nothing of HTTP:
/// callers pass commands in, and get outcomes back as values.
///
/// Changes are applied one at a time, in order, to the latest state of their session (committed
/// or still waiting for its commit), so every version is given once. They are committed in
/// batches: one writer takes every change waiting at that moment into one transaction (one sync
/// in `full` durability), then answers them all. No caller waits for a commit: completions run
/// on the committing thread. Reads see committed state only. Nothing under the commit lock
/// reads or writes the store.
///
/// On a store shared with other instances, what the session cache holds is checked against the
/// store before it answers, a change another instance committed first sends the changes built on
/// the old state back to be decided again, and watchers hear of other instances' changes.
public final class SessionService: Sendable {
    /// The most changes one transaction takes.
    static let maxBatch = 512

    let store: any SessionStore
    let rules: SessionRules
    public let catalog: Catalog?
    let metrics: any CommitMetrics
    let time: any TimeSource
    /// Makes the ids of new sessions and presentations.
    public let makeID: @Sendable () -> String
    public let notifier = SessionNotifier()
    let cache: SessionCache
    /// Changes applied but not yet committed, and the queue of commits.
    private let pending = LockedValue(PendingState())
    /// Counts the batches settled (committed or failed), changed under `pending`'s lock: a state
    /// read from the store outside the lock is current if no batch settled since.
    private let settledBatches = Atomic<UInt64>(0)
    private let committer = DispatchQueue(label: "modalstack.commit")
    /// Idempotency keys whose first request is still running: a retry then is refused.
    private let keysInFlight = LockedValue(Set<IdempotencyKey.Name>())
    /// Why the last commit failed, until one succeeds: readiness reports it.
    private let lastCommitFailure = LockedValue<StoreError?>(nil)

    public init(
        store: any SessionStore, rules: SessionRules, catalog: Catalog?, metrics: any CommitMetrics,
        cacheSize: Int, time: any TimeSource = SystemTime(),
        makeID: @escaping @Sendable () -> String = RandomID.make
    ) {
        self.store = store
        self.rules = rules
        self.catalog = catalog
        self.metrics = metrics
        self.time = time
        self.makeID = makeID
        self.cache = SessionCache(capacity: cacheSize)
        store.observeOtherWriters { [weak self] id in self?.changedElsewhere(id) }
    }

    // MARK: Reads (committed state only)

    /// The session, unless it does not exist or expired.
    public func session(id: String) throws(StoreError) -> Session? {
        try renderedSession(id: id)?.session
    }

    /// The session and its JSON, rendered once per version and kept in the session cache.
    public func renderedSession(id: String) throws(StoreError) -> (session: Session, body: [UInt8])? {
        let now = time.now()
        let read = try readCommitted(id)
        guard let session = read.session, !session.isExpired(at: now) else { return nil }
        var rendered = read.rendered
        if read.fromStore {
            pending.withLock { _ in
                if read.isCurrent(settledBatches) { cache.loaded(session) }
            }
            rendered = cache.rendering(of: session)
        }
        if let rendered { return (session, rendered) }
        let body = session.serialized()
        cache.rendered(body, for: session)
        return (session, body)
    }

    /// A presentation of `session` in any state: on the stack, queued, or dismissed and still kept.
    public func presentation(id: String, in session: Session) throws(StoreError) -> Presentation? {
        if let active = session.activePresentation(id: id) { return active }
        return try store.dismissedPresentation(id: id, sessionID: session.id)
    }

    /// The session's logged changes after `version`, oldest first (see ``SessionStore``).
    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError)
        -> [SessionChange]
    {
        try store.changes(sessionID: sessionID, after: version, eventLimit: eventLimit)
    }

    /// The logged change that made `version`, if the log still holds it.
    public func change(sessionID: String, version: Int64) throws(StoreError) -> SessionChange? {
        try store.change(sessionID: sessionID, version: version)
    }

    /// Up to `limit` live sessions, the most recently changed first, after `cursor` (see ``SessionStore``).
    public func recentSessions(after cursor: SessionCursor?, limit: Int) throws(StoreError) -> [Session] {
        try store.recentSessions(after: cursor, limit: limit, at: time.now())
    }

    /// How many sessions are stored (expired ones not yet swept included).
    public func sessionCount() throws(StoreError) -> Int {
        try store.sessionCount()
    }

    /// Throws unless the store can be read and written. After a failed commit the service stays
    /// unready until a commit gets through: a full disk or a read-only file shows only in writes.
    /// A shared store's failure clears as soon as it answers its health check, which asks the
    /// database server itself: a server that came back must make the instance ready again even
    /// while a load balancer sends it nothing to write.
    public func checkHealth() throws(StoreError) {
        if let failure = lastCommitFailure.withLock({ $0 }), failure.kind == .full || !store.isShared {
            throw failure
        }
        try store.checkHealth()
        lastCommitFailure.withLock { failure in
            if failure?.kind != .full { failure = nil }
        }
    }

    /// Closes the store, once the commit running now (if any) is over; changes after this fail.
    public func close() {
        store.close()
    }

    // MARK: Writes

    /// Applies the change to its session. `completion` gets the answer `render` made from the
    /// outcome once it is committed (at once for a refusal, a replay, or a change that changes
    /// nothing and waits for nothing). `render` runs before the commit: its answer is committed
    /// with the change when the change carries an idempotency key. It gets the session's JSON
    /// too, rendered once: the store writes the same text. The session cache keeps renderings of
    /// sessions read, not written: one per written session too cost 24 MiB at 100k sessions.
    public func submit<Answer: ReplayableAnswer>(
        _ request: ChangeRequest, render: @escaping @Sendable (CommandOutcome, SessionDocument) -> Answer,
        completion: @escaping @Sendable (ChangeResult<Answer>) -> Void
    ) {
        let key = request.idempotencyKey
        if let key, !claim(key) { return completion(.refused(.idempotencyKeyInUse)) }
        // Every path ends here, once: the only place a claim is released. The key goes before the
        // answer, so a client that retries the moment it has the answer finds the stored response.
        let finish: @Sendable (ChangeResult<Answer>) -> Void = { [self] result in
            if let key { release(key) }
            completion(result)
        }
        decide(request, render: render, finish: finish)
    }

    /// Replays the stored answer, or decides the change and queues its commit; decides it again
    /// when another instance changed the session first.
    private func decide<Answer: ReplayableAnswer>(
        _ request: ChangeRequest, render: @escaping @Sendable (CommandOutcome, SessionDocument) -> Answer,
        finish: @escaping @Sendable (ChangeResult<Answer>) -> Void
    ) {
        do throws(StoreError) {
            let finishOrDecideAgain: @Sendable (CommitOutcome, Answer) -> Void = { [self] outcome, answer in
                switch outcome {
                case .durable: finish(.answered(answer))
                case .failed(let error): finish(.refused(.storeFailed(error)))
                case .superseded: decide(request, render: render, finish: finish)
                }
            }
            switch try decide(
                request.sessionID, replaying: request.idempotencyKey,
                { admit(request, latest: $1, pending: &$0, render: render, finish: finishOrDecideAgain) })
            {
            case .queued: scheduleCommit()
            case .answered(let result): finish(explained(result, in: request.sessionID))
            }
        } catch {
            finish(.refused(.storeFailed(error)))
        }
    }

    /// The core sees only the session as it is: a presentation it cannot find may be one the
    /// store still keeps as dismissed, and the refusal then says so. (One dismissed by a change
    /// still waiting for its commit is not found yet.)
    private func explained<Answer>(_ result: ChangeResult<Answer>, in sessionID: String) -> ChangeResult<Answer> {
        guard case .refused(.rejected(let error)) = result, error.kind == .presentationNotFound,
            let id = error.context["presentationId"]?.stringValue,
            let dismissed = try? store.dismissedPresentation(id: id, sessionID: sessionID)
        else { return result }
        return .refused(.rejected(.presentationDismissed(dismissed)))
    }

    /// Deletes the session; `completion` runs once the deletion is committed.
    public func delete(
        sessionID id: String, expecting expected: ExpectedVersion?,
        completion: @escaping @Sendable (Result<Void, ChangeRefusal>) -> Void
    ) {
        do throws(StoreError) {
            let admission = try decide(id) { pending, latest -> Admission<Void> in
                guard let session = latest.session, latest.isPending || !session.isExpired(at: time.now()) else {
                    return .answered(.refused(.sessionNotFound(id)))
                }
                if let expected, !expected.matches(session.version) {
                    return .answered(.refused(.versionMismatch(current: session.version)))
                }
                // Without If-Match the client wants the session gone, whatever another instance did to it.
                let write = SessionWrite.delete(sessionID: id, expectedVersion: expected.map { _ in session.version })
                pending.enqueue(
                    PendingCommit(sessionID: id, writes: [write], session: nil, change: nil) { [self] outcome in
                        switch outcome {
                        case .durable: completion(.success(()))
                        case .failed(let error): completion(.failure(.storeFailed(error)))
                        case .superseded: delete(sessionID: id, expecting: expected, completion: completion)
                        }
                    })
                return .queued
            }
            switch admission {
            case .queued: scheduleCommit()
            case .answered(.refused(let refusal)): completion(.failure(refusal))
            case .answered: preconditionFailure("a deletion is queued or refused")
            }
        } catch {
            completion(.failure(.storeFailed(error)))
        }
    }

    /// Deletes up to `limit` expired sessions, committed like any change; returns how many.
    /// Each is checked against its latest state: one touched since the query lives on.
    @discardableResult
    public func sweepExpired(limit: Int) throws(StoreError) -> Int {
        let candidates = try store.expiredSessionIDs(at: time.now(), limit: limit)
        var swept = 0
        for id in candidates {
            let read = try readCommitted(id)
            // A stale read is skipped: the next sweep finds the session again if it is still expired.
            let expired = pending.withLock { pending in
                guard let latest = pending.latest(id, read: read, cache: cache, settled: settledBatches),
                    !latest.isPending, let session = latest.session, session.isExpired(at: time.now())
                else { return false }
                pending.enqueue(
                    PendingCommit(
                        sessionID: id, writes: [.expire(sessionID: id, version: session.version)], session: nil,
                        change: nil, finish: nil))
                return true
            }
            if expired { swept += 1 }
        }
        scheduleCommit()
        return swept
    }

    /// Removes up to `limit` stored idempotent responses past their lifetime; returns how many.
    @discardableResult
    public func pruneIdempotentResponses(limit: Int) throws(StoreError) -> Int {
        try store.pruneIdempotentResponses(at: time.now(), limit: limit)
    }

    /// What became of a change under the commit lock.
    private enum Admission<Answer: Sendable> {
        /// Waiting for its commit; the completion runs after it.
        case queued
        /// Decided without a commit.
        case answered(ChangeResult<Answer>)
    }

    /// Decides a change under the commit lock, on the latest state of its session, read before
    /// the lock is taken; read again if a batch settled in between and the session cache no longer
    /// holds the session. A change with an idempotency key whose response is stored is answered
    /// with it instead.
    private func decide<Answer: Sendable>(
        _ id: String, replaying key: IdempotencyKey? = nil,
        _ decision: (inout PendingState, _ latest: (session: Session?, isPending: Bool)) -> Admission<Answer>
    ) throws(StoreError) -> Admission<Answer> {
        while true {
            let read = try readCommitted(id)
            // The key is looked up after the session is read: another instance commits its response
            // with its version, so a session read at that version (or later) finds the response, and
            // one read before it leads to a commit that is superseded and decided again.
            if let key, let stored = try store.idempotentResponse(scope: key.scope, key: key.key) {
                return .answered(
                    stored.fingerprint == key.fingerprint ? .replayed(stored) : .refused(.idempotencyKeyReused))
            }
            let decided = pending.withLock { pending -> Admission<Answer>? in
                guard let latest = pending.latest(id, read: read, cache: cache, settled: settledBatches)
                else {
                    return nil
                }
                return decision(&pending, latest)
            }
            if let decided { return decided }
        }
    }

    /// Applies the change to the latest state of its session, under the commit lock.
    private func admit<Answer: ReplayableAnswer>(
        _ request: ChangeRequest, latest: (session: Session?, isPending: Bool), pending: inout PendingState,
        render: (CommandOutcome, SessionDocument) -> Answer, finish: @escaping @Sendable (CommitOutcome, Answer) -> Void
    ) -> Admission<Answer> {
        let id = request.sessionID
        let now = time.now()
        // A session that expired but was not swept yet counts as gone.
        let live = latest.isPending || latest.session?.isExpired(at: now) == false ? latest.session : nil
        if let expected = request.expectedVersion, !expected.matches(live?.version) {
            return .answered(.refused(.versionMismatch(current: live?.version)))
        }
        let unwritten = Session.unwritten(id: id, at: now, ttlSeconds: rules.sessionTTLSeconds)
        guard let current = live ?? (request.createsSession ? unwritten : nil) else {
            return .answered(.refused(.sessionNotFound(id)))
        }
        let context = CommandContext(now: now, rules: rules, catalog: catalog, makeID: makeID)
        let outcome: CommandOutcome
        do {
            outcome = try current.applying(request.command, in: context)
        } catch {
            return .answered(.refused(.rejected(error)))
        }
        let document = SessionDocument(outcome.session)
        let answer = render(outcome, document)
        var writes: [SessionWrite] = []
        if let change = outcome.change {
            let stored = request.idempotencyKey.map { $0.storing(answer, at: now) }
            // An expired session not swept yet starts afresh: its old log and keys go first.
            if live == nil, let expired = latest.session {
                writes.append(.delete(sessionID: id, expectedVersion: expired.version))
            }
            writes.append(
                .save(
                    SessionUpdate(
                        session: outcome.session, document: document, dismissed: outcome.dismissed, change: change,
                        response: stored)))
        } else if !pending.hasPending(id) {
            return .answered(.answered(answer))
        }
        pending.enqueue(
            PendingCommit(sessionID: id, writes: writes, session: outcome.session, change: outcome.change) { outcome in
                finish(outcome, answer)
            })
        return .queued
    }

    /// The committed state of a session, read outside the commit lock: from the session cache,
    /// or from the store when the session cache does not have it or the store is shared (another
    /// instance may have changed it).
    private func readCommitted(_ id: String) throws(StoreError) -> CommittedRead {
        if store.isShared { return try readFromStore(id) }
        let settled = settledBatches.load(ordering: .acquiring)
        switch cache.lookup(id) {
        case .session(let session, let rendered):
            return CommittedRead(settledBatches: settled, session: session, fromStore: false, rendered: rendered)
        case .deleted: return CommittedRead(settledBatches: settled, session: nil, fromStore: false)
        case .miss: return try readFromStore(id)
        }
    }

    private func readFromStore(_ id: String) throws(StoreError) -> CommittedRead {
        let settled = settledBatches.load(ordering: .acquiring)
        return CommittedRead(settledBatches: settled, session: try store.session(id: id), fromStore: true)
    }

    // MARK: Group commit

    /// Starts the committer unless it is already running; it drains the queue batch by batch.
    private func scheduleCommit() {
        let start = pending.withLock { pending in
            guard !pending.committing, !pending.queue.isEmpty else { return false }
            pending.committing = true
            return true
        }
        if start { committer.async { self.drain() } }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> [PendingCommit] in
                let batch = Array(pending.queue.prefix(Self.maxBatch))
                pending.queue.removeFirst(batch.count)
                if batch.isEmpty { pending.committing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let started = time.monotonicSeconds()
            do {
                let superseded = try store.commit(batch.flatMap(\.writes))
                metrics.recordCommit(seconds: time.monotonicSeconds() - started)
                lastCommitFailure.withLock { $0 = nil }
                committed(batch, except: superseded)
            } catch {
                lastCommitFailure.withLock { $0 = error }
                failed(batch, error)
            }
        }
    }

    /// The batch is durable but for the `superseded` sessions: the session cache learns it, then
    /// every request gets its answer and every watcher its notification. The superseded sessions'
    /// changes, and those queued behind them (they build on them), go back to be decided again on
    /// what the store holds now, in their order.
    private func committed(_ batch: [PendingCommit], except superseded: Set<String>) {
        let decideAgain = pending.withLock { pending -> [PendingCommit] in
            for commit in batch where !commit.writes.isEmpty && !superseded.contains(commit.sessionID) {
                cache.committed(commit.session, id: commit.sessionID)
            }
            for commit in batch where !superseded.contains(commit.sessionID) {
                pending.settle(commit.sessionID)
            }
            defer { settledBatches.add(1, ordering: .releasing) }
            guard !superseded.isEmpty else { return [] }
            let queued = pending.queue.filter { superseded.contains($0.sessionID) }
            pending.queue.removeAll { superseded.contains($0.sessionID) }
            for id in superseded {
                pending.sessions[id] = nil
                cache.forget(id)
            }
            return batch.filter { superseded.contains($0.sessionID) } + queued
        }
        for commit in batch where !superseded.contains(commit.sessionID) {
            commit.finish?(.durable)
            if let change = commit.change, let session = commit.session {
                metrics.recordEvents(change.events)
                notifier.publish(.changed(session))
            } else if commit.session == nil {
                notifier.publish(.deleted(sessionID: commit.sessionID))
            }
        }
        guard !decideAgain.isEmpty else { return }
        // Off the committing thread (deciding again reads the store), one after another, in order.
        DispatchQueue.global().async {
            for commit in decideAgain {
                commit.finish?(.superseded)
            }
        }
    }

    /// Nothing of the batch was written. Changes queued behind it may build on it, so they fail
    /// too, and every session goes back to its committed state.
    private func failed(_ batch: [PendingCommit], _ error: StoreError) {
        let abandoned = pending.withLock { pending in
            let rest = pending.queue
            pending.queue.removeAll()
            pending.sessions.removeAll()
            settledBatches.add(1, ordering: .releasing)
            return batch + rest
        }
        for commit in abandoned {
            commit.finish?(.failed(error))
        }
    }

    // MARK: Other instances

    /// Another instance changed or deleted the session (nil: some such news may have been lost):
    /// what the session cache holds of it is dropped, and its watchers hear what the store holds now.
    private func changedElsewhere(_ id: String?) {
        guard let id else {
            for watched in notifier.watchedSessionIDs { changedElsewhere(watched) }
            return
        }
        pending.withLock { _ in cache.forget(id) }
        guard notifier.isWatched(id) else { return }
        // Off the listening thread, which must go on reading notifications.
        DispatchQueue.global().async { [self] in
            // A failed read is retried by the resync that follows the store's recovery.
            guard let read = try? readFromStore(id) else { return }
            if let session = read.session {
                notifier.publish(.changed(session))
            } else {
                notifier.publish(.deleted(sessionID: id))
            }
        }
    }

    // MARK: Idempotency

    private func claim(_ key: IdempotencyKey) -> Bool {
        keysInFlight.withLock { $0.insert(key.name).inserted }
    }

    private func release(_ key: IdempotencyKey) {
        _ = keysInFlight.withLock { $0.remove(key.name) }
    }
}

/// A session's committed state as read outside the commit lock, and when it was read.
struct CommittedRead {
    /// ``SessionService/settledBatches`` before the read.
    let settledBatches: UInt64
    /// Nil: the session does not exist, or is deleted.
    let session: Session?
    /// Whether it came from the store (the session cache did not hold it, or the store
    /// is shared), so the session cache may be given it.
    let fromStore: Bool
    /// The session's JSON, when the session cache held it rendered.
    var rendered: [UInt8]? = nil

    /// Whether no batch settled since the read, so it is still the committed state: only a
    /// settling batch changes what the store or the session cache holds for a session.
    func isCurrent(_ settled: borrowing Atomic<UInt64>) -> Bool {
        settled.load(ordering: .acquiring) == settledBatches
    }
}

/// A change applied to its session and waiting for its commit (or, without writes, a request
/// that changed nothing but must not answer before the changes queued ahead of it).
struct PendingCommit: Sendable {
    let sessionID: String
    let writes: [SessionWrite]
    /// The session after the change; nil when it was deleted.
    let session: Session?
    let change: SessionChange?
    /// Called once the commit is over, with how it ended.
    let finish: (@Sendable (CommitOutcome) -> Void)?
}

/// How a pending commit ended.
enum CommitOutcome: Sendable {
    case durable
    /// Nothing of it was written.
    case failed(StoreError)
    /// Another instance changed the session first: nothing of it was written, and the change
    /// must be decided again on what the store holds now.
    case superseded
}

/// The changes applied but not committed yet: the latest state of each session they touch, and
/// the queue the committer drains.
struct PendingState {
    struct PendingSession {
        /// Nil: a deletion is pending.
        var session: Session?
        var count: Int
    }

    var sessions: [String: PendingSession] = [:]
    var queue: [PendingCommit] = []
    var committing = false

    func hasPending(_ id: String) -> Bool {
        sessions[id] != nil
    }

    /// The session as the next change must see it: pending, else committed (an expired one
    /// included, for the caller to judge); nil when `read` is no longer current and the session
    /// cache does not hold the session.
    func latest(_ id: String, read: CommittedRead, cache: SessionCache, settled: borrowing Atomic<UInt64>)
        -> (session: Session?, isPending: Bool)?
    {
        if let pending = sessions[id] { return (pending.session, true) }
        if read.isCurrent(settled) {
            if read.fromStore, let session = read.session { cache.loaded(session) }
            return (read.session, false)
        }
        // A batch settled since: the session cache knows what it committed, unless it let it go.
        switch cache.lookup(id) {
        case .session(let session, _): return (session, false)
        case .deleted: return (nil, false)
        case .miss: return nil
        }
    }

    mutating func enqueue(_ commit: PendingCommit) {
        if !commit.writes.isEmpty || sessions[commit.sessionID] != nil {
            let count = (sessions[commit.sessionID]?.count ?? 0) + 1
            let session = commit.writes.isEmpty ? sessions[commit.sessionID]?.session : commit.session
            sessions[commit.sessionID] = PendingSession(session: session, count: count)
        }
        queue.append(commit)
    }

    /// One of the session's pending commits is done; the last one hands it back to the session cache.
    mutating func settle(_ id: String) {
        guard var entry = sessions[id] else { return }
        entry.count -= 1
        sessions[id] = entry.count > 0 ? entry : nil
    }
}
