import Foundation
import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// Many clients on one session at once: presents, dismisses, cancels, updates and replaces, some
/// with `If-Match`. Every change is serialized: versions 1…N, each given once, and the event log
/// replays to every acknowledged state and to the final one.
@Suite(
    "Concurrency on one session", .enabled(if: ServerProcess.isLocal, "starts a server with an unbounded event log"),
    .serialized)
struct SessionConcurrencyTests {
    static let clients = 10
    static let seconds = Soak.isOn ? 30.0 : 2.0

    @Test(
        "clients hammering one session: gap-free versions, each given once, and an event log that replays to every acknowledged state"
    )
    func hammerOneSession() throws {
        // The log must keep every change so that it can be replayed from an empty stack.
        let server = try ServerProcess(arguments: ["--event-log-size", "1000000"])
        let id = uniqueSessionID("hammer")
        let setup = server.client()
        let created = try setup.call("PUT", "/v1/sessions/\(id)")
        try #require(created.status == 201)
        #expect(created.json["version"]?.intValue == 1)

        let seed = SeededGenerator.seed()
        print("SessionConcurrencyTests: seed \(seed), \(Self.clients) clients for \(Self.seconds) s")
        let host = server.host
        let port = server.port
        let end = ContinuousClock.now.advanced(by: .milliseconds(Int64(Self.seconds * 1000)))
        let group = ThreadGroup(count: Self.clients) { index in
            var hammer = Hammer(index: index, sessionID: id, host: host, port: port, seed: seed &+ UInt64(index))
            hammer.run(until: end)
            return hammer.log
        }
        let logs = group.join()

        for fault in logs.flatMap(\.faults) {
            Issue.record("\(fault) (seed \(seed))")
        }
        let acks = logs.flatMap(\.acks)
        var statuses: [Int: Int] = [:]
        for log in logs {
            statuses.merge(log.statuses, uniquingKeysWith: +)
        }
        let final = try setup.call("GET", "/v1/sessions/\(id)")
        try #require(final.status == 200)
        let finalVersion = try #require(final.json["version"]?.intValue)
        print(
            "SessionConcurrencyTests: \(acks.count) acknowledged changes, final version \(finalVersion), "
                + "statuses \(statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))"
        )

        // Each change exactly once.
        expectEachVersionOnce(acks, finalVersion: finalVersion)
        #expect(acks.count >= Self.clients * 5, "too few changes went through to mean anything")
        // Interleaving happened: If-Match lost some races, and more than one client got changes in.
        #expect(statuses[412, default: 0] > 0)
        #expect(Set(logs.filter { !$0.acks.isEmpty }.map(\.index)).count > 1)

        // The event log, read in small pages (following `next`): the same events as in large pages,
        // strictly increasing, gap-free versions, and it replays to every state.
        let changes = try setup.loggedChanges(of: id, limit: 97)
        #expect(
            changes == (try setup.loggedChanges(of: id, limit: 1000)), "small pages and large pages give different logs"
        )
        let replay = EventReplay(changes)
        #expect(replay.faults.isEmpty, "\(replay.faults.prefix(10))")
        let logVersions = replay.versions
        #expect(logVersions == Array(1...finalVersion), "the log's versions are not 1...\(finalVersion) in order")
        #expect(
            replay.finalSession.stackIDs == final.json.stackIDs, "the log replays to another stack than the session's")
        #expect(
            replay.finalSession.queueIDs == final.json.queueIDs, "the log replays to another queue than the session's")
        // Every acknowledged state, from the log replayed from the start…
        let sortedAcks = acks.sorted { $0.version < $1.version }
        let divergences = replay.divergences(from: acks)
        #expect(
            divergences.isEmpty,
            "the replayed log leaves \(divergences.count) acknowledged states; the first: \(divergences.prefix(1))")

        // …and each change on its own: that version's change applied to the session the previous
        // acknowledged response served is the one its response served (so that one faulty change
        // does not hide the others).
        var previous = try Session(served: created.json)
        var faultyChanges: [String] = []
        for ack in sortedAcks {
            defer { previous = ack.session }
            guard ack.session.version == previous.version + 1 else { continue }
            let from = "v\(ack.version) (\(ack.operation)) from stack \(previous.stackIDs) queue \(previous.queueIDs)"
            let answered = "the response says stack \(ack.stack) queue \(ack.queue)"
            guard let change = replay.change(ack.version) else {
                faultyChanges.append("\(from): not in the log, \(answered)")
                continue
            }
            let events = change.events.map(\.summary)
            do {
                let session = try previous.applying(change)
                if session.stackIDs != ack.stack || session.queueIDs != ack.queue {
                    faultyChanges.append(
                        "\(from): events \(events) give stack \(session.stackIDs) queue \(session.queueIDs), \(answered)"
                    )
                }
            } catch {
                faultyChanges.append("\(from): events \(events) do not apply (\(error)), \(answered)")
            }
        }
        #expect(
            faultyChanges.isEmpty,
            "\(faultyChanges.count) changes whose logged events do not lead from the state before to the acknowledged one: \(faultyChanges.prefix(2))"
        )
    }

    /// The hammer above replaces the stack while entries wait in the queue only now and then; this
    /// does it on purpose, so that the log of such a change is checked on every run.
    @Test("the event log of a replace that promotes queued entries replays to the acknowledged state")
    func replaceThatPromotes() throws {
        let server = try ServerProcess(arguments: ["--max-depth", "2"])
        let client = server.client()
        let id = uniqueSessionID("promote")
        for destination in ["a", "b", "c", "d"] {
            #expect(
                [201, 202].contains(
                    try client.call(
                        "POST", "/v1/sessions/\(id)/presentations", json: ["destination": .string(destination)]
                    ).status))
        }
        let before = try client.call("GET", "/v1/sessions/\(id)")
        #expect(before.json.queueIDs.count == 2)
        // One entry replaces two: there is room again, and the first queued entry is promoted.
        let replaced = try client.call("PUT", "/v1/sessions/\(id)/stack", json: ["stack": [["destination": "x"]]])
        try #require(replaced.status == 200)
        let session = try #require(replaced.json["session"])
        #expect(replaced.json["promoted"]?.arrayValue?.count == 1)
        let replay = EventReplay(try client.loggedChanges(of: id))
        #expect(replay.faults.isEmpty, "\(replay.faults)")
        let logged = replay.change(session["version"]?.intValue ?? -1)?.events.map(\.summary) ?? []
        #expect(
            replay.finalSession.stackIDs == session.stackIDs,
            "stack \(before.json.stackIDs) queue \(before.json.queueIDs), replaced to \(session.stackIDs): the logged events \(logged) replay to \(replay.finalSession.stackIDs)"
        )
        #expect(replay.finalSession.queueIDs == session.queueIDs)
    }
}

/// One client: random operations on the shared session until the end, one at a time.
private struct Hammer {
    struct Ack: Sendable, AcknowledgedChange {
        /// The session the response served.
        let session: Session
        let operation: String

        var version: Int { Int(session.version) }
        var stack: [String] { session.stackIDs }
        var queue: [String] { session.queueIDs }
    }

    struct Log: Sendable {
        var index = 0
        var acks: [Ack] = []
        var statuses: [Int: Int] = [:]
        var faults: [String] = []
    }

    /// The answers a request may get while others race it; anything else is a fault.
    static let expectedProblems: [Int: Set<String>] = [
        404: ["presentation-not-found"],
        409: [
            "stack-full", "alert-on-top", "queue-not-empty", "queue-full", "already-presented", "nothing-to-dismiss",
            // Another client dismissed it first, or it still waits in the queue.
            "presentation-dismissed", "presentation-queued",
        ],
        412: ["precondition-failed"],
    ]

    let index: Int
    let sessionID: String
    let client: HTTPClient
    var random: SeededGenerator
    var log = Log()
    /// The latest state this client heard of.
    private var version = 1
    private var known: [String] = []
    private var counter = 0

    init(index: Int, sessionID: String, host: String, port: UInt16, seed: UInt64) {
        self.index = index
        self.sessionID = sessionID
        client = HTTPClient(host: host, port: port)
        random = SeededGenerator(seed: seed)
        log.index = index
    }

    mutating func run(until end: ContinuousClock.Instant) {
        defer { client.close() }
        while ContinuousClock.now < end {
            counter += 1
            let ifMatch = Bool.random(using: &random)
            var headers = HTTPHeaders()
            if ifMatch { headers.set("If-Match", "\"\(version)\"") }
            let roll = Int.random(in: 0..<100, using: &random)
            let base = "/v1/sessions/\(sessionID)"
            let unique = "c\(index)n\(counter)"
            let request: (method: String, path: String, body: JSONValue?, name: String)
            switch roll {
            case 0..<30:
                request = ("POST", base + "/presentations", ["destination": .string(unique)], "present \(unique)")
            case 30..<42:
                request = (
                    "POST", base + "/presentations", ["destination": .string(unique), "whenBlocked": "reject"],
                    "present \(unique), reject if blocked"
                )
            case 42..<45:
                request = (
                    "POST", base + "/presentations",
                    ["destination": .string(unique), "style": "alert", "title": .string("Alert \(unique)")],
                    "alert \(unique)"
                )
            case 45..<75:
                request = ("POST", base + "/dismiss", [:], "dismiss the top")
            case 75..<80:
                request = ("POST", base + "/dismiss", ["count": 2], "dismiss 2")
            case 80..<88:
                let target = known.randomElement(using: &random) ?? "none"
                request = ("DELETE", base + "/presentations/\(target)", nil, "delete \(target)")
            case 88..<95:
                let target = known.randomElement(using: &random) ?? "none"
                request = (
                    "PATCH", base + "/presentations/\(target)", ["payload": ["n": .string(unique)]], "update \(target)"
                )
            default:
                let stack: JSONValue = [
                    ["destination": "base", "payload": ["n": .string(unique)]], ["destination": .string(unique)],
                ]
                request = ("PUT", base + "/stack", ["stack": stack], "replace the stack")
            }
            let operation = (ifMatch ? "[If-Match \(version)] " : "") + request.name
            let response: JSONResponse
            do {
                response = try client.call(request.method, request.path, json: request.body, headers: headers)
            } catch {
                log.faults.append("client \(index): \(operation) failed: \(error)")
                return
            }
            log.statuses[response.status, default: 0] += 1
            if (200...299).contains(response.status) {
                guard let served = response.json["session"], let session = try? Session(served: served) else {
                    log.faults.append("client \(index): \(operation) answered \(response.status) without a session")
                    continue
                }
                log.acks.append(Ack(session: session, operation: operation))
                version = Int(session.version)
                known = session.stackIDs + session.queueIDs
            } else if let slug = response.json["type"]?.stringValue.map({ String($0.dropFirst("/problems/".count)) }),
                Self.expectedProblems[response.status]?.contains(slug) == true
            {
                if response.status == 412, let current = response.json["currentVersion"]?.intValue {
                    version = current
                }
            } else {
                log.faults.append(
                    "client \(index): \(operation) answered \(response.status): \(String(decoding: response.raw.prefix(300), as: UTF8.self))"
                )
            }
        }
    }
}
