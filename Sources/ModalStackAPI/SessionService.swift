import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackStore
import Synchronization

/// Runs changes against stored sessions: preconditions, idempotent replays, the core's rules, the
/// commit, then the notification of watchers — one write at a time, so that two changes to a
/// session never interleave and every version is given once.
final class SessionService: Sendable {
    let store: any SessionStore
    let rules: SessionRules
    let catalog: Catalog?
    /// Whether every change must carry `If-Match` (428 otherwise).
    let requiresIfMatch: Bool
    let notifier = SessionNotifier()
    private let writeLock = Mutex(())
    /// Idempotency keys whose first request is still running: a retry then gets a 409.
    private let keysInFlight = Mutex(Set<String>())
    /// Why the last commit failed, until one succeeds: readiness reports it.
    private let lastCommitFailure = Mutex<StoreError?>(nil)

    let metrics: Metrics

    init(store: any SessionStore, rules: SessionRules, catalog: Catalog?, requiresIfMatch: Bool, metrics: Metrics) {
        self.store = store
        self.rules = rules
        self.catalog = catalog
        self.requiresIfMatch = requiresIfMatch
        self.metrics = metrics
    }

    func session(id: String) throws -> Session {
        guard let session = try liveSession(id: id, at: Clock.now()) else { throw Problem.sessionNotFound(id) }
        return session
    }

    /// The stored session unless it expired: an expired session reads as never written.
    private func liveSession(id: String, at now: Timestamp) throws(StoreError) -> Session? {
        guard let session = try store.session(id: id), !session.isExpired(at: now) else { return nil }
        return session
    }

    /// A presentation of the session in any state: on the stack, queued, or dismissed and still kept.
    func presentation(id: String, sessionID: String) throws -> Presentation {
        let session = try session(id: sessionID)
        if let active = session.activePresentation(id: id) { return active }
        if let dismissed = try store.dismissedPresentation(id: id, sessionID: sessionID) { return dismissed }
        throw ModalError.presentationNotFound(id)
    }

    /// Applies `command` to the session and commits the result before answering.
    /// - Parameters:
    ///   - createIfMissing: a first write creates the session instead of failing with 404.
    ///   - request: the HTTP request, for `If-Match` and `Idempotency-Key`.
    ///   - render: the response for the outcome; it is stored for idempotent replays.
    func write(
        _ command: Command, onSession id: String, createIfMissing: Bool, request: HTTPRequest,
        idempotencyScope: String? = nil, render: (CommandOutcome) -> HTTPResponse
    ) throws -> HTTPResponse {
        let ifMatch = try request.ifMatch()
        if requiresIfMatch, ifMatch == nil, !command.isCreate { throw Problem.preconditionRequired() }
        let idempotency = try IdempotentRequest(request, scope: idempotencyScope ?? id)
        if let idempotency { try claim(idempotency) }
        defer { if let idempotency { release(idempotency) } }
        if let idempotency, let replay = try replay(idempotency) { return replay }

        let (outcome, response) = try writeLock.withLock { _ in
            let now = Clock.now()
            let stored = try liveSession(id: id, at: now)
            if let ifMatch, !ifMatch.matches(stored?.version, weakly: false) {
                throw Problem.preconditionFailed(currentVersion: stored?.version)
            }
            let unwritten = Session.unwritten(id: id, at: now, ttlSeconds: rules.sessionTTLSeconds)
            guard let current = stored ?? (createIfMissing ? unwritten : nil) else {
                throw Problem.sessionNotFound(id)
            }
            let context = CommandContext(now: now, rules: rules, catalog: catalog, makePresentationID: RandomID.make)
            let outcome = try current.applying(command, in: context)
            let response = render(outcome)
            if let change = outcome.change {
                let response = idempotency.map { $0.storing(response, at: now) }
                let save = SessionWrite.save(
                    SessionUpdate(session: outcome.session, retired: outcome.retired, change: change, response: response))
                // A session that expired but was not swept yet starts afresh: its old log and keys go first.
                try commit(stored == nil ? [.delete(sessionID: id), save] : [save])
            }
            return (outcome, response)
        }
        if let change = outcome.change {
            metrics.recordEvents(change.events)
            notifier.publish(.changed(outcome.session, change))
        }
        return response
    }

    func deleteSession(id: String, request: HTTPRequest) throws {
        let ifMatch = try request.ifMatch()
        if requiresIfMatch, ifMatch == nil { throw Problem.preconditionRequired() }
        try writeLock.withLock { _ in
            guard let stored = try liveSession(id: id, at: Clock.now()) else { throw Problem.sessionNotFound(id) }
            if let ifMatch, !ifMatch.matches(stored.version, weakly: false) {
                throw Problem.preconditionFailed(currentVersion: stored.version)
            }
            try commit([.delete(sessionID: id)])
        }
        notifier.publish(.deleted(sessionID: id))
    }

    /// Deletes up to `limit` expired sessions in one transaction; returns how many went.
    /// Each is checked again under the write lock: one touched since the query lives on.
    @discardableResult
    func sweepExpired(limit: Int) throws -> Int {
        let candidates = try store.expiredSessionIDs(at: Clock.now(), limit: limit)
        guard !candidates.isEmpty else { return 0 }
        let deleted = try writeLock.withLock { _ in
            let now = Clock.now()
            let expired = try candidates.filter { id throws(StoreError) in try store.session(id: id)?.isExpired(at: now) == true }
            try commit(expired.map { .delete(sessionID: $0) })
            return expired
        }
        for id in deleted {
            notifier.publish(.deleted(sessionID: id))
        }
        return deleted.count
    }

    /// Throws unless the database can be read and written: the last commit must have succeeded
    /// (a full disk shows here until a write gets through again), and the write lock must be free.
    func checkHealth() throws {
        if let failure = lastCommitFailure.withLock({ $0 }) { throw failure }
        try store.checkHealth()
    }

    private func commit(_ writes: [SessionWrite]) throws(StoreError) {
        let started = Clock.monotonicSeconds()
        do {
            try store.commit(writes)
            metrics.recordCommit(seconds: Clock.monotonicSeconds() - started)
            lastCommitFailure.withLock { $0 = nil }
        } catch {
            lastCommitFailure.withLock { $0 = error }
            throw error
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

/// Unguessable, URL-safe identifiers: 144 random bits from the system's CSPRNG as 24 base64url characters.
enum RandomID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var characters: [UInt8] = []
        characters.reserveCapacity(24)
        // Six groups of three random bytes, each written as four 6-bit characters.
        for _ in 0..<6 {
            let group = UInt32(generator.next() as UInt8) << 16 | UInt32(generator.next() as UInt8) << 8
                | UInt32(generator.next() as UInt8)
            for shift in [18, 12, 6, 0] {
                characters.append(alphabet[Int(group >> UInt32(shift) & 0x3F)])
            }
        }
        return String(decoding: characters, as: UTF8.self)
    }
}
