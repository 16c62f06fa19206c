import Foundation
import ModalStackClient
// HTTPClient's headers; a dependency of ModalStackTestSupport.
import ModalStackHTTP
import ModalStackTestSupport
import Synchronization
import Testing

/// What a follower saw: the states in order and the statuses it reported.
private final class Recording: Sendable {
    private let seen = Mutex<(sessions: [Session], statuses: [LiveUpdateStatus], error: (any Error)?)>(([], [], nil))
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts following `sessionID` with `client`.
    init(_ client: ModalStack, _ sessionID: String, resumingFrom session: Session? = nil) {
        let updates = client.updates(of: sessionID, resumingFrom: session) { status in
            self.seen.withLock { $0.statuses.append(status) }
        }
        task.withLock {
            $0 = Task {
                do {
                    for try await session in updates { self.seen.withLock { $0.sessions.append(session) } }
                } catch {
                    self.seen.withLock { $0.error = error }
                }
            }
        }
    }

    var versions: [Int64] { seen.withLock { $0.sessions.map(\.version) } }
    var sessions: [Session] { seen.withLock { $0.sessions } }
    var statuses: [LiveUpdateStatus] { seen.withLock { $0.statuses } }
    var error: (any Error)? { seen.withLock { $0.error } }

    /// Waits until `condition` holds of what was seen, five seconds at most.
    func wait(timeout: Duration = .seconds(5), until condition: (Recording) -> Bool) async throws -> Bool {
        try await eventually(timeout: timeout) { condition(self) }
    }

    func stop() async {
        let task = task.withLock { $0 }
        task?.cancel()
        await task?.value
    }
}

private func client(of server: ServerProcess, _ configuration: ModalStack.Configuration = .init())
    -> ModalStack
{
    ModalStack(baseURL: URL(string: "http://\(server.host):\(server.port)")!, configuration: configuration)
}

/// Fast reconnection for tests; the server beats every second.
private let quick = ModalStack.Configuration(
    retryDelay: .milliseconds(20), maxRetryDelay: .milliseconds(200), heartbeatTimeout: 2.5)

private func present(_ n: Int, in sessionID: String, with client: ModalStack) async throws {
    for index in 0..<n {
        _ = try await client.present(
            PresentRequest(destination: "screen-\(index)", style: .popover, key: UUID().uuidString), in: sessionID)
        _ = try await client.dismiss(in: sessionID)
    }
}

@Suite("Live updates, against the real server")
struct LiveUpdatesTests {
    @Test("another client's changes arrive in order, one state per version, each equal to the server's")
    func changesArriveInOrder() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let writer = client(of: server)
        _ = try await writer.createSession("order")
        let recording = Recording(client(of: server, quick), "order")
        #expect(try await recording.wait { $0.versions == [1] })

        var served: [Int64: Session] = [:]
        for index in 0..<10 {
            let outcome = try await writer.present(
                PresentRequest(destination: "s\(index)", style: index.isMultiple(of: 3) ? .fullScreenCover : .sheet()),
                in: "order")
            served[outcome.session.version] = outcome.session
        }
        let alert = try await writer.present(
            PresentRequest(destination: "a", style: .alert(title: "Sure?")), in: "order")
        served[alert.session.version] = alert.session
        let dismissed = try await writer.dismiss(DismissRequest(.count(3)), in: "order")
        served[dismissed.session.version] = dismissed.session

        #expect(try await recording.wait { $0.versions.last == 13 })
        #expect(recording.versions == Array(1...13))
        for session in recording.sessions.dropFirst() { #expect(session == served[session.version]) }
        await recording.stop()
    }

    @Test("paths arrive with every change, each state derived from the one before without reading the session")
    func pathsDerivedWithoutReads() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"], capturingOutput: true)
        let writer = client(of: server)
        _ = try await writer.createSession("paths")
        let recording = Recording(client(of: server, quick), "paths")
        #expect(try await recording.wait { $0.versions == [1] })

        var served: [Int64: Session] = [:]
        func keep(_ session: Session) { served[session.version] = session }
        keep(try await writer.push(PushRequest(destination: "home"), in: "paths").session)
        let settings = try await writer.present(PresentRequest(destination: "settings"), in: "paths")
        keep(settings.session)
        for name in ["privacy", "account"] {
            keep(try await writer.push(PushRequest(destination: name, payload: ["n": 1]), in: "paths").session)
        }
        keep(try await writer.push(PushRequest(destination: "account", payload: ["n": 2]), in: "paths").session)
        keep(try await writer.pop(PopRequest(result: ["saved": true]), in: "paths").session)
        // A replacement that keeps the sheet with a new payload, and a whole navigation.
        keep(
            try await writer.replaceStack(
                ReplaceStackRequest(stack: [PresentRequest(destination: "settings", payload: ["page": 2])]), in: "paths"
            ).session)
        keep(
            try await writer.navigate(
                to: NavigationRequest(
                    path: [.init(destination: "home"), .init(destination: "inbox")],
                    stack: [.init(PresentRequest(destination: "help"), path: [.init(destination: "faq")])]),
                in: "paths"
            ).session)
        keep(try await writer.dismiss(in: "paths").session)
        let last = try #require(served.keys.max())

        #expect(try await recording.wait { $0.versions.last == last })
        #expect(recording.versions == Array(1...last))
        for session in recording.sessions.dropFirst() { #expect(session == served[session.version]) }
        #expect(recording.sessions.contains { $0.path.count == 2 && $0.stack.first?.path.count == 1 })
        await recording.stop()

        // The log lines of requests are written as they end: a read of our own, last, flushes the
        // others. Besides it, nothing read the session.
        let marker = server.client()
        _ = try marker.send(method: "GET", path: "/v1/sessions/paths", headers: ["X-Request-Id": "last-read"])
        var reads: [JSONValue] = []
        #expect(
            try await eventually {
                let lines = server.outputLines().compactMap {
                    try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
                }
                reads = lines.filter { line in
                    guard case .object(let fields) = line else { return false }
                    return fields["method"] == "GET" && fields["route"] == "/v1/sessions/{sessionId}"
                }
                return reads.contains {
                    if case .object(let fields) = $0 { fields["requestId"] == "last-read" } else { false }
                }
            })
        #expect(reads.count == 1, "the session was read \(reads.count - 1) times while following it")
    }

    @Test("killed and restarted mid-stream, the server's log resumes the sequence without a loss or a repeat")
    func resumesAfterKillAndRestart() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let writer = client(of: server)
        try await present(2, in: "restart", with: writer)
        let recording = Recording(client(of: server, quick), "restart")
        #expect(try await recording.wait { $0.versions == [4] })

        // The changes are made while the client cannot connect: on another port, killed again after.
        let port = server.port
        try server.restart(signal: SIGKILL)
        try await present(3, in: "restart", with: client(of: server))
        try server.restart(signal: SIGKILL, port: port)

        #expect(try await recording.wait { $0.versions.last == 10 })
        #expect(recording.versions == Array(4...10))
        #expect(recording.statuses.contains { if case .connecting(resumingAfter: .some) = $0 { true } else { false } })
        #expect(recording.sessions.last == (try await writer.session("restart")))
        #expect(recording.statuses.contains { if case .reconnecting = $0 { true } else { false } })
        await recording.stop()
    }

    @Test("resumed from a version the pruned log no longer holds: one reset state, then the changes")
    func prunedLogResets() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1", "--event-log-size", "2"])
        let writer = client(of: server)
        let first = try await writer.createSession("pruned")
        try await present(3, in: "pruned", with: writer)

        let recording = Recording(client(of: server, quick), "pruned", resumingFrom: first)
        #expect(try await recording.wait { $0.versions == [7] })
        #expect(recording.sessions.first == (try await writer.session("pruned")))
        try await present(1, in: "pruned", with: writer)
        #expect(try await recording.wait { $0.versions == [7, 8, 9] })
        await recording.stop()
    }

    @Test("resumed from a version the log holds: the changes after it, and nothing before")
    func resumesFromKeptState() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let writer = client(of: server)
        let first = try await writer.createSession("kept")
        try await present(2, in: "kept", with: writer)
        let recording = Recording(client(of: server, quick), "kept", resumingFrom: first)
        #expect(try await recording.wait { $0.versions == [2, 3, 4, 5] })
        await recording.stop()
    }

    @Test("a paused server's missing heartbeats make the client reconnect, and the stream goes on")
    func silentServerReconnects() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let writer = client(of: server)
        _ = try await writer.createSession("paused")
        let recording = Recording(client(of: server, quick), "paused")
        #expect(try await recording.wait { $0.versions == [1] })

        server.send(SIGSTOP)
        let noticed = try await recording.wait(timeout: .seconds(10)) {
            $0.statuses.contains { if case .reconnecting = $0 { true } else { false } }
        }
        server.send(SIGCONT)
        #expect(noticed)
        try await present(1, in: "paused", with: writer)
        #expect(try await recording.wait(timeout: .seconds(10)) { $0.versions == [1, 2, 3] })
        #expect(recording.statuses.last == .streaming)
        await recording.stop()
    }

    @Test("long polls follow the session where streaming is not wanted, to its newest version")
    func longPollsFollow() async throws {
        let server = try ServerProcess()
        let writer = client(of: server)
        _ = try await writer.createSession("polled")
        var configuration = quick
        configuration.liveUpdates = .longPoll
        configuration.longPollWait = 1
        let recording = Recording(client(of: server, configuration), "polled")
        #expect(try await recording.wait { $0.versions == [1] })
        try await present(2, in: "polled", with: writer)
        #expect(try await recording.wait { $0.versions.last == 5 })
        #expect(
            recording.versions == recording.versions.sorted()
                && Set(recording.versions).count == recording.versions.count)
        #expect(recording.statuses.allSatisfy { $0 == .polling })
        await recording.stop()
    }

    @Test("where a proxy does not pass streams through, automatic live updates fall back to long polls")
    func fallsBackToLongPolls() async throws {
        let server = try ServerProcess()
        let writer = client(of: server)
        _ = try await writer.createSession("fallback")
        let proxy = try CuttingProxy(
            forwardingTo: server.port, cuttingFirst: 0,
            streamAnswer: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 9\r\n\r\n<p>no</p>")
        var configuration = quick
        configuration.longPollWait = 1
        let recording = Recording(
            ModalStack(baseURL: proxy.url, configuration: configuration), "fallback")
        #expect(try await recording.wait { $0.versions == [1] })
        try await present(1, in: "fallback", with: writer)
        #expect(try await recording.wait { $0.versions.last == 3 })
        #expect(recording.statuses.contains(.polling))
        #expect(recording.statuses.filter { if case .connecting = $0 { true } else { false } }.count == 1)
        await recording.stop()
    }

    @Test("a deleted session ends the sequence with sessionDeleted; one not made yet is followed from version 1")
    func deletionEnds() async throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let writer = client(of: server)
        _ = try await writer.createSession("gone")
        let recording = Recording(client(of: server, quick), "gone")
        #expect(try await recording.wait { $0.versions == [1] })
        try await writer.deleteSession("gone")
        #expect(try await recording.wait { $0.error != nil })
        #expect(recording.error as? LiveUpdateError == .sessionDeleted)

        // A session that does not exist yet is followed from its first change.
        let unknown = Recording(client(of: server, quick), "made-later")
        #expect(
            try await eventually {
                try server.client().send(path: "/metrics").text.split(separator: "\n").contains(
                    "modalstack_event_streams_open 1")
            }, "the stream is open and waits")
        _ = try await writer.present(PresentRequest(destination: "first"), in: "made-later")
        #expect(try await unknown.wait { $0.versions == [1] })
        #expect(unknown.error == nil)
        await unknown.stop()
    }

    @Test("an expiring token is replaced from the provider and the stream resumes where it was")
    func expiredTokenRefreshed() async throws {
        let server = try ServerProcess(arguments: [
            "--sse-heartbeat", "1", "--api-key", "admin-key-for-tests", "--token-secret",
            "a-secret-of-32-bytes-for-hs256!!",
            "--token-leeway", "0",
        ])
        let admin = ModalStack(
            baseURL: URL(string: "http://\(server.host):\(server.port)")!, credential: .apiKey("admin-key-for-tests"))
        _ = try await admin.createSession("token")
        let minted = Mutex(0)
        var configuration = quick
        configuration.heartbeatTimeout = 5
        let app = ModalStack(
            baseURL: admin.baseURL,
            credential: .tokenProvider {
                minted.withLock { $0 += 1 }
                // exp is in whole seconds, rounded down: a token lives between ttl − 1 and ttl
                // seconds. Two: it lives a second at least, which even a loaded machine uses in time.
                return ClientToken(try await admin.token(for: "token", ttl: 2))
            }, configuration: configuration)
        let recording = Recording(app, "token")
        #expect(try await recording.wait { $0.versions == [1] })

        #expect(try await recording.wait { _ in minted.withLock { $0 } >= 2 })
        try await present(1, in: "token", with: admin)
        #expect(try await recording.wait { $0.versions.suffix(2) == [2, 3] })
        #expect(recording.versions == [1, 2, 3] && recording.error == nil)
        await recording.stop()

        let fixed = ModalStack(
            baseURL: admin.baseURL, credential: .token(try await admin.token(for: "token", ttl: 1).token),
            configuration: configuration)
        let ending = Recording(fixed, "token")
        #expect(try await ending.wait { $0.error != nil })
        #expect(ending.error as? LiveUpdateError == .tokenExpired)
    }
}
