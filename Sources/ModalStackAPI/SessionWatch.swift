import Dispatch
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackService
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

    func getSession(_ request: HTTPRequest, reply: HTTPReply, grant: Grant) {
        do {
            let id = try request.sessionID()
            let condition = try request.ifNoneMatch()
            // A long poll is held no longer than its token lives.
            let wait = try waitSeconds(request).map { wait in
                millisecondsLeft(grant).map { min(wait, Int($0 / 1000)) } ?? wait
            }
            let (session, body) = try service.existingRenderedSession(id: id)
            guard let condition, condition.matches(session.version, weakly: true) else {
                reply.send(Responses.sessionBody(200, body, session))
                return
            }
            guard let wait, wait > 0 else {
                reply.send(notModified(session.version, appliedWait: nil))
                return
            }
            hold(reply, sessionID: id, until: condition, wait: wait, version: session.version)
        } catch {
            reply.send(Responses.problem(for: error))
        }
    }

    /// Answers `reply` when the session no longer matches `condition`, or with 304 after `wait` seconds.
    private func hold(
        _ reply: HTTPReply, sessionID: String, until condition: EntityTag.Condition, wait: Int, version: Int64
    ) {
        let held = HeldRequest(reply: reply, notifier: service.notifier, metrics: metrics)
        let headers: HTTPHeaders = ["Preference-Applied": "wait=\(wait)"]
        let changed = { @Sendable (session: Session) in
            held.answer(Responses.session(200, session, headers: headers))
        }
        held.watch(
            service.notifier.subscribe(to: sessionID) { notification in
                switch notification {
                case .changed(let session) where !condition.matches(session.version, weakly: true): changed(session)
                case .changed: break
                case .deleted: held.answer(Problem.sessionNotFound(sessionID).response)
                case .shutdown: held.answer(notModified(version, appliedWait: nil))
                }
            })
        // A change committed between the read above and the subscription must not be missed.
        if let current = try? service.session(id: sessionID), !condition.matches(current.version, weakly: true) {
            changed(current)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(wait)) {
            held.answer(notModified(version, appliedWait: "wait=\(wait)"))
        }
    }

    private func notModified(_ version: Int64, appliedWait: String?) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("ETag", EntityTag.of(version: version))
        if let appliedWait { headers.set("Preference-Applied", appliedWait) }
        return HTTPResponse(status: 304, headers: headers, body: [])
    }

    /// `?wait=N` or `Prefer: wait=N` (RFC 7240), capped at the maximum. An unreadable preference
    /// is ignored, as RFC 7240 asks; an unreadable query parameter is a 400.
    private func waitSeconds(_ request: HTTPRequest) throws -> Int? {
        if let wait = try request.integerQuery("wait", in: 0...Int64(Int32.max)) {
            return min(Int(wait), maxWaitSeconds)
        }
        guard let seconds = request.preference("wait").flatMap({ Int($0) }), seconds >= 0 else { return nil }
        return min(seconds, maxWaitSeconds)
    }

    // MARK: Server-Sent Events

    func streamEvents(_ request: HTTPRequest, reply: HTTPReply, grant: Grant) {
        do {
            let id = try request.sessionID()
            let session = try service.existingSession(id: id)
            let lastEventID = try request.headers["Last-Event-ID"].map { text -> Int64 in
                guard let version = Int64(text.trimmingSpaces), version >= 0 else {
                    throw Problem.invalidHeader("Last-Event-ID", "must be a version number")
                }
                return version
            }
            var headers = HTTPHeaders()
            headers.set("Content-Type", "text/event-stream")
            headers.set("Cache-Control", "no-store")
            guard let stream = reply.startStream(status: 200, headers: headers) else { return }
            // Without Last-Event-ID, or with one this session never reached, the stream starts from the whole session.
            let resumesFrom = lastEventID.flatMap { $0 <= session.version ? $0 : nil }
            let pump = EventPump(
                service: service, sessionID: id, stream: stream, lastSent: resumesFrom ?? session.version)
            if resumesFrom == nil {
                stream.write(
                    EventPump.frame(
                        id: session.version, event: lastEventID == nil ? "session" : "reset", data: session.serialized()
                    ))
            }
            let notifier = service.notifier
            let subscription = notifier.subscribe(to: id) { notification in
                switch notification {
                case .changed: pump.catchUp()
                case .deleted: pump.end(.sessionDeleted)
                case .shutdown: stream.close()
                }
            }
            metrics.eventStreamsOpen.add(1, ordering: .relaxed)
            stream.onClose { [metrics] in
                notifier.cancel(subscription)
                metrics.eventStreamsOpen.subtract(1, ordering: .relaxed)
            }
            Heartbeat.start(every: heartbeatSeconds, on: stream)
            // A stream opened with a token ends when the token does. Weakly: a stream closed before
            // then has let its pump go (the subscription held it), and the timer finds nothing.
            if let left = millisecondsLeft(grant) {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(left))) { [weak pump] in
                    pump?.end(.tokenExpired)
                }
            }
            pump.catchUp()
        } catch {
            reply.send(Responses.problem(for: error))
        }
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
final class EventPump: Sendable {
    private let service: SessionService
    private let sessionID: String
    private let stream: HTTPStream
    private let lastSent: LockedValue<Int64>

    init(service: SessionService, sessionID: String, stream: HTTPStream, lastSent: Int64) {
        self.service = service
        self.sessionID = sessionID
        self.stream = stream
        self.lastSent = LockedValue(lastSent)
    }

    /// Sends every logged change after the last one sent. When the log no longer holds the next
    /// one (the client was away too long), sends a `reset` event with the whole session instead.
    func catchUp() {
        lastSent.withLock { lastSent in
            do {
                while true {
                    let changes = try service.changes(
                        sessionID: sessionID, after: lastSent, eventLimit: Endpoints.maxEventPage)
                    guard let first = changes.first else { return }
                    if first.version > lastSent + 1 {
                        let session = try service.existingSession(id: sessionID)
                        stream.write(Self.frame(id: session.version, event: "reset", data: session.serialized()))
                        lastSent = session.version
                        continue
                    }
                    for change in changes {
                        guard stream.write(Self.frame(id: change.version, event: "change", data: change.serialized()))
                        else { return }
                        lastSent = change.version
                    }
                }
            } catch {
                stream.close()
            }
        }
    }

    /// Why a stream ends before the client leaves: sent as the last event, with no `id`.
    enum Ending: String {
        case sessionDeleted
        case tokenExpired
    }

    /// Says why the stream ends, and ends it.
    func end(_ ending: Ending) {
        stream.write(
            Self.frame(
                id: nil, event: ending.rawValue,
                data: JSONValue.object(["type": .string(ending.rawValue), "sessionId": .string(sessionID)])
                    .serialized()))
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
    static func start(every seconds: Int, on stream: HTTPStream) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) {
            if stream.write(Array(": heartbeat\n\n".utf8)) { start(every: seconds, on: stream) }
        }
    }
}
