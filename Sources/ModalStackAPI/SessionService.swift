import Dispatch
import Glibc
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// Runs changes against sessions: preconditions, idempotent replays, the core's rules, then a
/// group commit, then the answer and the notification of watchers.
///
/// Changes are applied one at a time, in order, to the latest state of their session (committed
/// or still waiting for its commit), so every version is given once. They are committed in
/// batches: one writer takes every change waiting at that moment into one transaction (one sync
/// in `--durability full`), then answers them all. No HTTP worker thread waits for a commit: the
/// reply is sent from the committing thread. Reads see committed state only.
final class SessionService: Sendable {
    /// The most changes one transaction takes.
    static let maxBatch = 512

    let store: any SessionStore
    let rules: SessionRules
    let catalog: Catalog?
    /// Whether every change must carry `If-Match` (428 otherwise).
    let requiresIfMatch: Bool
    let metrics: Metrics
    let notifier = SessionNotifier()
    let workingSet: WorkingSet
    /// Changes applied but not yet committed, and the queue of commits.
    private let pending = LockedValue(PendingState())
    private let committer = DispatchQueue(label: "modalstack.commit")
    /// Idempotency keys whose first request is still running: a retry then gets a 409.
    private let keysInFlight = LockedValue(Set<String>())
    /// Why the last commit failed, until one succeeds: readiness reports it.
    private let lastCommitFailure = LockedValue<StoreError?>(nil)

    init(
        store: any SessionStore, rules: SessionRules, catalog: Catalog?, requiresIfMatch: Bool, metrics: Metrics,
        workingSetCapacity: Int
    ) {
        self.store = store
        self.rules = rules
        self.catalog = catalog
        self.requiresIfMatch = requiresIfMatch
        self.metrics = metrics
        self.workingSet = WorkingSet(capacity: workingSetCapacity)
    }

    // MARK: Reads (committed state only)

    func session(id: String) throws -> Session {
        try renderedSession(id: id).session
    }

    /// The session and its JSON, rendered once per version and kept in the working set.
    func renderedSession(id: String) throws -> (session: Session, body: [UInt8]) {
        let now = Clock.now()
        switch workingSet.lookup(id) {
        case .session(let session, let rendered):
            guard !session.isExpired(at: now) else { throw Problem.sessionNotFound(id) }
            if let rendered { return (session, rendered) }
            let body = session.serialized()
            workingSet.rendered(body, for: session)
            return (session, body)
        case .deleted:
            throw Problem.sessionNotFound(id)
        case .miss:
            guard let session = try store.session(id: id) else { throw Problem.sessionNotFound(id) }
            workingSet.loaded(session)
            guard !session.isExpired(at: now) else { throw Problem.sessionNotFound(id) }
            let body = session.serialized()
            workingSet.rendered(body, for: session)
            return (session, body)
        }
    }

    /// A presentation of the session in any state: on the stack, queued, or dismissed and still kept.
    func presentation(id: String, sessionID: String) throws -> Presentation {
        let session = try session(id: sessionID)
        if let active = session.activePresentation(id: id) { return active }
        if let dismissed = try store.dismissedPresentation(id: id, sessionID: sessionID) { return dismissed }
        throw ModalError.presentationNotFound(id)
    }

    // MARK: Writes

    /// Applies `command` to the session; `reply` gets the rendered response once it is committed
    /// (at once for a refusal or a change that changes nothing). Never waits for I/O but a read
    /// of the session on a working-set miss.
    /// - Parameters:
    ///   - createIfMissing: a first write creates the session instead of failing with 404.
    ///   - request: the HTTP request, for `If-Match` and `Idempotency-Key`.
    ///   - render: the response for the outcome; it is stored for idempotent replays.
    func submit(
        _ command: Command, onSession id: String, createIfMissing: Bool, request: HTTPRequest,
        idempotencyScope: String? = nil, reply: HTTPReply, render: (CommandOutcome) -> HTTPResponse
    ) throws {
        let ifMatch = try request.ifMatch()
        if requiresIfMatch, ifMatch == nil, !command.isCreate { throw Problem.preconditionRequired() }
        let idempotency = try IdempotentRequest(request, scope: idempotencyScope ?? id)
        if let idempotency { try claim(idempotency) }
        do {
            if let idempotency, let replay = try replay(idempotency) {
                release(idempotency)
                reply.send(replay)
                return
            }
            try pending.withLock { pending in
                let now = Clock.now()
                let latest = try pending.latest(id, store: store, workingSet: workingSet, now: now)
                if let ifMatch, !ifMatch.matches(latest.session?.version, weakly: false) {
                    throw Problem.preconditionFailed(currentVersion: latest.session?.version)
                }
                let unwritten = Session.unwritten(id: id, at: now, ttlSeconds: rules.sessionTTLSeconds)
                guard let current = latest.session ?? (createIfMissing ? unwritten : nil) else {
                    throw Problem.sessionNotFound(id)
                }
                let context = CommandContext(
                    now: now, rules: rules, catalog: catalog, makePresentationID: RandomID.make)
                let outcome = try current.applying(command, in: context)
                let response = render(outcome)
                var writes: [SessionWrite] = []
                if let change = outcome.change {
                    let stored = idempotency.map { $0.storing(response, at: now) }
                    // A session that expired but was not swept yet starts afresh: its old log and keys go first.
                    if latest.session == nil && latest.stored { writes.append(.delete(sessionID: id)) }
                    writes.append(
                        .save(
                            SessionUpdate(
                                session: outcome.session, retired: outcome.retired, change: change, response: stored)))
                } else if !pending.hasPending(id) {
                    throw ImmediateAnswer(response: response)
                }
                pending.enqueue(
                    PendingCommit(
                        sessionID: id, writes: writes, session: outcome.session, change: outcome.change,
                        response: response, reply: reply, idempotency: idempotency))
            }
            scheduleCommit()
        } catch let answer as ImmediateAnswer {
            if let idempotency { release(idempotency) }
            reply.send(answer.response)
        } catch {
            if let idempotency { release(idempotency) }
            throw error
        }
    }

    /// Deletes the session; `reply` gets 204 once the deletion is committed.
    func submitDelete(id: String, request: HTTPRequest, reply: HTTPReply) throws {
        let ifMatch = try request.ifMatch()
        if requiresIfMatch, ifMatch == nil { throw Problem.preconditionRequired() }
        try pending.withLock { pending in
            let latest = try pending.latest(id, store: store, workingSet: workingSet, now: Clock.now())
            guard let session = latest.session else { throw Problem.sessionNotFound(id) }
            if let ifMatch, !ifMatch.matches(session.version, weakly: false) {
                throw Problem.preconditionFailed(currentVersion: session.version)
            }
            pending.enqueue(
                PendingCommit(
                    sessionID: id, writes: [.delete(sessionID: id)], session: nil, change: nil,
                    response: Responses.noContent(), reply: reply, idempotency: nil))
        }
        scheduleCommit()
    }

    /// Deletes up to `limit` expired sessions, committed like any change; returns how many.
    /// Each is checked against its latest state: one touched since the query lives on.
    @discardableResult
    func sweepExpired(limit: Int) throws -> Int {
        let candidates = try store.expiredSessionIDs(at: Clock.now(), limit: limit)
        guard !candidates.isEmpty else { return 0 }
        let swept = try pending.withLock { pending in
            let now = Clock.now()
            var swept = 0
            for id in candidates where !pending.hasPending(id) {
                guard let session = try store.session(id: id), session.isExpired(at: now) else { continue }
                pending.enqueue(
                    PendingCommit(
                        sessionID: id, writes: [.delete(sessionID: id)], session: nil, change: nil, response: nil,
                        reply: nil, idempotency: nil))
                swept += 1
            }
            return swept
        }
        scheduleCommit()
        return swept
    }

    /// Throws unless the database can be read and written: the last commit must have succeeded
    /// (a full disk shows here until a write gets through again), and the write lock must be free.
    func checkHealth() throws {
        if let failure = lastCommitFailure.withLock({ $0 }) { throw failure }
        try store.checkHealth()
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
            let started = Clock.monotonicSeconds()
            do {
                try store.commit(batch.flatMap(\.writes))
                metrics.recordCommit(seconds: Clock.monotonicSeconds() - started)
                lastCommitFailure.withLock { $0 = nil }
                committed(batch)
            } catch {
                lastCommitFailure.withLock { $0 = error }
                failed(batch, error)
            }
        }
    }

    /// The batch is durable: the working set learns it, then every request gets its answer and
    /// every watcher its notification.
    private func committed(_ batch: [PendingCommit]) {
        pending.withLock { pending in
            for commit in batch where !commit.writes.isEmpty {
                workingSet.committed(commit.session, id: commit.sessionID)
            }
            for commit in batch {
                pending.settle(commit.sessionID)
            }
        }
        for commit in batch {
            // The key is released before the answer goes out: a client that retries the moment it
            // has the answer finds the stored response, not a request still in flight (409).
            if let idempotency = commit.idempotency { release(idempotency) }
            if let response = commit.response { commit.reply?.send(response) }
            if let change = commit.change, let session = commit.session {
                metrics.recordEvents(change.events)
                notifier.publish(.changed(session, change))
            } else if commit.session == nil {
                notifier.publish(.deleted(sessionID: commit.sessionID))
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
            return batch + rest
        }
        let problem = Problem(error).response
        for commit in abandoned {
            if let idempotency = commit.idempotency { release(idempotency) }
            commit.reply?.send(problem)
        }
    }

    // MARK: Idempotency

    /// The stored response for a retry of the same request; a 422 for the same key on another request.
    private func replay(_ request: IdempotentRequest) throws -> HTTPResponse? {
        guard let stored = try store.idempotentResponse(scope: request.scope, key: request.key) else { return nil }
        guard stored.fingerprint == request.fingerprint else { throw Problem.idempotencyKeyReused() }
        var headers = HTTPHeaders()
        for (name, value) in stored.headers.sorted(by: { $0.key < $1.key }) {
            headers.set(name, value)
        }
        headers.set("Idempotent-Replayed", "true")
        return HTTPResponse(status: stored.status, headers: headers, body: stored.body)
    }

    private func claim(_ request: IdempotentRequest) throws {
        let claimed = keysInFlight.withLock { $0.insert(request.inFlightName).inserted }
        guard claimed else { throw Problem.idempotencyKeyInUse() }
    }

    private func release(_ request: IdempotentRequest) {
        _ = keysInFlight.withLock { $0.remove(request.inFlightName) }
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
    let response: HTTPResponse?
    let reply: HTTPReply?
    let idempotency: IdempotentRequest?
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

    /// The session as the next change must see it: pending, else committed; nil when it does
    /// not exist or expired. `stored` says whether a row exists (an expired one included).
    func latest(_ id: String, store: any SessionStore, workingSet: WorkingSet, now: Timestamp) throws(StoreError)
        -> (session: Session?, stored: Bool)
    {
        if let pending = sessions[id] { return (pending.session, pending.session != nil) }
        let committed: Session?
        switch workingSet.lookup(id) {
        case .session(let session, _): committed = session
        case .deleted: committed = nil
        case .miss:
            committed = try store.session(id: id)
            if let committed { workingSet.loaded(committed) }
        }
        guard let committed else { return (nil, false) }
        return (committed.isExpired(at: now) ? nil : committed, true)
    }

    mutating func enqueue(_ commit: PendingCommit) {
        if !commit.writes.isEmpty || sessions[commit.sessionID] != nil {
            let count = (sessions[commit.sessionID]?.count ?? 0) + 1
            let session = commit.writes.isEmpty ? sessions[commit.sessionID]?.session : commit.session
            sessions[commit.sessionID] = PendingSession(session: session, count: count)
        }
        queue.append(commit)
    }

    /// One of the session's pending commits is done; the last one hands it back to the working set.
    mutating func settle(_ id: String) {
        guard var entry = sessions[id] else { return }
        entry.count -= 1
        sessions[id] = entry.count > 0 ? entry : nil
    }
}

/// A change that changed nothing and waits for nothing: answered at once.
private struct ImmediateAnswer: Error {
    let response: HTTPResponse
}

/// A request that carries an `Idempotency-Key` (IETF draft): POST and PATCH only.
struct IdempotentRequest {
    /// Keys are 1–255 visible ASCII characters.
    static let maxKeyLength = 255
    /// The response headers that are stored and replayed with the body.
    static let replayedHeaders = ["Content-Type", "Location", "ETag"]

    let scope: String
    let key: String
    /// Method, path and body: a retry must send exactly the same request.
    let fingerprint: [UInt8]

    init?(_ request: HTTPRequest, scope: String) throws {
        guard request.method == "POST" || request.method == "PATCH", let key = request.headers["Idempotency-Key"] else {
            return nil
        }
        guard (1...Self.maxKeyLength).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Problem.invalidHeader("Idempotency-Key", "must be 1-\(Self.maxKeyLength) visible ASCII characters")
        }
        self.scope = scope
        self.key = key
        fingerprint = Array("\(request.method) \(request.path)\n".utf8) + request.body
    }

    var inFlightName: String { scope + "\u{0}" + key }

    func storing(_ response: HTTPResponse, at now: Timestamp) -> StoredResponse {
        var headers: [String: String] = [:]
        for name in Self.replayedHeaders {
            headers[name] = response.headers[name]
        }
        return StoredResponse(
            scope: scope, key: key, fingerprint: fingerprint, status: response.status, headers: headers,
            body: response.body, createdAt: now)
    }
}

/// The wall clock, in the core's terms.
enum Clock {
    /// Seconds on a clock that never jumps, for durations.
    static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(millisecondsSinceEpoch: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }
}

/// Unguessable, URL-safe identifiers: 144 random bits from the kernel (getrandom) as 24 base64url characters.
enum RandomID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func make() -> String {
        // 144 random bits from one getrandom(2) call (glibc's arc4random_buf), each 3 bytes written
        // as four 6-bit characters.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 18) { random in
            arc4random_buf(random.baseAddress!, 18)
            return String(unsafeUninitializedCapacity: 24) { buffer in
                for group in 0..<6 {
                    let bits =
                        Int(random[group * 3]) << 16 | Int(random[group * 3 + 1]) << 8 | Int(random[group * 3 + 2])
                    for index in 0..<4 {
                        buffer[group * 4 + index] = alphabet[bits >> (18 - 6 * index) & 0x3F]
                    }
                }
                return 24
            }
        }
    }
}
