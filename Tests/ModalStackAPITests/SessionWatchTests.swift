import Dispatch
import Locking
import ModalStackCore
import ModalStackSQLite
import ModalStackService
import ModalStackTestSupport
import ModalStackTokens
import Synchronization
import Testing

@testable import ModalStackAPI
@testable import ModalStackHTTP

/// Long polls and event streams over a real SQLite file, on a clock the tests move: every timer
/// fires inside `advance(by:)`, so nothing here sleeps or waits for the wall clock.
@Suite("Session watch, on a manual clock")
struct SessionWatchTests {
    // MARK: Long poll

    /// A long poll on a session at version 1, and how long it is held.
    struct LongPoll: Sendable, CustomTestStringConvertible {
        let query: String
        let prefer: String?
        let heldSeconds: Int

        var testDescription: String { "\(query) \(prefer.map { "Prefer: \($0)" } ?? "")" }
    }

    @Test(
        "a long poll that sees no change answers 304 when its wait is over, not before",
        arguments: [
            LongPoll(query: "", prefer: "wait=5", heldSeconds: 5),
            LongPoll(query: "?wait=7", prefer: "wait=5", heldSeconds: 7),
            // Held no longer than max-wait.
            LongPoll(query: "?wait=600", prefer: nil, heldSeconds: 10),
        ])
    func longPollTimesOut(poll: LongPoll) throws {
        let harness = try WatchHarness(maxWaitSeconds: 10)
        try harness.createSession("s")
        var headers: HTTPHeaders = ["If-None-Match": "\"1\""]
        if let prefer = poll.prefer { headers.set("Prefer", prefer) }
        let reply = harness.getSession("s", query: poll.query, headers: headers)
        #expect(reply.response == nil)
        #expect(harness.metrics.longPollsWaiting.load(ordering: .relaxed) == 1)

        harness.time.advance(by: .seconds(poll.heldSeconds) - .milliseconds(1))
        #expect(reply.response == nil)

        harness.time.advance(by: .milliseconds(1))
        let response = try #require(reply.response)
        #expect(response.status == 304)
        #expect(response.headers["ETag"] == "\"1\"")
        #expect(response.headers["Preference-Applied"] == "wait=\(poll.heldSeconds)")
        #expect(harness.metrics.longPollsWaiting.load(ordering: .relaxed) == 0)
    }

    @Test("a long poll for a session that does not exist answers 404 when its wait is over")
    func longPollForMissingSessionTimesOut() throws {
        let harness = try WatchHarness()
        let reply = harness.getSession("s", headers: ["If-None-Match": "\"1\"", "Prefer": "wait=5"])
        harness.time.advance(by: .seconds(5) - .milliseconds(1))
        #expect(reply.response == nil)

        harness.time.advance(by: .milliseconds(1))
        let response = try #require(reply.response)
        #expect(response.status == 404)
        #expect(response.headers["Preference-Applied"] == "wait=5")
    }

    // MARK: Event stream

    @Test("an idle event stream gets a heartbeat comment every period, and none once it has ended")
    func heartbeat() throws {
        let harness = try WatchHarness(heartbeatSeconds: 15)
        try harness.createSession("s")
        let reply = harness.streamEvents("s")
        #expect(reply.response?.status == 200)
        #expect(reply.response?.headers["Content-Type"] == "text/event-stream")
        #expect(reply.written == ["session"])

        harness.time.advance(by: .seconds(15) - .milliseconds(1))
        #expect(reply.written == ["session"])
        harness.time.advance(by: .milliseconds(1))
        #expect(reply.written == ["session", "heartbeat"])
        harness.time.advance(by: .seconds(30))
        #expect(reply.written == ["session", "heartbeat", "heartbeat", "heartbeat"])

        // As the server's stop ends every stream.
        harness.service.notifier.publish(.shutdown)
        harness.time.advance(by: .seconds(60))
        #expect(reply.written == ["session", "heartbeat", "heartbeat", "heartbeat"])
        // The last heartbeat found the stream closed and scheduled none; the session's expiry timer
        // went with the stream.
        #expect(harness.time.scheduledWorkCount == 0)
    }

    @Test("an event stream opened with a token ends with tokenExpired when the token does")
    func tokenExpiry() throws {
        let harness = try WatchHarness(heartbeatSeconds: 15)
        try harness.createSession("s")
        let usableUntil = Timestamp(millisecondsSinceEpoch: harness.time.wallMilliseconds() + 50_000)
        let token = ClientToken(sessionID: "s", scopes: [.read], expiresAt: usableUntil)
        let reply = harness.streamEvents("s", grant: .token(token, usableUntil: usableUntil))
        #expect(harness.metrics.eventStreamsOpen.load(ordering: .relaxed) == 1)

        harness.time.advance(by: .seconds(50) - .milliseconds(1))
        #expect(reply.written == ["session", "heartbeat", "heartbeat", "heartbeat"])
        #expect(harness.metrics.eventStreamsOpen.load(ordering: .relaxed) == 1)

        harness.time.advance(by: .milliseconds(1))
        #expect(reply.written == ["session", "heartbeat", "heartbeat", "heartbeat", "tokenExpired"])
        #expect(harness.metrics.eventStreamsOpen.load(ordering: .relaxed) == 0)
        harness.time.advance(by: .seconds(60))
        #expect(reply.written.count == 5)
    }

    @Test("an event stream ends with sessionDeleted, reason expired, when its session's time to live passes")
    func sessionExpiry() throws {
        let harness = try WatchHarness(heartbeatSeconds: 3600)
        try harness.createSession("s", ttlSeconds: 60)
        let reply = harness.streamEvents("s")

        harness.time.advance(by: .seconds(60) - .milliseconds(1))
        #expect(reply.written == ["session"])
        #expect(harness.metrics.eventStreamsOpen.load(ordering: .relaxed) == 1)

        harness.time.advance(by: .milliseconds(1))
        #expect(reply.written == ["session", "sessionDeleted"])
        #expect(reply.lastWrite.contains(#""reason":"expired""#))
        #expect(harness.metrics.eventStreamsOpen.load(ordering: .relaxed) == 0)
    }
}

/// A session watch over a new SQLite file, on a manual clock.
private final class WatchHarness: Sendable {
    let directory: TemporaryDirectory
    let time = ManualTime()
    let metrics = Metrics()
    let service: SessionService
    private let watch: SessionWatch

    init(maxWaitSeconds: Int = 30, heartbeatSeconds: Int = 15) throws {
        directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.appending("sessions.sqlite"), time: time)
        service = SessionService(
            store: store, rules: SessionRules(), catalog: nil, metrics: metrics, cacheSize: 100, time: time)
        watch = SessionWatch(
            service: service, metrics: metrics, maxWaitSeconds: maxWaitSeconds, heartbeatSeconds: heartbeatSeconds,
            time: time)
    }

    /// Ends what is still open, as the server's stop does, and lets every timer run out: work left
    /// scheduled on the clock would keep it (and what the work holds) alive.
    deinit {
        service.notifier.publish(.shutdown)
        time.advance(by: .seconds(86_400))
        service.close()
    }

    /// Creates session `id` and waits for its commit.
    func createSession(_ id: String, ttlSeconds: Int64? = nil) throws {
        let committed = DispatchSemaphore(value: 0)
        let request = ChangeRequest(
            sessionID: id, command: .create(SessionOptions(ttlSeconds: ttlSeconds)), createsSession: true,
            expectedVersion: nil, idempotencyKey: nil)
        service.submit(
            request, render: { outcome, _ in Responses.session(201, outcome.session) },
            completion: { _ in committed.signal() })
        try #require(committed.wait(timeout: .now() + .seconds(10)) == .success)
    }

    /// `GET /v1/sessions/{id}`, as the router hands it to the watch.
    func getSession(_ id: String, query: String = "", headers: HTTPHeaders = [:], grant: Grant = .open)
        -> RecordedReply
    {
        let recorded = RecordedReply()
        watch.getSession(request("/v1/sessions/\(id)\(query)", id, headers), reply: recorded.reply, grant: grant)
        return recorded
    }

    /// `GET /v1/sessions/{id}/events/stream`, as the router hands it to the watch.
    func streamEvents(_ id: String, grant: Grant = .open) -> RecordedReply {
        let recorded = RecordedReply()
        watch.streamEvents(request("/v1/sessions/\(id)/events/stream", id, [:]), reply: recorded.reply, grant: grant)
        return recorded
    }

    private func request(_ target: String, _ id: String, _ headers: HTTPHeaders) -> HTTPRequest {
        var request = HTTPRequest(method: "GET", target: target, headers: headers)
        request.pathParameters = PathParameters(names: ["sessionId"], values: [id])
        return request
    }
}

/// A reply not attached to a connection, keeping its answer and what is written to its stream.
private final class RecordedReply: Sendable {
    private struct Received {
        var response: HTTPResponse?
        var writes: [String] = []
    }

    private let received = LockedValue(Received())
    let reply: HTTPReply

    init() {
        let received = received
        reply = HTTPReply(
            onSend: { response in received.withLock { $0.response = response } },
            onWrite: { bytes in received.withLock { $0.writes.append(String(decoding: bytes, as: UTF8.self)) } })
    }

    /// The response, or the head of the event stream; nil while the request waits.
    var response: HTTPResponse? { received.withLock { $0.response } }

    /// What each write to the stream was: an event's name, or `heartbeat` for the comment.
    var written: [String] {
        received.withLock { received in
            received.writes.map { write in
                guard !write.hasPrefix(": heartbeat") else { return "heartbeat" }
                let event = write.split(separator: "\n").first { $0.hasPrefix("event: ") }
                return event.map { String($0.dropFirst("event: ".count)) } ?? write
            }
        }
    }

    var lastWrite: String { received.withLock { $0.writes.last ?? "" } }
}
