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
/// A change goes through four stages, each its own piece:
/// 1. **Admission** (``admit(_:replaying:finish:)``): under the commit lock, the change is decided
///    on the latest state of its session (``LatestSessions``: committed or still waiting for its
///    commit), so every version is given once, and takes its place in the ``CommitQueue``.
/// 2. **Rendering**, outside the lock: the session's JSON and the answer (stored with the change
///    when it carries an idempotency key); then the change is ready to commit.
/// 3. **The committer** (``drain()``) takes every ready change at the head of the queue into one
///    transaction (one sync in `full` durability), stopping at one still rendering.
/// 4. **Settling**: the cache learns what was committed, then every request is answered, in the
///    order of admission, and every watcher notified. No caller waits for a commit: completions
///    run on the committing thread.
///
/// Reads see committed state only. Nothing under the commit lock reads or writes the store.
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
    /// Each session's latest state, committed and pending, and the commit queue.
    let latest: LatestSessions
    private let committer = DispatchQueue(label: "modalstack.commit")
    /// Idempotency keys whose first request is still running: a retry then is refused.
    private let keysInFlight = LockedValue(Set<IdempotencyKey.Name>())
    /// Why the last commit failed, until one succeeds: readiness reports it.
    private let lastCommitFailure = LockedValue<StoreError?>(nil)
    private let readsWaiting = Atomic<Int>(0)

    public init(
        store: any SessionStore, rules: SessionRules, catalog: Catalog?, metrics: any CommitMetrics,
        cacheSize: Int, maxStaleness: Duration = .zero, time: any TimeSource = SystemTime(),
        makeID: @escaping @Sendable () -> String = RandomID.make
    ) {
        self.store = store
        self.rules = rules
        self.catalog = catalog
        self.metrics = metrics
        self.time = time
        self.makeID = makeID
        latest = LatestSessions(store: store, cacheSize: cacheSize, time: time, maxStaleness: maxStaleness)
        store.observeOtherWriters { [weak self] id in self?.changedElsewhere(id) }
    }

    // MARK: Reads (committed state only)

    /// The session, unless it does not exist or expired.
    public func session(id: String) throws(StoreError) -> Session? {
        try renderedSession(id: id)?.session
    }

    /// A session and its JSON.
    public struct RenderedSession: Sendable {
        public let session: Session
        public let body: [UInt8]
    }

    /// The session and its JSON, rendered once per version and kept in the session cache.
    public func renderedSession(id: String) throws(StoreError) -> RenderedSession? {
        rendered(try latest.readCommitted(id))
    }

    /// ``renderedSession(id:)`` without holding the caller's thread while a shared store answers:
    /// `done` runs once, on the store's thread, or before this returns when no round trip is needed.
    public func renderedSession(
        id: String, then done: @escaping @Sendable (Result<RenderedSession?, StoreError>) -> Void
    ) {
        counted(done) { [self] done in latest.readCommitted(id) { [self] read in done(read.map(rendered)) } }
    }

    /// Reads of the store that have not been answered yet, each a request waiting for its answer.
    public var readsWaitingForStore: Int { readsWaiting.load(ordering: .relaxed) }

    /// Starts a read that may suspend its request, counted in ``readsWaitingForStore`` until answered.
    func counted<Answer>(
        _ done: @escaping @Sendable (Result<Answer, StoreError>) -> Void,
        _ read: (@escaping @Sendable (Result<Answer, StoreError>) -> Void) -> Void
    ) {
        readsWaiting.add(1, ordering: .relaxed)
        read { [self] answer in
            readsWaiting.subtract(1, ordering: .relaxed)
            done(answer)
        }
    }

    private func rendered(_ read: CommittedRead) -> RenderedSession? {
        guard let session = read.session, !session.isExpired(at: time.now()) else { return nil }
        var rendered = read.rendered
        if read.fromStore {
            latest.loaded(read)
            rendered = latest.cache.rendering(of: session)
        }
        if let rendered { return RenderedSession(session: session, body: rendered) }
        let body = session.serialized()
        latest.cache.rendered(body, for: session)
        return RenderedSession(session: session, body: body)
    }

    /// A presentation of `session` in any state: on the stack, queued, or dismissed and still
    /// kept; `done` runs once, on the store's thread when a shared store is asked.
    public func presentation(
        id: String, in session: Session, then done: @escaping @Sendable (Result<Presentation?, StoreError>) -> Void
    ) {
        if let active = session.activePresentation(id: id) { return done(.success(active)) }
        counted(done) { done in store.dismissedPresentation(id: id, sessionID: session.id, then: done) }
    }

    /// The session's logged changes after `version`, oldest first (see ``SessionStore``).
    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError)
        -> [SessionChange]
    {
        try store.changes(sessionID: sessionID, after: version, eventLimit: eventLimit)
    }

    /// ``changes(sessionID:after:eventLimit:)`` without holding the caller's thread while a shared
    /// store answers: `done` runs once, on the store's thread, or before this returns.
    public func changes(
        sessionID: String, after version: Int64, eventLimit: Int,
        then done: @escaping @Sendable (Result<[SessionChange], StoreError>) -> Void
    ) {
        counted(done) { done in store.changes(sessionID: sessionID, after: version, eventLimit: eventLimit, then: done)
        }
    }

    /// The logged change that made `version`, if the log still holds it; `done` runs once, on the
    /// store's thread when a shared store is asked.
    public func change(
        sessionID: String, version: Int64, then done: @escaping @Sendable (Result<SessionChange?, StoreError>) -> Void
    ) {
        counted(done) { done in store.change(sessionID: sessionID, version: version, then: done) }
    }

    /// Up to `limit` live sessions, the most recently changed first, after `cursor` (see
    /// ``SessionStore``); `done` runs once, on the store's thread when a shared store is asked.
    public func recentSessions(
        after cursor: SessionCursor?, limit: Int, then done: @escaping @Sendable (Result<[Session], StoreError>) -> Void
    ) {
        counted(done) { done in store.recentSessions(after: cursor, limit: limit, at: time.now(), then: done) }
    }

    /// How many sessions are stored (expired ones not yet swept included).
    public func sessionCount() throws(StoreError) -> Int {
        try store.sessionCount()
    }

    /// About how many sessions are stored, for the `sessions` gauge (see
    /// ``SessionStore/estimatedSessionCount()``).
    public func estimatedSessionCount() throws(StoreError) -> Int {
        try store.estimatedSessionCount()
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
    /// nothing and waits for nothing). `render` runs before the commit, outside the commit lock:
    /// its answer is committed with the change when the change carries an idempotency key. It
    /// gets the session's JSON too, rendered once: the store writes the same text. The session
    /// cache keeps renderings of sessions read, not written: one per written session too cost
    /// 24 MiB at 100k sessions.
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

    /// Replays the stored answer, or decides the change (admission), renders its answer and
    /// queues its commit; decides it again when another instance changed the session first.
    private func decide<Answer: ReplayableAnswer>(
        _ request: ChangeRequest, render: @escaping @Sendable (CommandOutcome, SessionDocument) -> Answer,
        finish: @escaping @Sendable (ChangeResult<Answer>) -> Void
    ) {
        let answer = LockedValue<Answer?>(nil)
        let committed: @Sendable (CommitOutcome) -> Void = { [self] outcome in
            switch outcome {
            case .durable: finish(.answered(answer.withLock { $0! }))
            case .failed(let error): finish(.refused(.storeFailed(error)))
            case .superseded: decide(request, render: render, finish: finish)
            }
        }
        admit(request, replaying: request.idempotencyKey, finish: committed) { [self] admitted in
            let admission: Admission
            switch admitted {
            case .success(let admitted): admission = admitted
            case .failure(let error): return finish(.refused(.storeFailed(error)))
            }
            switch admission {
            case .refused(.rejected(let error)) where error.kind == .presentationNotFound:
                explain(error, in: request.sessionID, then: finish)
            case .refused(let refusal): finish(.refused(refusal))
            case .replayed(let stored): finish(.replayed(stored))
            case .unchanged(let outcome): finish(.answered(render(outcome, SessionDocument(outcome.session))))
            case .reserved(let ticket, let outcome, let writes):
                // Rendered outside the commit lock; the committer waits for it at this place in the queue.
                let document = SessionDocument(outcome.session)
                let rendered = render(outcome, document)
                answer.withLock { $0 = rendered }
                var writes = writes
                if let change = outcome.change {
                    let stored = request.idempotencyKey.map { $0.storing(rendered, at: time.now()) }
                    writes.append(
                        .save(
                            SessionUpdate(
                                session: outcome.session, document: document, dismissed: outcome.dismissed,
                                change: change, response: stored)))
                }
                perform(latest.withWritePath { $0.queue.ready(ticket, writes: writes) })
            }
        }
    }

    /// The core sees only the session as it is: a presentation it cannot find may be one the
    /// store still keeps as dismissed, and the refusal then says so. (One dismissed by a change
    /// still waiting for its commit is not found yet.)
    private func explain<Answer>(
        _ error: ModalError, in sessionID: String, then done: @escaping @Sendable (ChangeResult<Answer>) -> Void
    ) {
        guard let id = error.context["presentationId"]?.stringValue else { return done(.refused(.rejected(error))) }
        let explained: @Sendable (Result<Presentation?, StoreError>) -> Void = { found in
            guard case .success(let dismissed?) = found else { return done(.refused(.rejected(error))) }
            done(.refused(.rejected(.presentationDismissed(dismissed))))
        }
        counted(explained) { explained in store.dismissedPresentation(id: id, sessionID: sessionID, then: explained) }
    }

    /// Deletes the session; `completion` runs once the deletion is committed.
    public func delete(
        sessionID id: String, expecting expected: ExpectedVersion?,
        completion: @escaping @Sendable (Result<Void, ChangeRefusal>) -> Void
    ) {
        let decided: @Sendable (Result<Result<CommitQueue.Action, ChangeRefusal>, StoreError>) -> Void = {
            [self] decided in
            switch decided {
            case .success(.success(let action)): perform(action)
            case .success(.failure(let refusal)): completion(.failure(refusal))
            case .failure(let error): completion(.failure(.storeFailed(error)))
            }
        }
        // Deleting a session the cache still holds but another instance deleted would answer 204
        // where 404 is due: a deletion is decided on a confirmed read.
        onLatest(id, then: decided) {
            [self] path, latest -> Result<CommitQueue.Action, ChangeRefusal> in
            guard let session = latest.session, latest.isPending || !session.isExpired(at: time.now()) else {
                return .failure(.sessionNotFound(id))
            }
            if let expected, !expected.matches(session.version) {
                return .failure(.versionMismatch(current: session.version))
            }
            // Without If-Match the client wants the session gone, whatever another instance did to it.
            let write = SessionWrite.delete(sessionID: id, expectedVersion: expected.map { _ in session.version })
            return .success(
                path.enqueue(
                    PendingCommit(sessionID: id, writes: [write], session: nil, change: nil) { [self] outcome in
                        switch outcome {
                        case .durable: completion(.success(()))
                        case .failed(let error): completion(.failure(.storeFailed(error)))
                        case .superseded: delete(sessionID: id, expecting: expected, completion: completion)
                        }
                    }))
        }
    }

    /// Deletes up to `limit` expired sessions, committed like any change; returns how many.
    /// Each is checked against its latest state: one touched since the query lives on.
    @discardableResult
    public func sweepExpired(limit: Int) throws(StoreError) -> Int {
        let candidates = try store.expiredSessionIDs(at: time.now(), limit: limit)
        var swept = 0
        for id in candidates {
            let read = try latest.readCommitted(id)
            // A stale read is skipped: the next sweep finds the session again if it is still expired.
            let action = latest.decide(id, read: read) { path, latest -> CommitQueue.Action? in
                guard !latest.isPending, let session = latest.session, session.isExpired(at: time.now()) else {
                    return nil
                }
                return path.enqueue(
                    PendingCommit(
                        sessionID: id, writes: [.expire(sessionID: id, version: session.version)], session: nil,
                        change: nil, finish: nil))
            }
            if let action = action ?? nil {
                swept += 1
                perform(action)
            }
        }
        return swept
    }

    /// Removes up to `limit` stored idempotent responses past their lifetime; returns how many.
    @discardableResult
    public func pruneIdempotentResponses(limit: Int) throws(StoreError) -> Int {
        try store.pruneIdempotentResponses(at: time.now(), limit: limit)
    }

    /// What admission made of a change.
    private enum Admission {
        case refused(ChangeRefusal)
        /// Its idempotency key's stored answer.
        case replayed(StoredResponse)
        /// Changes nothing and waits for nothing: answered at once.
        case unchanged(CommandOutcome)
        /// Decided, with its place in the commit queue: `writes` go before its own.
        case reserved(CommitQueue.Ticket, CommandOutcome, writes: [SessionWrite])
    }

    /// Admission: decides the change on the latest state of its session, under the commit lock,
    /// and reserves its place in the commit queue. A change with an idempotency key whose
    /// response is stored is answered with it instead.
    private func admit(
        _ request: ChangeRequest, replaying key: IdempotencyKey?, finish: @escaping @Sendable (CommitOutcome) -> Void,
        then done: @escaping @Sendable (Result<Admission, StoreError>) -> Void
    ) {
        let storedAnswer: AnsweredFirst<Admission> = { [store] answered in
            guard let key else { return answered(.success(nil)) }
            store.idempotentResponse(scope: key.scope, key: key.key) { stored in
                answered(
                    stored.map { stored in
                        stored.map {
                            $0.fingerprint == key.fingerprint ? .replayed($0) : .refused(.idempotencyKeyReused)
                        }
                    })
            }
        }
        let mayStandUnconfirmed: @Sendable (Admission) -> Bool = {
            switch $0 {
            case .reserved, .replayed: true
            case .refused, .unchanged: false
            }
        }
        onLatest(request.sessionID, answeredFirst: storedAnswer, mayStandUnconfirmed: mayStandUnconfirmed, then: done) {
            [self] path, latest in
            let id = request.sessionID
            let now = time.now()
            // A session that expired but was not swept yet counts as gone.
            let live = latest.isPending || latest.session?.isExpired(at: now) == false ? latest.session : nil
            if let expected = request.expectedVersion, !expected.matches(live?.version) {
                return .refused(.versionMismatch(current: live?.version))
            }
            let unwritten = Session.unwritten(id: id, at: now, ttlSeconds: rules.sessionTTLSeconds)
            guard let current = live ?? (request.createsSession ? unwritten : nil) else {
                return .refused(.sessionNotFound(id))
            }
            let context = CommandContext(now: now, rules: rules, catalog: catalog, makeID: makeID)
            let outcome: CommandOutcome
            do throws(ModalError) {
                outcome = try current.applying(request.command, in: context)
            } catch {
                return .refused(.rejected(error))
            }
            guard outcome.changed || path.hasPending(id) else { return .unchanged(outcome) }
            // An expired session not swept yet starts afresh: its old log and keys go first.
            var writes: [SessionWrite] = []
            if outcome.changed, live == nil, let expired = latest.session {
                writes.append(.delete(sessionID: id, expectedVersion: expired.version))
            }
            let ticket = path.reserve(
                PendingCommit(
                    sessionID: id, writes: [], session: outcome.session, change: outcome.change, finish: finish),
                writesNothing: !outcome.changed)
            return .reserved(ticket, outcome, writes: writes)
        }
    }

    /// Looks up what answers a change before it is decided (its idempotency key's stored
    /// response), then calls back with it, or with nil.
    private typealias AnsweredFirst<Decided> =
        @Sendable (
            _ answered: @escaping @Sendable (Result<Decided?, StoreError>) -> Void
        ) -> Void

    /// Runs `decision` under the commit lock on the latest state of the session, read before the
    /// lock is taken; read again if a batch settled in between and the session cache no longer
    /// holds the session. `answeredFirst` runs after each read: what it answers is the result.
    /// `done` gets the result; no thread waits while a shared store answers the reads.
    ///
    /// With `mayStandUnconfirmed`, a shared store's session may first be read from the cache
    /// unconfirmed: a change decided on it is checked when it commits (superseded if another
    /// instance changed the session first), so it costs no round trip. A decision that may not
    /// stand on it (a refusal, or no change: they answer at once) is made again on a confirmed read.
    private func onLatest<Decided: Sendable>(
        _ id: String, answeredFirst: @escaping AnsweredFirst<Decided> = { $0(.success(nil)) },
        mayStandUnconfirmed: (@Sendable (Decided) -> Bool)? = nil,
        then done: @escaping @Sendable (Result<Decided, StoreError>) -> Void,
        _ decision: @escaping @Sendable (inout LatestSessions.WritePath, LatestSessions.Latest) -> Decided
    ) {
        latest.readCommitted(id, unconfirmedForChange: mayStandUnconfirmed != nil) { [self] readResult in
            let read: CommittedRead
            do throws(StoreError) { read = try readResult.get() } catch { return done(.failure(error)) }
            // An idempotency key is looked up after the session is read: another instance commits
            // its response with its version, so a session read at that version (or later) finds the
            // response, and one read before it leads to a commit that is superseded and decided again.
            answeredFirst { [self] answered in
                switch answered {
                case .failure(let error): done(.failure(error))
                case .success(let answer?): done(.success(answer))
                case .success(nil):
                    guard let decided = latest.decide(id, read: read, decision) else {
                        return onLatest(
                            id, answeredFirst: answeredFirst, mayStandUnconfirmed: mayStandUnconfirmed, then: done,
                            decision)
                    }
                    guard read.isConfirmed || mayStandUnconfirmed?(decided) == true else {
                        return onLatest(id, answeredFirst: answeredFirst, then: done, decision)
                    }
                    done(.success(decided))
                }
            }
        }
    }

    // MARK: The committer

    private func perform(_ action: CommitQueue.Action) {
        switch action {
        case .none: break
        case .startCommitter: committer.async { self.drain() }
        }
    }

    /// Commits the queue batch by batch until it is empty or its head is still rendering.
    private func drain() {
        while let batch = latest.withWritePath({ $0.queue.nextBatch(limit: Self.maxBatch) }) {
            let started = time.monotonicSeconds()
            do {
                let superseded = try store.commit(batch.flatMap(\.writes))
                metrics.recordCommit(seconds: time.monotonicSeconds() - started)
                lastCommitFailure.withLock { $0 = nil }
                committed(batch, except: superseded)
            } catch {
                lastCommitFailure.withLock { $0 = error }
                for commit in latest.failed(batch) { commit.finish?(.failed(error)) }
            }
        }
    }

    /// The batch is durable but for the `superseded` sessions: the session cache learns it, then
    /// every request gets its answer and every watcher its notification. The superseded sessions'
    /// changes, and those queued behind them (they build on them), go back to be decided again on
    /// what the store holds now, in their order.
    private func committed(_ batch: [PendingCommit], except superseded: Set<String>) {
        let decideAgain = latest.committed(batch, except: superseded)
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

    // MARK: Other instances

    /// Another instance changed or deleted the session (nil: some such news may have been lost):
    /// what the session cache holds of it is dropped, and its watchers hear what the store holds now.
    private func changedElsewhere(_ id: String?) {
        guard let id else {
            for watched in notifier.watchedSessionIDs { changedElsewhere(watched) }
            return
        }
        latest.forget(id)
        guard notifier.isWatched(id) else { return }
        // Read without holding the listening thread, which must go on reading notifications.
        latest.readFromStore(id) { [self] read in
            // A failed read is retried by the resync that follows the store's recovery.
            guard case .success(let read) = read else { return }
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

/// A change applied to its session and waiting for its commit (or, without writes, a request
/// that changed nothing but must not answer before the changes queued ahead of it).
struct PendingCommit: Sendable {
    let sessionID: String
    var writes: [SessionWrite]
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
