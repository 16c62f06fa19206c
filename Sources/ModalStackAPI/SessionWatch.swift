import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore
import Synchronization
import Timekeeping

/// Watching a session for changes without holding a worker thread: long polls (`GET` with
/// `If-None-Match` and `Prefer: wait`) and Server-Sent Events. Both answer from the notifier
/// after a commit; the HTTP bridge keeps their connections suspended meanwhile.
struct SessionWatch: Sendable {
    let service: SessionService
    let metrics: Metrics
    /// The longest a long poll is held, in seconds.
    let maxWaitSeconds: Int
    /// How often an event stream sends a comment to keep proxies from closing it, in seconds.
    let heartbeatSeconds: Int
    let time: any TimeSource

    /// Milliseconds until the grant's credential expires; nil when it does not.
    private func millisecondsLeft(_ grant: Grant) -> Int64? {
        grant.usableUntil.map { max(0, $0.millisecondsSinceEpoch - time.wallMilliseconds()) }
    }

    // MARK: Long poll

    /// On a shared store the read suspends the request while the database answers: no worker
    /// thread waits for it.
    func getSession(_ request: HTTPRequest, reply: HTTPReply, grant: Grant) {
        let id: String
        let condition: EntityTag.Condition?
        let wait: Int?
        do {
            id = try request.sessionID()
            condition = try request.ifNoneMatch()
            // A long poll is held no longer than its token lives.
            wait = try waitSeconds(request).map { wait in
                millisecondsLeft(grant).map { min(wait, Int($0 / 1000)) } ?? wait
            }
        } catch {
            return reply.send(Responses.problem(for: error))
        }
        service.renderedSession(id: id) { [self] read in
            do {
                guard let current = try read.get() else {
                    // A long poll on a session that does not exist waits for it to be made.
                    guard let condition, let wait, wait > 0 else { throw Problem.sessionNotFound(id) }
                    return hold(reply, sessionID: id, watched: nil, until: condition, wait: wait)
                }
                guard let condition, condition.matches(current.session.version, weakly: true) else {
                    return reply.send(Responses.sessionBody(200, current.body, current.session))
                }
                guard let wait, wait > 0 else {
                    return reply.send(notModified(current.session.version, appliedWait: nil))
                }
                hold(reply, sessionID: id, watched: current.session, until: condition, wait: wait)
            } catch {
                reply.send(Responses.problem(for: error))
            }
        }
    }

    /// Answers `reply` when the session moves past what the client has: `watched`, a version
    /// `condition` matches, or made again under its id (with 404 when it is deleted); or, when
    /// `watched` is nil (there is no session), once it is made. After `wait` seconds: 304, or 404
    /// when there is still no session.
    private func hold(
        _ reply: HTTPReply, sessionID: String, watched: Session?, until condition: EntityTag.Condition, wait: Int
    ) {
        let held = HeldRequest(reply: reply, notifier: service.notifier, metrics: metrics)
        let headers: HTTPHeaders = ["Preference-Applied": "wait=\(wait)"]
        let now = time
        let moved = { @Sendable (session: Session) in
            guard let watched else { return !session.isExpired(at: now.now()) }
            return session.createdAt != watched.createdAt || !condition.matches(session.version, weakly: true)
        }
        let changed = { @Sendable (session: Session) in
            held.answer(Responses.session(200, session, headers: headers))
        }
        let notFound = Problem.sessionNotFound(sessionID).response
        held.watch(
            service.notifier.subscribe(to: sessionID) { notification in
                switch notification {
                case .changed(let session) where moved(session): changed(session)
                case .changed: break
                // Without a session, a deletion is of an earlier life (the sweep): the wait goes on.
                case .deleted: if watched != nil { held.answer(notFound) }
                case .shutdown: held.answer(watched.map { notModified($0.version, appliedWait: nil) } ?? notFound)
                }
            })
        // A change committed between the read above and the subscription must not be missed.
        service.renderedSession(id: sessionID) { read in
            if let current = try? read.get()?.session, moved(current) { changed(current) }
        }
        time.schedule(after: .seconds(wait)) {
            guard let watched else {
                var timedOut = notFound
                timedOut.headers.set("Preference-Applied", "wait=\(wait)")
                held.answer(timedOut)
                return
            }
            held.answer(notModified(watched.version, appliedWait: "wait=\(wait)"))
        }
    }

    private func notModified(_ version: Int64, appliedWait: String?) -> HTTPResponse {
        var headers = HTTPHeaders()
        if let appliedWait { headers.set("Preference-Applied", appliedWait) }
        return Responses.notModified(version, headers: headers)
    }

    /// `?wait=N` or `Prefer: wait=N` (RFC 7240), capped at the maximum; the query parameter wins.
    /// A `wait` that is not a whole number is a 400 in either: RFC 7240 has servers ignore the
    /// preferences they do not know, but ignoring a known one given wrong would turn the client's
    /// long poll into a loop that asks again at once.
    private func waitSeconds(_ request: HTTPRequest) throws -> Int? {
        let preferred = try request.preference("wait").map { text in
            guard let seconds = Int32(text), seconds >= 0 else {
                throw Problem.invalidHeader("Prefer", "wait must be a whole number of seconds from 0 to \(Int32.max)")
            }
            return Int(seconds)
        }
        let wait = try request.integerQuery("wait", in: 0...Int64(Int32.max)).map { Int($0) } ?? preferred
        return wait.map { min($0, maxWaitSeconds) }
    }

    // MARK: Server-Sent Events

    /// Opens the stream once the session is read: on a shared store, the request waits for
    /// the database suspended, not on a worker thread.
    func streamEvents(_ request: HTTPRequest, reply: HTTPReply, grant: Grant) {
        let id: String
        let lastEventID: Int64?
        do {
            id = try request.sessionID()
            lastEventID = try request.lastEventID()
        } catch {
            return reply.send(Responses.problem(for: error))
        }
        service.renderedSession(id: id) { [self] read in
            switch read {
            // Nil: the session does not exist (yet, or any more), and the stream waits for it.
            case .success(let rendered):
                openStream(id, following: rendered?.session, lastEventID: lastEventID, reply: reply, grant: grant)
            case .failure(let error):
                reply.send(Responses.problem(for: error))
            }
        }
    }

    private func openStream(
        _ id: String, following session: Session?, lastEventID: Int64?, reply: HTTPReply, grant: Grant
    ) {
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/event-stream")
        headers.set("Cache-Control", "no-store")
        guard let stream = reply.startStream(status: 200, headers: headers) else { return }
        let pump = EventPump(service: service, sessionID: id, stream: stream, time: time)
        if let session {
            // Without Last-Event-ID, or with one this session never reached, the stream starts from the whole session.
            let resumesFrom = lastEventID.flatMap { $0 <= session.version ? $0 : nil }
            if resumesFrom == nil {
                stream.write(
                    EventPump.frame(
                        id: session.version, event: lastEventID == nil ? "session" : "reset",
                        data: session.serialized()))
            }
            pump.follow(session, lastSent: resumesFrom ?? session.version)
        }
        let notifier = service.notifier
        let subscription = notifier.subscribe(to: id) { notification in
            switch notification {
            case .changed(let session): pump.changed(session)
            case .deleted: pump.sessionLeft()
            case .shutdown: stream.close()
            }
        }
        metrics.eventStreamsOpen.add(1, ordering: .relaxed)
        stream.onClose { [metrics] in
            notifier.cancel(subscription)
            metrics.eventStreamsOpen.subtract(1, ordering: .relaxed)
        }
        Heartbeat.start(every: heartbeatSeconds, on: stream, time: time)
        // A stream opened with a token ends when the token does. Weakly: a stream closed before
        // then has let its pump go (the subscription held it), and the timer finds nothing.
        if let left = millisecondsLeft(grant) {
            time.schedule(after: .milliseconds(left)) { [weak pump] in pump?.end(.tokenExpired) }
        }
        pump.catchUp()
    }
}

/// A long poll waiting for its answer: the first answer wins and ends the watch.
final class HeldRequest: Sendable {
    private let reply: HTTPReply
    private let notifier: SessionNotifier
    private let metrics: Metrics
    private struct State {
        var subscription: SessionNotifier.Subscription?
        var answered = false
    }
    private let state = LockedValue(State())

    init(reply: HTTPReply, notifier: SessionNotifier, metrics: Metrics) {
        self.reply = reply
        self.notifier = notifier
        self.metrics = metrics
        metrics.longPollsWaiting.add(1, ordering: .relaxed)
    }

    func watch(_ subscription: SessionNotifier.Subscription) {
        let answered = state.withLock { state in
            state.subscription = subscription
            return state.answered
        }
        if answered { notifier.cancel(subscription) }
    }

    func answer(_ response: HTTPResponse) {
        let (first, subscription) = state.withLock { state in
            defer { state.answered = true }
            return (!state.answered, state.subscription)
        }
        guard first else { return }
        reply.send(response)
        metrics.longPollsWaiting.subtract(1, ordering: .relaxed)
        if let subscription { notifier.cancel(subscription) }
    }
}

/// Sends one event stream what the event log holds after the last version it sent, in order,
/// however the notifications for those versions interleave.
///
/// A stream follows one life of its session: from its creation (version 1) to its deletion or
/// expiry. The session's `createdAt` tells a life from the next one made under the same id. A
/// stream opened while the session does not exist waits for the next life and starts at its
/// version 1. When the life followed ends, whether by a deletion, at its expiry (a timer, not
/// the sweep), or seen as a new life's first change, the stream says `sessionDeleted` and ends,
/// before anything of a new life is sent. A read the store fails leaves the stream open, to be
/// tried again a second later and at the next notification.
final class EventPump: Sendable {
    private let service: SessionService
    private let sessionID: String
    private let stream: HTTPStream
    private let time: any TimeSource

    /// The life followed: when it was created, and when it expires as last seen.
    private struct Life {
        let createdAt: Timestamp
        var expiresAt: Timestamp
    }

    private struct State {
        var lastSent: Int64 = 0
        /// Nil while the session does not exist: the stream waits for it.
        var followed: Life?
        var ended = false
        /// A read of the store is under way, and its answer starts the next.
        var reading = false
        /// Something changed while it was: read the log again after it.
        var readAgain = false
    }

    private let state = LockedValue(State())
    private let expiryTimer = LockedValue<ScheduledWork?>(nil)

    init(service: SessionService, sessionID: String, stream: HTTPStream, time: any TimeSource) {
        self.service = service
        self.sessionID = sessionID
        self.stream = stream
        self.time = time
    }

    /// Follows `session`, whose versions up to `lastSent` the client has.
    func follow(_ session: Session, lastSent: Int64) {
        state.withLock { state in
            state.lastSent = lastSent
            state.followed = Life(createdAt: session.createdAt, expiresAt: session.expiresAt)
        }
        watchExpiry(at: session.expiresAt)
    }

    /// A change of the session was committed (here or elsewhere).
    func changed(_ session: Session) {
        let (adopted, next) = state.withLock { state -> (Bool, Read?) in
            guard !state.ended else { return (false, nil) }
            guard var life = state.followed else {
                // Waiting: a live session is the life to follow, from its version 1.
                guard !session.isExpired(at: time.now()) else { return (false, nil) }
                state.followed = Life(createdAt: session.createdAt, expiresAt: session.expiresAt)
                return (true, readLog(&state))
            }
            guard session.createdAt == life.createdAt else {
                // Made again under the same id: the life followed ended before this one began.
                end(&state, .sessionDeleted(Self.reason(life, at: session.createdAt)))
                return (false, nil)
            }
            life.expiresAt = max(life.expiresAt, session.expiresAt)
            state.followed = life
            return (false, readLog(&state))
        }
        if adopted { watchExpiry(at: session.expiresAt) }
        start(next)
    }

    /// The session was deleted (by a request, by the expiry sweep, or by another instance).
    /// A stream still waiting for the session has nothing to end.
    func sessionLeft() {
        state.withLock { state in
            guard let life = state.followed else { return }
            end(&state, .sessionDeleted(Self.reason(life, at: time.now())))
        }
    }

    /// Sends what there is to send: at the start, after a notification, or after a failed read.
    func catchUp() {
        let next = state.withLock { state -> Read? in
            guard !state.ended else { return nil }
            guard state.followed != nil else { return .sessionToFollow }
            return readLog(&state)
        }
        start(next)
    }

    /// A read of the store the pump starts; one at a time, so frames go out in order.
    private enum Read {
        /// The log after the last version sent.
        case log(after: Int64)
        /// The session, when the log no longer holds the next change: a `reset` event.
        case reset
        /// The session, when none is followed yet: the life to follow.
        case sessionToFollow
    }

    /// The log read that sends what follows the last version sent, unless a read is under way:
    /// then that one is followed by another when it is answered.
    private func readLog(_ state: inout State) -> Read? {
        guard !state.reading else {
            state.readAgain = true
            return nil
        }
        state.reading = true
        return .log(after: state.lastSent)
    }

    /// Starts `read` outside the lock: an embedded store answers on this thread.
    private func start(_ read: Read?) {
        switch read {
        case nil: return
        case .log(let after):
            service.changes(sessionID: sessionID, after: after, eventLimit: Endpoints.maxEventPage) { [self] logged in
                start(state.withLock { state in sent(logged, &state) })
            }
        case .reset:
            service.renderedSession(id: sessionID) { [self] read in
                start(state.withLock { state in reset(read.map { $0?.session }, &state) })
            }
        case .sessionToFollow:
            service.renderedSession(id: sessionID) { [self] read in
                let adopted = state.withLock { state -> Session? in
                    guard !state.ended, state.followed == nil else { return nil }
                    guard case .success(let rendered) = read else {
                        stream.close()
                        return nil
                    }
                    guard let session = rendered?.session else { return nil }
                    state.followed = Life(createdAt: session.createdAt, expiresAt: session.expiresAt)
                    return session
                }
                // None yet: the notification of its first change starts the stream.
                guard let adopted else { return }
                watchExpiry(at: adopted.expiresAt)
                catchUp()
            }
        }
    }

    /// Sends the changes logged after the last one sent; the next read, if any. When the log no
    /// longer holds the next one (the client was away too long), reads the session for a `reset`
    /// event instead. Ends the stream when the changes are of another life.
    private func sent(_ logged: Result<[SessionChange], StoreError>, _ state: inout State) -> Read? {
        state.reading = false
        guard !state.ended, let life = state.followed else { return nil }
        guard case .success(let changes) = logged else { return retryLater() }
        guard let first = changes.first else {
            // Up to date, unless a notification came while the log was read.
            guard state.readAgain else { return nil }
            state.readAgain = false
            return readLog(&state)
        }
        if first.version > state.lastSent + 1 {
            state.reading = true
            return .reset
        }
        for change in changes {
            // A first change after one sent is another life's: the log of this one was deleted.
            if state.lastSent > 0, change.events.first?.kind == .sessionCreated {
                end(&state, .sessionDeleted(Self.reason(life, at: change.at)))
                return nil
            }
            guard stream.write(Self.frame(id: change.version, event: "change", data: change.serialized()))
            else { return nil }
            state.lastSent = change.version
        }
        // A page: more may follow.
        return readLog(&state)
    }

    /// Sends the whole session as a `reset` event, then reads the log after it.
    private func reset(_ read: Result<Session?, StoreError>, _ state: inout State) -> Read? {
        state.reading = false
        guard !state.ended, let life = state.followed else { return nil }
        guard case .success(let session) = read else { return retryLater() }
        guard let session, session.createdAt == life.createdAt else {
            end(&state, .sessionDeleted(Self.reason(life, at: time.now())))
            return nil
        }
        // A session in memory shown unconfirmed (--max-staleness-ms) may be older than what was
        // sent: no reset from it; look again as after a failed read.
        guard session.version > state.lastSent else { return retryLater() }
        stream.write(Self.frame(id: session.version, event: "reset", data: session.serialized()))
        state.lastSent = session.version
        return readLog(&state)
    }

    /// After a failed read (PostgreSQL restarting or failing over, say): the stream stays open
    /// and tries again from the last version it sent, so nothing is skipped.
    private func retryLater() -> Read? {
        time.schedule(after: Self.retryAfterStoreFailure) { [weak self] in self?.catchUp() }
        return nil
    }

    static let retryAfterStoreFailure = Duration.seconds(1)

    /// At the expiry of the life followed, looks again: a change may have put it off (the TTL
    /// runs from the last change). One timer per stream, moved as the expiry moves, and cancelled
    /// with the pump: a timer left behind by a closed stream would wait out the whole TTL.
    private func watchExpiry(at expiresAt: Timestamp) {
        let delay = max(0, expiresAt.millisecondsSinceEpoch - time.wallMilliseconds())
        expiryTimer.withLock { timer in
            timer?.cancel()
            // Weakly: the pump lives as long as its stream's subscription.
            timer = time.schedule(after: .milliseconds(delay)) { [weak self] in self?.expiryDue() }
        }
    }

    deinit {
        expiryTimer.withLock { $0?.cancel() }
    }

    private func expiryDue() {
        service.renderedSession(id: sessionID) { [self] read in lookAgain(read.map { $0?.session }) }
    }

    private func lookAgain(_ read: Result<Session?, StoreError>) {
        let next = state.withLock { state -> Timestamp? in
            guard !state.ended, var life = state.followed else { return nil }
            switch read {
            case .failure:
                // The store did not answer: look again in a second.
                return Timestamp(millisecondsSinceEpoch: time.wallMilliseconds() + 1000)
            case .success(let session?) where session.createdAt == life.createdAt:
                // Still alive: changed since, or the timer fired a little early.
                life.expiresAt = max(life.expiresAt, session.expiresAt)
                state.followed = life
                return Timestamp(
                    millisecondsSinceEpoch: max(
                        session.expiresAt.millisecondsSinceEpoch, time.wallMilliseconds() + 1))
            case .success:
                end(&state, .sessionDeleted(Self.reason(life, at: time.now())))
                return nil
            }
        }
        if let next { watchExpiry(at: next) }
    }

    /// Why a life that was last seen expiring at `life.expiresAt` was over at `moment`.
    private static func reason(_ life: Life, at moment: Timestamp) -> Ending.Reason {
        moment >= life.expiresAt ? .expired : .deleted
    }

    /// Why a stream ends before the client leaves: sent as the last event, with no `id`.
    enum Ending {
        case sessionDeleted(Reason)
        case tokenExpired

        var event: String {
            switch self {
            case .sessionDeleted: "sessionDeleted"
            case .tokenExpired: "tokenExpired"
            }
        }

        /// Why the session left: `DELETE`, or its TTL passed without a change.
        enum Reason: String {
            case deleted
            case expired
        }
    }

    /// Says why the stream ends, and ends it.
    func end(_ ending: Ending) {
        state.withLock { end(&$0, ending) }
    }

    private func end(_ state: inout State, _ ending: Ending) {
        guard !state.ended else { return }
        state.ended = true
        let data: JSONValue =
            switch ending {
            case .sessionDeleted(let reason):
                ["type": "sessionDeleted", "sessionId": .string(sessionID), "reason": .string(reason.rawValue)]
            case .tokenExpired: ["type": "tokenExpired", "sessionId": .string(sessionID)]
            }
        stream.write(Self.frame(id: nil, event: ending.event, data: data.serialized()))
        stream.close()
    }

    /// One Server-Sent Event. The JSON writer never emits a raw line break, so `data` is one line.
    static func frame(id: Int64?, event: String, data: [UInt8]) -> [UInt8] {
        var text = id.map { "id: \($0)\n" } ?? ""
        text += "event: \(event)\ndata: "
        return Array(text.utf8) + data + Array("\n\n".utf8)
    }
}

/// A comment line sent periodically on an event stream, until the stream is closed.
enum Heartbeat {
    static func start(every seconds: Int, on stream: HTTPStream, time: any TimeSource) {
        time.schedule(after: .seconds(seconds)) {
            if stream.write(Array(": heartbeat\n\n".utf8)) { start(every: seconds, on: stream, time: time) }
        }
    }
}

extension HTTPRequest {
    /// The version named by `Last-Event-ID` (an event stream resuming), if any.
    func lastEventID() throws -> Int64? {
        try headers["Last-Event-ID"].map { text -> Int64 in
            guard let version = Int64(text.trimmingSpaces), version >= 0 else {
                throw Problem.invalidHeader("Last-Event-ID", "must be a version number")
            }
            return version
        }
    }
}
