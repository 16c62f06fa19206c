import Foundation
import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Synchronization
import Testing

/// Several instances of the built binary on one database of a real PostgreSQL server, as behind a
/// load balancer without sticky sessions (README, "Several instances on PostgreSQL"): a read on
/// one instance sees what another acknowledged, versions stay gap-free however writers spread over
/// the instances, watchers wake for other instances' commits, an idempotent retry may land on any
/// instance, a kill -9 of one instance loses and doubles nothing, PostgreSQL restarting under
/// running instances is survived without restarting them, and so is failing over to a
/// synchronous standby; PgBouncer in transaction mode may stand in front.
///
/// Latencies are printed, not asserted: the bounds are checked by reading the figures. Replay the
/// random parts with `MODALSTACK_SEED=<seed>` (printed); `MODALSTACK_SOAK=1` runs 200 kill trials.
@Suite(
    "Several instances on one PostgreSQL database",
    .enabled(if: ServerProcess.isLocal, "starts, kills and restarts its own instances"),
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")),
    .serialized)
struct MultiInstanceTests {
    static let readRounds = 200
    static let contendingWritersPerInstance = 3
    static let contendingRequests = 80
    static let wakeRounds = 100
    static let streamedChanges = 100
    static let streamedBurst = 50
    static let simultaneousRounds = 30
    static let killTrials = Soak.isOn ? 200 : 20
    /// Writers per kill trial: the even ones write on A, the odd ones on B.
    static let killWriters = 4
    static let killWritersOnA = (killWriters + 1) / 2
    /// Changes acknowledged before the kill, drawn from this range for each trial.
    static let killLoad = 50...300
    /// Changes acknowledged after the kill (on B) before the writers stop.
    static let loadAfterKill = 20
    /// GET requests held waiting on PostgreSQL at once by an instance with two HTTP threads.
    static let readsInFlight = 300

    // MARK: Read your writes

    @Test("a change acknowledged by one instance is read at its version or later on the two others, 200 times")
    func readYourWrites() throws {
        let servers = try instances(3)
        let clients = servers.map { $0.client() }
        let base = "/v1/sessions/\(uniqueSessionID("ryw"))"
        try #require(try clients[0].call("PUT", base).status == 201)
        var reads = 0
        var stale: [String] = []
        for round in 0..<Self.readRounds {
            // Each instance writes in turn, so every ordered pair of instances is checked.
            let writer = round % clients.count
            let change = try alternatingChange(round, on: clients[writer], base: base)
            try #require(change.status == (round % 2 == 0 ? 201 : 200), "round \(round): \(change.excerpt)")
            let acknowledged = try #require(change.json["session"])
            let version = try #require(acknowledged["version"]?.intValue)
            for reader in clients.indices where reader != writer {
                let read = try clients[reader].call("GET", base)
                reads += 1
                let seen = read.json["version"]?.intValue ?? -1
                if read.status != 200 || seen < version || (seen == version && read.json != acknowledged) {
                    stale.append(
                        "round \(round): instance \(writer) acknowledged version \(version) with stack \(acknowledged.stackIDs), instance \(reader) answered \(read.status) version \(seen) stack \(read.json.stackIDs)"
                    )
                }
            }
        }
        let final = try clients[1].call("GET", base)
        print(
            "MultiInstanceTests.readYourWrites: \(Self.readRounds) changes spread over 3 instances, "
                + "\(reads) immediate reads on the other two, \(stale.count) older than the acknowledged version")
        #expect(stale.isEmpty, "\(stale.count) reads missed the acknowledged change: \(stale.prefix(5))")
        #expect(final.json["version"]?.intValue == Self.readRounds + 1)
    }

    // MARK: Requests in flight

    @Test(
        "two HTTP threads: 300 reads of every kind (a session, events, the list, a version, a stream…) wait on a locked table at once, then each gets its answer"
    )
    func readsInFlightBeyondThreads() throws {
        let postgres = try PostgresServer.shared()
        let database = try postgres.createDatabase("inflight")
        let server = try ServerProcess(arguments: ["--threads", "2"], databaseURL: postgres.url(database: database))
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID("inflight"))"
        try #require(try client.call("PUT", base).status == 201)
        let made = try client.call("POST", "\(base)/presentations", json: ["destination": .string("a")])
        try #require(made.status == 201)
        let acknowledged = try #require(made.json["session"])
        let presentationID = try #require(made.json["presentation"]?["id"]?.stringValue)
        // Every read a client makes, each with what it answers once PostgreSQL does.
        let reads: [(path: String, answers: (JSONValue?) -> Bool)] = [
            (base, { $0 == acknowledged }),
            ("\(base)/events", { $0?["version"]?.intValue == 2 && $0?["changes"]?.arrayValue?.count == 2 }),
            ("/v1/sessions?limit=100", { $0?["sessions"]?.arrayValue?.first?["version"]?.intValue == 2 }),
            ("\(base)/presentations/\(presentationID)", { $0?["destination"] == "a" }),
            ("\(base)/transition?from=1", { $0?["from"]?.intValue == 1 && $0?["to"]?.intValue == 2 }),
            ("\(base)/versions/1", { $0?["version"]?.intValue == 1 && $0?["stack"]?.arrayValue?.isEmpty == true }),
            ("\(base)/events/stream", { _ in true }),
        ]
        // Every read of the sessions table now waits, as on a database that stopped answering.
        let lock = try postgres.lock(table: "sessions", database: database)
        var locked = true
        defer { if locked { try? postgres.release(lock) } }
        let readers = (0..<Self.readsInFlight).map { _ in server.client() }
        for (index, reader) in readers.enumerated() {
            let path = reads[index % reads.count].path
            try reader.sendRaw(Array("GET \(path) HTTP/1.1\r\nHost: \(server.host)\r\n\r\n".utf8))
        }
        func waiting() throws -> Double? {
            metric(try client.send(method: "GET", path: "/metrics").text, "modalstack_store_reads_waiting")
        }
        let allWaiting = try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(5)) {
            try waiting() == Double(Self.readsInFlight)
        }
        let waitingAtOnce = try waiting() ?? -1
        #expect(allWaiting, "\(waitingAtOnce) of \(Self.readsInFlight) reads waiting on PostgreSQL at once")
        // The two threads are free: neither waits for the database.
        #expect(try client.send(method: "GET", path: "/livez").status == 200)
        try postgres.release(lock)
        locked = false
        var answered = 0
        for (index, reader) in readers.enumerated() {
            let read = reads[index % reads.count]
            if read.path.hasSuffix("/stream") {
                // A stream opens with the whole session, at the version acknowledged.
                let head = try reader.readStreamHead()
                let lines = try (0..<3).map { _ in try reader.readLine() ?? "" }
                let data = try? JSONParser.parse(Array(lines[2].utf8.dropFirst("data: ".utf8.count)))
                if head.status == 200, lines[..<2] == ["id: 2", "event: session"], data == acknowledged {
                    answered += 1
                } else {
                    Issue.record("\(read.path): \(head.status) \(lines)")
                }
                continue
            }
            let response = try reader.readResponse()
            if response.status == 200, read.answers(try? JSONParser.parse(response.body)) {
                answered += 1
            } else {
                Issue.record("\(read.path): \(response.status) \(response.text.prefix(300))")
            }
        }
        print(
            "MultiInstanceTests.readsInFlightBeyondThreads: \(Self.readsInFlight) reads of \(reads.count) kinds "
                + "waiting at once on --threads 2, \(answered) answered as acknowledged once the lock went")
        #expect(answered == Self.readsInFlight)
        #expect(try waiting() == 0)
    }

    // MARK: Gap-free versions

    @Test("writers on one session through two instances: every version given once, 1…N, and a gap-free event log")
    func gapFreeVersions() throws {
        // The log must keep every change, so that it replays from an empty stack.
        try expectGapFreeVersions(on: try instances(2, arguments: ["--event-log-size", "1000000"]))
    }

    /// Writers on one session through each of `servers`, and what the instances then show: each
    /// version given once, and the same gap-free event log replaying to every acknowledged state.
    private func expectGapFreeVersions(on servers: [ServerProcess]) throws {
        let id = uniqueSessionID("contended")
        let setup = servers[0].client()
        let created = try setup.call("PUT", "/v1/sessions/\(id)")
        try #require(created.status == 201)
        #expect(created.json["version"]?.intValue == 1)

        let seed = SeededGenerator.seed()
        let writers = Self.contendingWritersPerInstance * servers.count
        print(
            "MultiInstanceTests.gapFreeVersions: seed \(seed), \(writers) writers over 2 instances, "
                + "\(Self.contendingRequests) requests each")
        let group = ThreadGroup(count: writers) { index in
            let instance = index % servers.count
            var writer = ContendingWriter(
                index: index, instance: instance, sessionID: id,
                client: HTTPClient(host: servers[instance].host, port: servers[instance].port),
                seed: seed &+ UInt64(index))
            writer.run(requests: Self.contendingRequests)
            return writer.log
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
        #expect(try servers[1].client().call("GET", "/v1/sessions/\(id)").json == final.json)
        print(
            "MultiInstanceTests.gapFreeVersions: \(acks.count) acknowledged changes "
                + "(\(acks.filter { $0.instance == 0 }.count) on A, \(acks.filter { $0.instance == 1 }.count) on B), "
                + "final version \(finalVersion), statuses "
                + statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))

        // Each change once.
        expectEachVersionOnce(acks, finalVersion: finalVersion)
        #expect(acks.count >= writers * 5, "too few changes went through to mean anything")
        // The writers raced: If-Match lost some races, and both instances got changes in.
        #expect(statuses[412, default: 0] > 0)
        #expect(Set(acks.map(\.instance)) == [0, 1])

        // The event log, the same on both instances: versions 1…N in order, replaying to every
        // acknowledged state and to the final one.
        let changes = try setup.loggedChanges(of: id, limit: 97)
        #expect(try servers[1].client().loggedChanges(of: id) == changes, "the instances list different event logs")
        let replay = EventReplay(changes)
        #expect(replay.faults.isEmpty, "\(replay.faults.prefix(10))")
        #expect(replay.versions == Array(1...finalVersion), "the log's versions are not 1...\(finalVersion) in order")
        #expect(
            replay.finalSession.stackIDs == final.json.stackIDs, "the log replays to another stack than the session's")
        #expect(
            replay.finalSession.queueIDs == final.json.queueIDs, "the log replays to another queue than the session's")
        let divergences = replay.divergences(from: acks)
        #expect(
            divergences.isEmpty,
            "\(divergences.count) acknowledged states the log does not replay to: \(divergences.prefix(2))")
    }

    // MARK: Wake-ups across instances

    @Test("a long poll on one instance answers a change made on another, long before its wait ends, 100 times")
    func longPollAcrossInstances() throws {
        try expectWakeUps(on: try instances(2), rounds: Self.wakeRounds)
    }

    /// `rounds` long polls on the second of `servers`, each woken by a change on the first.
    private func expectWakeUps(on servers: [ServerProcess], rounds: Int) throws {
        let writer = servers[0].client()
        let gauge = servers[1].client()
        let base = "/v1/sessions/\(uniqueSessionID("poll"))"
        var version = try #require(try writer.call("PUT", base).json["version"]?.intValue)
        var latencies: [Double] = []
        var roundTrips: [Double] = []
        for round in 0..<rounds {
            let wake = try wakeUp(on: servers[1], gauge: gauge, base: base, after: version) {
                try alternatingChange(round, on: writer, base: base)
            }
            let acknowledged = try #require(
                wake.acknowledged.json["session"], "round \(round): \(wake.acknowledged.excerpt)")
            guard wake.check(round: round) else { break }
            latencies.append(wake.latency)
            roundTrips.append(wake.writeRoundTrip)
            version = try #require(acknowledged["version"]?.intValue)
        }
        print(
            "MultiInstanceTests.longPollAcrossInstances: \(latencies.count) long polls on B (wait=20) woken by a change on A; "
                + "B's answer − A's ack: \(summary(latencies)); A's write round trip: \(summary(roundTrips))")
        #expect(latencies.count == rounds)
    }

    // MARK: Through a transaction pooler

    @Test(
        "through PgBouncer in transaction mode, on one PostgreSQL session for all: versions gap-free, long polls woken",
        .enabled(
            if: PostgresServer.pgBouncerUnavailableReason == nil,
            Comment(rawValue: PostgresServer.pgBouncerUnavailableReason ?? "")))
    func throughTransactionPooler() throws {
        let postgres = try PostgresServer()
        defer { postgres.stop() }
        // One server connection: every instance's transactions take turns on one PostgreSQL
        // session, so a named statement or a session setting would meet another client's.
        let bouncer = try postgres.startPgBouncer(poolSize: 1)
        let database = try postgres.createDatabase("pooled")
        let arguments = [
            "--database-pooler", "transaction", "--database-listen-url", postgres.url(database: database),
            "--event-log-size", "1000000",
        ]
        let servers = try (0..<2).map { _ in
            try ServerProcess(arguments: arguments, databaseURL: postgres.url(database: database, port: bouncer))
        }
        try expectGapFreeVersions(on: servers)
        try expectWakeUps(on: servers, rounds: 20)
    }

    @Test(
        "an event stream on one instance sends the changes committed on another, in order, each with its version as id")
    func eventStreamAcrossInstances() throws {
        let servers = try instances(2)
        let writer = servers[0].client()
        let base = "/v1/sessions/\(uniqueSessionID("stream"))"
        try #require(try writer.call("PUT", base).status == 201)
        let watcher = HTTPClient(host: servers[1].host, port: servers[1].port, timeoutSeconds: 10)
        defer { watcher.close() }
        let head = try watcher.openStream(path: "\(base)/events/stream")
        try #require(head.status == 200)
        #expect(head.headers["Content-Type"] == "text/event-stream")
        let first = try #require(try watcher.nextEvent())
        #expect(first.event == "session")
        #expect(first.id == "1")

        // One change at a time, each read off the stream before the next: the latency.
        var latencies: [Double] = []
        var mismatches: [String] = []
        for round in 0..<Self.streamedChanges {
            let change = try alternatingChange(round, on: writer, base: base)
            let acknowledgedAt = ContinuousClock.now
            let acknowledged = try #require(change.json["session"], "round \(round): \(change.excerpt)")
            guard let event = try watcher.nextEvent(timeout: 10) else {
                Issue.record("round \(round): the stream on B ended")
                break
            }
            latencies.append(milliseconds(from: acknowledgedAt, to: .now))
            if let mismatch = mismatch(event, acknowledged) { mismatches.append("round \(round): \(mismatch)") }
        }

        // A burst of changes without waiting, then the stream: all of them, in order.
        var burst: [JSONValue] = []
        for round in 0..<Self.streamedBurst {
            let change = try alternatingChange(round, on: writer, base: base)
            burst.append(try #require(change.json["session"], "burst \(round): \(change.excerpt)"))
        }
        var streamed = 0
        for acknowledged in burst {
            guard let event = try watcher.nextEvent(timeout: 10) else {
                Issue.record("the stream on B ended after \(streamed) of the burst's \(burst.count) changes")
                break
            }
            streamed += 1
            if let mismatch = mismatch(event, acknowledged) { mismatches.append("burst: \(mismatch)") }
        }
        print(
            "MultiInstanceTests.eventStreamAcrossInstances: \(latencies.count) changes on A streamed by B one at a time, "
                + "B's event − A's ack: \(summary(latencies)); then a burst of \(streamed) of \(burst.count) in order")
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) events differ from the acknowledged changes: \(mismatches.prefix(3))")
        #expect(latencies.count == Self.streamedChanges)
        #expect(streamed == Self.streamedBurst)
    }

    @Test("a stream on B waits for a session A makes, and ends with sessionDeleted when A deletes and remakes it")
    func sessionLifeAcrossInstances() throws {
        let servers = try instances(2)
        let writer = servers[0].client()
        for round in 0..<10 {
            let id = uniqueSessionID("life")
            let base = "/v1/sessions/\(id)"
            let waiting = HTTPClient(host: servers[1].host, port: servers[1].port, timeoutSeconds: 10)
            defer { waiting.close() }
            try #require(try waiting.openStream(path: "\(base)/events/stream").status == 200)
            try #require(try writer.call("PUT", base).status == 201)
            let created = try #require(try waiting.nextEvent(), "round \(round)")
            #expect(created.event == "change" && created.id == "1", "round \(round): \(created)")
            try writer.call("POST", "\(base)/presentations", json: ["destination": "a"])
            #expect(try waiting.nextEvent()?.id == "2", "round \(round)")

            // Deleted and made again at once (two requests in one write): B may hear of the
            // deletion, or only of the new session; either way the stream ends before its changes.
            let pipelined = try RawConnection(host: servers[0].host, port: servers[0].port)
            pipelined.write(
                "DELETE \(base) HTTP/1.1\r\nHost: a\r\n\r\nPUT \(base) HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
            )
            let answers = pipelined.readResponses(count: 2, seconds: 10).responses.map(\.status)
            try #require(answers == [204, 201], "round \(round)")
            let ended = try #require(try waiting.nextEvent(), "round \(round)")
            #expect(
                ended.data == ["type": "sessionDeleted", "sessionId": .string(id), "reason": "deleted"],
                "round \(round): \(ended)")
            #expect(try waiting.nextEvent() == nil, "round \(round)")
        }
    }

    /// Why a streamed event is not the `change` event of the acknowledged session; nil when it is.
    private func mismatch(_ event: ServerSentEvent, _ acknowledged: JSONValue) -> String? {
        let version = acknowledged["version"]?.intValue ?? -1
        let stack = event.data["stack"]?.arrayValue?.compactMap(\.stringValue)
        guard event.event == "change", event.id == String(version), event.data["version"]?.intValue == version,
            stack == acknowledged.stackIDs
        else {
            return
                "acknowledged version \(version) with stack \(acknowledged.stackIDs), streamed \(event.event ?? "-") id \(event.id ?? "-") version \(event.data["version"]?.intValue ?? -1) stack \(stack ?? [])"
        }
        return nil
    }

    // MARK: Idempotent retries across instances

    @Test("an idempotent present retried on other instances is replayed byte for byte; the session moves once")
    func idempotentRetryAcrossInstances() throws {
        let servers = try instances(3)
        let clients = servers.map { $0.client() }
        let id = uniqueSessionID("retry")
        let base = "/v1/sessions/\(id)"
        try #require(try clients[0].call("PUT", base).status == 201)
        let headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotency-Key": "checkout-1"]
        let body = JSONValue.object(["destination": "checkout", "payload": ["cart": "c-1"]]).serialized()
        let first = try clients[0].send(method: "POST", path: "\(base)/presentations", headers: headers, body: body)
        try #require(first.status == 201, "\(first.text)")
        #expect(first.headers["Idempotent-Replayed"] == nil)
        for (index, client) in clients.enumerated().dropFirst() {
            let retry = try client.send(method: "POST", path: "\(base)/presentations", headers: headers, body: body)
            #expect(retry.status == first.status, "instance \(index)")
            #expect(retry.body == first.body, "instance \(index): \(retry.text)")
            #expect(retry.headers["Idempotent-Replayed"] == "true", "instance \(index)")
            #expect(retry.headers["ETag"] == first.headers["ETag"], "instance \(index)")
            #expect(retry.headers["Location"] == first.headers["Location"], "instance \(index)")
        }
        for (index, client) in clients.enumerated() {
            let session = try client.call("GET", base)
            #expect(session.json["version"]?.intValue == 2, "instance \(index)")
            #expect(session.json["stack"]?.arrayValue?.count == 1, "instance \(index)")
        }
        let types = try clients[2].loggedChanges(of: id).flatMap(\.events).map(\.kind.rawValue)
        #expect(types == ["sessionCreated", "presented"])
    }

    @Test("a deep link retried on another instance is replayed, and the other instance serves its paths")
    func deepLinkAcrossInstances() throws {
        let servers = try instances(2, arguments: ["--catalog", seedsCatalogPath])
        let (a, b) = (servers[0].client(), servers[1].client())
        let base = "/v1/sessions/\(uniqueSessionID("link"))"
        let headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotency-Key": "open-1"]
        let body = JSONValue.object(["url": "myapp://onboarding/downloads/42"]).serialized()
        let first = try a.send(method: "POST", path: "\(base)/links", headers: headers, body: body)
        try #require(first.status == 200, "\(first.text)")
        let retry = try b.send(method: "POST", path: "\(base)/links", headers: headers, body: body)
        #expect(retry.status == 200)
        #expect(retry.body == first.body)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
        let pushed = try b.call("POST", "\(base)/path", json: ["destination": "profile", "payload": ["userId": 5]])
        #expect(pushed.status == 201)
        let seen = try a.call("GET", base)
        #expect(seen.json["version"] == 2, "A reads the push B acknowledged")
        let downloads = seen.json["stack"]?.arrayValue?.last
        #expect(
            downloads?["path"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == [
                "downloadItem", "profile",
            ])
    }

    @Test("the same idempotent present sent to two instances at once makes one change, and both get the same answer")
    func simultaneousRetryOnTwoInstances() throws {
        // Deep enough that every round's present goes on the stack.
        let servers = try instances(2, arguments: ["--max-depth", "64"])
        let setup = servers[0].client()
        let id = uniqueSessionID("both")
        let base = "/v1/sessions/\(id)"
        try #require(try setup.call("PUT", base).status == 201)
        var faults: [String] = []
        var madeBy = [0, 0]
        for round in 0..<Self.simultaneousRounds {
            let path = "\(base)/presentations"
            let headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotency-Key": "both-\(round)"]
            let body = JSONValue.object(["destination": .string("d\(round)")]).serialized()
            let start = StartLine(runners: servers.count)
            let answers = ThreadGroup(count: servers.count) { index -> Result<HTTPClientResponse, HTTPClientError> in
                let client = HTTPClient(host: servers[index].host, port: servers[index].port)
                defer { client.close() }
                // Connected first, so that the two requests leave together.
                _ = try? client.send(path: "/livez")
                start.arriveAndWait()
                return Result { () throws(HTTPClientError) in
                    try client.send(method: "POST", path: path, headers: headers, body: body)
                }
            }.join()
            guard case .success(let onA) = answers[0], case .success(let onB) = answers[1] else {
                faults.append("round \(round): a request failed: \(answers)")
                continue
            }
            let replayed = [onA, onB].map { $0.headers["Idempotent-Replayed"] == "true" }
            if let original = replayed.firstIndex(of: false) { madeBy[original] += 1 }
            let version = JSONResponse(onA).json["session"]?["version"]?.intValue
            if onA.status != 201 || onB.status != 201 || onA.body != onB.body || replayed.filter({ $0 }).count != 1
                || version != round + 2
            {
                faults.append(
                    "round \(round): A answered \(onA.status) (replayed \(replayed[0])) \(onA.text.prefix(200)), B \(onB.status) (replayed \(replayed[1])) \(onB.text.prefix(200)); version \(version ?? -1), expected \(round + 2)"
                )
            }
        }
        let final = try servers[1].client().call("GET", base)
        let destinations = final.json["stack"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } ?? []
        print(
            "MultiInstanceTests.simultaneousRetryOnTwoInstances: \(Self.simultaneousRounds) keys sent to A and B at once; "
                + "the change made by A \(madeBy[0])×, by B \(madeBy[1])×, the other replayed; \(faults.count) faults")
        #expect(faults.isEmpty, "\(faults.count) rounds: \(faults.prefix(3))")
        #expect(final.json["version"]?.intValue == Self.simultaneousRounds + 1)
        #expect(destinations == (0..<Self.simultaneousRounds).map { "d\($0)" })
    }

    // MARK: kill -9 of one instance

    @Test(
        "kill -9 of one instance under load: its writers retry on the other with the same keys; nothing lost or doubled"
    )
    func killOneInstanceUnderLoad() throws {
        let servers = try instances(2)
        let (a, b) = (servers[0], servers[1])
        let seed = SeededGenerator.seed()
        var random = SeededGenerator(seed: seed)
        print("MultiInstanceTests.killOneInstanceUnderLoad: seed \(seed), \(Self.killTrials) trials")
        let started = ContinuousClock.now
        var totals = KillReport()
        for trial in 0..<Self.killTrials {
            let report = try killTrial(
                trial, a: a, b: b, seed: random.next(), load: Int.random(in: Self.killLoad, using: &random))
            for fault in report.faults {
                Issue.record("trial \(trial) (seed \(seed)): \(fault)")
            }
            totals.add(report)
            try a.start()
        }
        // Nothing else is stored: every session was written by a writer, at its last acknowledged version.
        let listed = try listSessions(through: b.client())
        for (id, version) in listed where totals.lastVersions[id] != version {
            totals.phantoms += 1
            Issue.record(
                "session \(id) is stored at version \(version), its writers were acknowledged \(totals.lastVersions[id].map { "up to version \($0)" } ?? "nothing")"
            )
        }
        let elapsed = milliseconds(from: started, to: .now) / 1000
        print(
            "MultiInstanceTests.killOneInstanceUnderLoad: \(Self.killTrials) trials in \(String(format: "%.1f", elapsed)) s, "
                + "\(totals.acknowledged) acknowledged changes checked, \(totals.losses) lost, \(totals.doubled) doubled, "
                + "\(totals.phantoms) phantoms; \(totals.retriedOnB) requests failed on A and were retried on B "
                + "(\(totals.replayedOnB) of them replayed: A had committed them), \(listed.count) sessions stored, seed \(seed)"
        )
        #expect(totals.losses == 0, "acknowledged changes were lost")
        #expect(totals.doubled == 0, "keyed changes were applied more than once")
        #expect(totals.phantoms == 0, "changes appeared that no request explains")
        #expect(listed.count == totals.lastVersions.count)
        #expect(totals.retriedOnB == Self.killTrials * Self.killWritersOnA, "every writer of A retries once on B")
        #expect(totals.acknowledged >= Self.killTrials * Self.killLoad.lowerBound, "too little load to mean anything")
    }

    private func killTrial(_ trial: Int, a: ServerProcess, b: ServerProcess, seed: UInt64, load: Int) throws
        -> KillReport
    {
        let killed = StopFlag()
        let stopped = StopFlag()
        let progress = KillProgress()
        let endpoints = (a: (host: a.host, port: a.port), b: (host: b.host, port: b.port))
        let group = ThreadGroup(count: Self.killWriters) { index in
            let writesOnA = index % 2 == 0
            let primary = writesOnA ? endpoints.a : endpoints.b
            var writer = KillWriter(
                trial: trial, index: index, writesOnA: writesOnA,
                primary: HTTPClient(host: primary.host, port: primary.port),
                fallback: HTTPClient(host: endpoints.b.host, port: endpoints.b.port), seed: seed &+ UInt64(index),
                sessions: (0..<4).map { "k\(trial)-w\(index)-s\($0)" })
            writer.run(killed: killed, stopped: stopped, progress: progress)
            progress.writerEnded()
            return writer.log
        }
        var report = KillReport()
        let loaded = waitUntil(timeout: .seconds(20)) {
            progress.acknowledged >= load || progress.endedWriters == Self.killWriters
        }
        if !loaded || progress.acknowledged < load {
            report.faults.append("only \(progress.acknowledged) of \(load) changes were acknowledged before the kill")
        }
        let acknowledgedAtKill = progress.acknowledged
        killed.set()
        a.stop(signal: SIGKILL)
        // The load goes on, on B, until each writer of A had its failed request answered there, and some more.
        let resumed = waitUntil(timeout: .seconds(20)) {
            (progress.movedToB == Self.killWritersOnA
                && progress.acknowledged >= acknowledgedAtKill + Self.loadAfterKill)
                || progress.endedWriters == Self.killWriters
        }
        if !resumed {
            report.faults.append(
                "after the kill \(progress.movedToB) of \(Self.killWritersOnA) writers of A got their retry answered on B"
            )
        }
        stopped.set()
        let logs = group.join()
        for log in logs {
            report.faults += log.faults
            report.retriedOnB += log.retriedOnB
            report.replayedOnB += log.replayedOnB
        }
        let reader = b.client()
        defer { reader.close() }
        for log in logs {
            for session in log.touchedSessions {
                try check(
                    session: session, acks: log.acks.filter { $0.session == session }, through: reader, into: &report)
            }
        }
        return report
    }

    /// Reads one session back through B and compares it, and its event log, with what its writer was told.
    private func check(
        session id: String, acks: [KillWriter.Ack], through reader: HTTPClient, into report: inout KillReport
    ) throws {
        report.acknowledged += acks.count
        let response = try reader.call("GET", "/v1/sessions/\(id)")
        guard response.status == 200, let stored = response.json["version"]?.intValue else {
            if response.status == 404, acks.isEmpty { return }
            report.losses += acks.count
            report.faults.append(
                "\(id): GET on B answered \(response.status); \(acks.count) acknowledged changes are gone")
            return
        }
        report.lastVersions[id] = stored
        // One writer, one request at a time, each answered: its acknowledged versions are 1…N.
        let versions = acks.map(\.version)
        if versions != Array(1...max(1, versions.count)) {
            report.faults.append("\(id): acknowledged versions \(versions), expected 1...\(versions.count)")
        }
        let last = acks.last
        if stored < versions.count {
            report.losses += versions.count - stored
            report.faults.append("\(id): stored version \(stored), but \(versions.count) changes were acknowledged")
        } else if stored > versions.count {
            report.doubled += stored - versions.count
            report.faults.append(
                "\(id): stored version \(stored) after \(versions.count) acknowledged changes; the last was \(last.map { "\($0.operation) (\($0.key))" } ?? "-")"
            )
        } else if response.json.stackIDs != last?.stack ?? [] {
            report.losses += 1
            report.faults.append("\(id): stored stack \(response.json.stackIDs), acknowledged \(last?.stack ?? [])")
        }

        // The log: every version once, each acknowledged state, and each keyed present exactly once.
        let replay = EventReplay(try reader.loggedChanges(of: id))
        for fault in replay.faults {
            report.faults.append("\(id): event log: \(fault)")
        }
        if replay.versions != Array(1...stored) {
            report.faults.append("\(id): event log versions \(replay.versions), expected 1...\(stored)")
        }
        var presented: [String: Int] = [:]
        for event in replay.changes.flatMap(\.events) where event.kind == .presented {
            presented[event.presentation?.destination ?? "?", default: 0] += 1
        }
        for ack in acks {
            if let destination = ack.destination {
                switch presented.removeValue(forKey: destination) ?? 0 {
                case 1: break
                case 0:
                    report.losses += 1
                    report.faults.append("\(id): \(ack.operation) (\(ack.key)) is not in the event log")
                case let count:
                    report.doubled += count - 1
                    report.faults.append("\(id): \(ack.operation) (\(ack.key)) is in the event log \(count) times")
                }
            }
            if replay.session(after: ack.version)?.stackIDs != ack.stack {
                report.losses += 1
                report.faults.append(
                    "\(id): the log replays version \(ack.version) to \(replay.session(after: ack.version)?.stackIDs ?? []), acknowledged \(ack.stack)"
                )
            }
        }
        for (destination, count) in presented {
            report.phantoms += count
            report.faults.append("\(id): \(destination) presented \(count)× in the event log, never acknowledged")
        }
    }

    /// Every stored session's id and version, through the listing (following `next`).
    private func listSessions(through client: HTTPClient) throws -> [String: Int] {
        var sessions: [String: Int] = [:]
        var path: String? = "/v1/sessions?limit=100"
        while let next = path {
            let page = try client.call("GET", next)
            try #require(page.status == 200, "GET \(next): \(page.excerpt)")
            for session in page.json["sessions"]?.arrayValue ?? [] {
                sessions[session["id"]?.stringValue ?? "?"] = session["version"]?.intValue ?? -1
            }
            path = page.json["next"]?.stringValue
        }
        return sessions
    }

    // MARK: Failover to a synchronous standby

    @Test(
        "the primary killed under writes and its synchronous standby promoted: nothing acknowledged lost or doubled, writes resume, a stream goes on",
        .enabled(
            if: PostgresServer.standbyUnavailableReason == nil,
            Comment(rawValue: PostgresServer.standbyUnavailableReason ?? "")))
    func failoverToSynchronousStandby() throws {
        let postgres = try PostgresServer(replicated: true)
        defer { postgres.stop() }
        try postgres.startSynchronousStandby()
        let database = try postgres.createDatabase("failover")
        // --durability full: a commit is acknowledged once the standby has it too.
        let servers = try (0..<2).map { _ in
            try ServerProcess(
                arguments: ["--durability", "full"], databaseURL: postgres.failoverConnectionString(database: database))
        }
        let endpoints = servers.map { (host: $0.host, port: $0.port) }
        let writers = 4
        let acknowledged = Atomic<Int>(0)
        let stopped = StopFlag()
        // Writer i, on instance i % 2, on a session of its own: present and dismiss in turn, each
        // with a key of its own, retried with that key until acknowledged.
        let group = ThreadGroup(count: writers) { index -> FailoverLog in
            let client = HTTPClient(host: endpoints[index % 2].host, port: endpoints[index % 2].port)
            defer { client.close() }
            var log = FailoverLog(session: "failover-w\(index)")
            var change = 0
            while !stopped.isSet {
                let base = "/v1/sessions/\(log.session)"
                let (path, body): (String, JSONValue) =
                    change % 2 == 0
                    ? ("\(base)/presentations", ["destination": .string("d\(change)")]) : ("\(base)/dismiss", [:])
                let key = "\(log.session)-\(change)"
                var answer: JSONResponse?
                let deadline = ContinuousClock.now + .seconds(60)
                while answer == nil && ContinuousClock.now < deadline {
                    if let response = try? client.call("POST", path, json: body, headers: ["Idempotency-Key": key]),
                        (200..<300).contains(response.status)
                    {
                        answer = response
                    } else {
                        log.failures += 1
                        client.close()
                        usleep(20_000)  // a client's pause before it tries again
                    }
                }
                guard let version = answer?.json["session"]?["version"]?.intValue else {
                    log.faults.append("\(key) was not acknowledged within 60 s")
                    break
                }
                log.acks.append((version: version, at: .now))
                acknowledged.add(1, ordering: .relaxed)
                change += 1
            }
            return log
        }
        func acks() -> Int { acknowledged.load(ordering: .relaxed) }
        #expect(waitUntil(timeout: .seconds(30)) { acks() >= 200 }, "only \(acks()) changes before the kill")
        // A stream on B of writer 0's session (on A), open through the failover.
        let watched = "failover-w0"
        let watcher = HTTPClient(host: servers[1].host, port: servers[1].port, timeoutSeconds: 30)
        defer { watcher.close() }
        try #require(try watcher.openStream(path: "/v1/sessions/\(watched)/events/stream").status == 200)

        let atKill = acks()
        let killed = ContinuousClock.now
        try postgres.killPrimary()
        try postgres.promoteStandby()
        let promoted = ContinuousClock.now
        #expect(waitUntil(timeout: .seconds(60)) { acks() >= atKill + 200 }, "only \(acks() - atKill) changes after")
        stopped.set()
        let logs = group.join()

        var faults = logs.flatMap(\.faults)
        var resumed: [String] = []
        for log in logs {
            // Every version of the session acknowledged exactly once: none lost, none doubled, no gap.
            let session = try servers[1].client().call("GET", "/v1/sessions/\(log.session)")
            let final = session.json["version"]?.intValue ?? -1
            let versions = log.acks.map(\.version)
            if versions != Array(1...max(final, 1)) {
                let first = zip(versions, 1...).first { $0 != $1 }
                faults.append(
                    "\(log.session) is at version \(final) after \(versions.count) acknowledged changes; "
                        + "the first out of place: \(first.map { "version \($0.0) acknowledged as change \($0.1)" } ?? "-")"
                )
            }
            let logged = try servers[0].client().loggedChanges(of: log.session).map { Int($0.version) }
            if logged != Array(1...max(final, 1)) { faults.append("\(log.session)'s event log is not 1…\(final)") }
            if let first = log.acks.first(where: { $0.at > promoted }) {
                resumed.append(
                    String(
                        format: "%.0f ms (%.0f ms after the kill)", milliseconds(from: promoted, to: first.at),
                        milliseconds(from: killed, to: first.at)))
            } else {
                faults.append("\(log.session) had nothing acknowledged after the promotion")
            }
        }
        // The stream went on through the failover: every version, in order.
        let final = logs[0].acks.last?.version ?? 0
        var streamed: [Int] = []
        while streamed.last ?? 0 < final, let event = try watcher.nextEvent(timeout: 10) {
            if event.event == "change", let id = event.id.flatMap({ Int($0) }) { streamed.append(id) }
        }
        if let first = streamed.first, streamed != Array(first...final) {
            faults.append("the stream sent \(streamed.count) changes, not \(first)…\(final) in order")
        }
        for fault in faults { Issue.record(Comment(rawValue: fault)) }
        #expect(streamed.last == final)
        print(
            "MultiInstanceTests.failoverToSynchronousStandby: \(acks()) acknowledged changes (\(atKill) before the kill), "
                + "\(logs.map(\.failures).reduce(0, +)) requests failed and were retried with their keys; "
                + "first acknowledgement after the promotion, per writer: \(resumed.joined(separator: ", ")); "
                + "the stream sent \(streamed.count) changes through the failover")
    }

    // MARK: PostgreSQL restarted

    @Test(
        "PostgreSQL restarted under running instances: 503 with Retry-After while it is down, then writes and wake-ups")
    func databaseRestart() throws {
        let postgres = try PostgresServer()
        defer { postgres.stop() }
        let servers = try instances(2, on: postgres)
        let (a, b) = (servers[0].client(), servers[1].client())
        let base = "/v1/sessions/\(uniqueSessionID("outage"))"
        try #require(try a.call("POST", "\(base)/presentations", json: ["destination": "before"]).status == 201)
        #expect(try b.call("GET", base).json["version"]?.intValue == 1)
        // A stream on B, open through the outage.
        let watcher = HTTPClient(host: servers[1].host, port: servers[1].port, timeoutSeconds: 10)
        defer { watcher.close() }
        try #require(try watcher.openStream(path: "\(base)/events/stream").status == 200)
        #expect(try watcher.nextEvent()?.id == "1")

        try postgres.stopServer()
        for (name, client) in [("A", a), ("B", b)] {
            let write = try client.call(
                "POST", "\(base)/presentations", json: ["destination": .string("during-\(name)")],
                headers: ["Idempotency-Key": "during-\(name)"])
            #expect(write.status == 503, "a write on \(name): \(write.excerpt)")
            #expect(write.json["type"]?.stringValue?.hasSuffix("storage-unavailable") == true, "\(write.excerpt)")
            #expect(write.headers["Retry-After"] != nil, "a write on \(name) without Retry-After")
            let read = try client.call("GET", base)
            #expect(read.status == 503, "a read on \(name): \(read.excerpt)")
            #expect(read.json["type"]?.stringValue?.hasSuffix("storage-unavailable") == true, "\(read.excerpt)")
            let ready = try client.call("GET", "/readyz")
            #expect(ready.status == 503, "/readyz on \(name): \(ready.excerpt)")
            // Which dependency failed and how, but not the database's host, port or name.
            #expect(ready.json["reason"] == "database: unavailable", "/readyz on \(name): \(ready.excerpt)")
            #expect(try client.call("GET", "/livez").status == 200)
        }

        try postgres.startServer()
        let restarted = ContinuousClock.now
        // The writes refused during the outage, retried with their keys until they go through, once each.
        var backAfter: [String] = []
        for (name, client) in [("A", a), ("B", b)] {
            var answer: JSONResponse?
            let back = try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
                let write = try client.call(
                    "POST", "\(base)/presentations", json: ["destination": .string("during-\(name)")],
                    headers: ["Idempotency-Key": "during-\(name)"])
                guard write.status != 503 else { return false }
                answer = write
                return true
            }
            #expect(back, "writes on \(name) still answered 503 30 s after PostgreSQL came back")
            #expect(answer?.status == 201, "the write on \(name) after the restart: \(answer?.excerpt ?? "-")")
            backAfter.append("\(name) \(String(format: "%.0f", milliseconds(from: restarted, to: .now))) ms")
        }
        let ready = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            try a.call("GET", "/readyz").status == 200 && b.call("GET", "/readyz").status == 200
        }
        #expect(ready, "/readyz did not come back to 200 on both instances")
        let session = try b.call("GET", base)
        #expect(session.json["version"]?.intValue == 3)
        #expect(
            session.json["stack"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == [
                "before", "during-A", "during-B",
            ])

        // Each listener subscribed again: long polls wake for the other instance's changes, both ways.
        var version = session.json["version"]?.intValue ?? 3
        var latencies: [Double] = []
        for round in 0..<10 {
            let (watched, writer, gauge) = round % 2 == 0 ? (servers[1], a, b) : (servers[0], b, a)
            let wake = try wakeUp(on: watched, gauge: gauge, base: base, after: version) {
                try alternatingChange(round + 1, on: writer, base: base)
            }
            guard wake.check(round: round) else { break }
            latencies.append(wake.latency)
            version = wake.acknowledged.json["session"]?["version"]?.intValue ?? -1
        }
        // The stream open through the outage went on: every change since, in order.
        var streamed: [String] = []
        while streamed.count < version - 1, let event = try watcher.nextEvent(timeout: 10) {
            streamed.append(event.event == "change" ? event.id ?? "?" : "\(event.event ?? "-") \(event.id ?? "-")")
        }
        #expect(streamed == (2...version).map(String.init), "the stream open through the outage sent \(streamed)")
        print(
            "MultiInstanceTests.databaseRestart: writes back after the restart: \(backAfter.joined(separator: ", ")); "
                + "\(latencies.count) long polls woken across instances afterwards, answer − ack: \(summary(latencies)) "
                + "(the first \(latencies.first.map { String(format: "%.2f ms", $0) } ?? "-")); "
                + "the stream open through the outage sent \(streamed.count) of \(version - 1) changes")
        #expect(latencies.count == 10)
    }

    @Test("PostgreSQL back: /readyz is 200 again on every instance without waiting for a write to get through")
    func readinessAfterDatabaseRestart() throws {
        let postgres = try PostgresServer()
        defer { postgres.stop() }
        let servers = try instances(2, on: postgres)
        let (a, b) = (servers[0].client(), servers[1].client())
        let base = "/v1/sessions/\(uniqueSessionID("ready"))"
        try #require(try a.call("PUT", base).status == 201)

        // Writers on A while PostgreSQL stops: some commits fail half-way, not only the reads before them.
        let stopped = StopFlag()
        let (acknowledged, refused) = (Tally(), Tally())
        let (host, port) = (servers[0].host, servers[0].port)
        let writers = ThreadGroup(count: 2) { index in
            let client = HTTPClient(host: host, port: port)
            defer { client.close() }
            var round = 0
            while !stopped.isSet {
                round += 1
                let path = round % 2 == 0 ? "\(base)-\(index)/dismiss" : "\(base)-\(index)/presentations"
                let body: JSONValue = round % 2 == 0 ? [:] : ["destination": .string("w\(index)n\(round)")]
                guard let response = try? client.call("POST", path, json: body) else { continue }
                (response.status == 503 ? refused : acknowledged).add()
            }
        }
        #expect(waitUntil(timeout: .seconds(10)) { acknowledged.count >= 50 })
        try postgres.stopServer()
        #expect(waitUntil(timeout: .seconds(10)) { refused.count >= 20 })
        stopped.set()
        _ = writers.join()
        for client in [a, b] {
            #expect(try client.call("GET", "/readyz").status == 503)
        }

        try postgres.startServer()
        // A load balancer sends traffic only to ready instances: readiness must come back by itself.
        var readiness: [String] = []
        for (name, client) in [("A", a), ("B", b)] {
            var last: JSONResponse?
            let ready = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
                last = try client.call("GET", "/readyz")
                return last?.status == 200
            }
            readiness.append("\(name) \(ready ? "ready" : "still \(last?.excerpt ?? "-")")")
            #expect(
                ready,
                "/readyz on \(name) 10 s after PostgreSQL came back, with no write since: \(last?.excerpt ?? "-")")
        }
        // What makes it ready again: a write that gets through.
        let write = try a.call("POST", "\(base)/presentations", json: ["destination": "after"])
        let readyAfterWrite = try a.call("GET", "/readyz").status
        print(
            "MultiInstanceTests.readinessAfterDatabaseRestart: \(acknowledged.count) writes on A acknowledged, "
                + "\(refused.count) refused as PostgreSQL stopped; 10 s after the restart without writes: "
                + "\(readiness.joined(separator: "; ")); then a write on A answered \(write.status) and A's /readyz \(readyAfterWrite)"
        )
    }

    // MARK: Helpers

    /// `count` instances on a new database of `postgres` (by default the shared server), started
    /// one after the other.
    private func instances(_ count: Int, arguments: [String] = [], on postgres: PostgresServer? = nil) throws
        -> [ServerProcess]
    {
        let postgres = try postgres ?? PostgresServer.shared()
        let url = postgres.url(database: try postgres.createDatabase("multi"))
        return try (0..<count).map { _ in try ServerProcess(arguments: arguments, databaseURL: url) }
    }

    /// Round `round`'s change: a present on even rounds, a dismiss of the top on odd ones.
    private func alternatingChange(_ round: Int, on client: HTTPClient, base: String) throws -> JSONResponse {
        round % 2 == 0
            ? try client.call("POST", "\(base)/presentations", json: ["destination": .string("d\(round)")])
            : try client.call("POST", "\(base)/dismiss", json: [:])
    }

    /// Holds a long poll (`If-None-Match` of `version`, `Prefer: wait=20`) on `watched`, and once
    /// its `/metrics` (read through `gauge`) count it as held, makes `change` on another instance.
    private func wakeUp(
        on watched: ServerProcess, gauge: HTTPClient, base: String, after version: Int,
        by change: () throws -> JSONResponse
    ) throws -> WakeUp {
        func waiting() throws -> Double? {
            metric(try gauge.send(method: "GET", path: "/metrics").text, "modalstack_long_polls_waiting")
        }
        // The previous poll has gone, so that the count is this one's.
        let idle = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(2)) { try waiting() == 0 }
        let (host, port) = (watched.host, watched.port)
        let poll = ThreadGroup(count: 1) { _ -> PollAnswer in
            let client = HTTPClient(host: host, port: port, timeoutSeconds: 30)
            defer { client.close() }
            let headers: HTTPHeaders = ["If-None-Match": "\"\(version)\"", "Prefer": "wait=20"]
            do {
                return PollAnswer(response: try client.call("GET", base, headers: headers), failure: nil, at: .now)
            } catch {
                return PollAnswer(response: nil, failure: "\(error)", at: .now)
            }
        }
        let held = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(2)) { try waiting() == 1 }
        let sent = ContinuousClock.now
        let acknowledged = try change()
        let acknowledgedAt = ContinuousClock.now
        let answer = poll.join()[0]
        return WakeUp(
            held: idle && held, poll: answer, acknowledged: acknowledged,
            latency: milliseconds(from: acknowledgedAt, to: answer.at),
            writeRoundTrip: milliseconds(from: sent, to: acknowledgedAt))
    }
}

// MARK: Long polls

/// A long poll's answer and when it arrived.
private struct PollAnswer: Sendable {
    let response: JSONResponse?
    let failure: String?
    let at: ContinuousClock.Instant
}

/// One long poll woken by a change on another instance.
private struct WakeUp {
    /// Whether the poll was counted as held (and the one before it as gone) before the change.
    let held: Bool
    let poll: PollAnswer
    let acknowledged: JSONResponse
    /// Milliseconds from the change's answer to the poll's.
    let latency: Double
    let writeRoundTrip: Double

    /// Records why the poll did not answer the acknowledged change (with 200, not the 304 of a
    /// wait that ran out); true when it did.
    func check(round: Int) -> Bool {
        let session = acknowledged.json["session"]
        guard held, let response = poll.response, response.status == 200, session != nil,
            response.json == session
        else {
            Issue.record(
                "round \(round): held \(held); the change answered \(acknowledged.excerpt); the long poll \(poll.response?.excerpt ?? poll.failure ?? "-")"
            )
            return false
        }
        return true
    }
}

// MARK: Writers on one session

/// One client of ``MultiInstanceTests/gapFreeVersions()``: presents and dismisses on the shared
/// session through its instance, half of them with `If-Match` of the latest version it heard of.
private struct ContendingWriter {
    struct Ack: Sendable, AcknowledgedChange {
        let version: Int
        let stack: [String]
        let queue: [String]
        let instance: Int
        let operation: String
    }

    struct Log: Sendable {
        var acks: [Ack] = []
        var statuses: [Int: Int] = [:]
        var faults: [String] = []
    }

    /// The refusals other writers' changes may cause; anything else is a fault.
    static let expectedRefusals: [Int: Set<String>] = [
        409: ["queue-full", "nothing-to-dismiss"],
        412: ["precondition-failed"],
    ]

    let index: Int
    let instance: Int
    let sessionID: String
    let client: HTTPClient
    var random: SeededGenerator
    var log = Log()
    private var version = 1
    private var counter = 0

    init(index: Int, instance: Int, sessionID: String, client: HTTPClient, seed: UInt64) {
        self.index = index
        self.instance = instance
        self.sessionID = sessionID
        self.client = client
        random = SeededGenerator(seed: seed)
    }

    mutating func run(requests: Int) {
        defer { client.close() }
        let base = "/v1/sessions/\(sessionID)"
        for _ in 0..<requests {
            counter += 1
            let ifMatch = Bool.random(using: &random)
            var headers = HTTPHeaders()
            if ifMatch { headers.set("If-Match", "\"\(version)\"") }
            let presents = Int.random(in: 0..<100, using: &random) < 55
            let destination = "w\(index)n\(counter)"
            let operation =
                (ifMatch ? "[If-Match \(version)] " : "") + (presents ? "present \(destination)" : "dismiss the top")
            let response: JSONResponse
            do {
                response =
                    presents
                    ? try client.call(
                        "POST", "\(base)/presentations", json: ["destination": .string(destination)], headers: headers)
                    : try client.call("POST", "\(base)/dismiss", json: [:], headers: headers)
            } catch {
                log.faults.append("writer \(index) on instance \(instance): \(operation) failed: \(error)")
                return
            }
            log.statuses[response.status, default: 0] += 1
            if (200...299).contains(response.status) {
                guard let session = response.json["session"], let newVersion = session["version"]?.intValue else {
                    log.faults.append("writer \(index): \(operation) answered \(response.status) without a session")
                    continue
                }
                log.acks.append(
                    Ack(
                        version: newVersion, stack: session.stackIDs, queue: session.queueIDs, instance: instance,
                        operation: operation))
                version = newVersion
            } else if let slug = response.json["type"]?.stringValue.map({ String($0.dropFirst("/problems/".count)) }),
                Self.expectedRefusals[response.status]?.contains(slug) == true
            {
                if response.status == 412, let current = response.json["currentVersion"]?.intValue {
                    version = current
                }
            } else {
                log.faults.append("writer \(index) on instance \(instance): \(operation) answered \(response.excerpt)")
            }
        }
    }
}

/// Lets threads start something together: each waits until all have arrived.
private final class StartLine: Sendable {
    private let runners: Int
    private let arrived = Atomic<Int>(0)

    init(runners: Int) { self.runners = runners }

    func arriveAndWait() {
        arrived.add(1, ordering: .acquiringAndReleasing)
        while arrived.load(ordering: .acquiring) < runners { sched_yield() }
    }
}

/// A count threads can add to and read.
private final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    var count: Int { value.load(ordering: .acquiring) }
    func add() { value.add(1, ordering: .releasing) }
}

// MARK: kill -9

/// What kill trials found.
private struct KillReport {
    var acknowledged = 0
    var losses = 0
    var doubled = 0
    var phantoms = 0
    var retriedOnB = 0
    var replayedOnB = 0
    /// Each checked session's stored version.
    var lastVersions: [String: Int] = [:]
    var faults: [String] = []

    mutating func add(_ other: KillReport) {
        acknowledged += other.acknowledged
        losses += other.losses
        doubled += other.doubled
        phantoms += other.phantoms
        retriedOnB += other.retriedOnB
        replayedOnB += other.replayedOnB
        lastVersions.merge(other.lastVersions) { $1 }
    }
}

/// What a failover writer had acknowledged, in order, and when.
private struct FailoverLog: Sendable {
    let session: String
    var acks: [(version: Int, at: ContinuousClock.Instant)] = []
    var failures = 0
    var faults: [String] = []
}

/// How far a trial's writers are, read by the trial while they run.
private final class KillProgress: Sendable {
    private let acks = Atomic<Int>(0)
    private let moved = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)

    var acknowledged: Int { acks.load(ordering: .acquiring) }
    /// Writers of A whose failed request B has answered.
    var movedToB: Int { moved.load(ordering: .acquiring) }
    var endedWriters: Int { ended.load(ordering: .acquiring) }

    func acknowledge() { acks.add(1, ordering: .releasing) }
    func writerMoved() { moved.add(1, ordering: .releasing) }
    func writerEnded() { ended.add(1, ordering: .releasing) }
}

/// One writer of a kill trial: its own sessions, one request at a time, each with a new
/// `Idempotency-Key`, on its instance; once a request to A fails, that request again on B, with
/// the same key, until B answers, and the rest on B.
private struct KillWriter {
    struct Ack: Sendable {
        let session: String
        let version: Int
        let stack: [String]
        let key: String
        let operation: String
        /// The destination of a present (unique to it); nil for a dismiss.
        let destination: String?
    }

    struct Log: Sendable {
        var acks: [Ack] = []
        var touchedSessions: [String] = []
        var retriedOnB = 0
        /// Retries that B answered as replays: A had committed them before it died.
        var replayedOnB = 0
        var faults: [String] = []
    }

    private struct Request {
        let path: String
        let body: JSONValue
        let key: String
        let operation: String
        let destination: String?
    }

    /// Below the default depth (8), so that a present never queues.
    static let maxDepth = 6

    let trial: Int
    let index: Int
    private var onA: Bool
    private var target: HTTPClient
    private let fallback: HTTPClient
    private var random: SeededGenerator
    private let sessions: [String]
    var log = Log()
    private var stacks: [String: [String]] = [:]
    private var counter = 0

    init(
        trial: Int, index: Int, writesOnA: Bool, primary: HTTPClient, fallback: HTTPClient, seed: UInt64,
        sessions: [String]
    ) {
        self.trial = trial
        self.index = index
        onA = writesOnA
        target = primary
        self.fallback = fallback
        random = SeededGenerator(seed: seed)
        self.sessions = sessions
    }

    mutating func run(killed: StopFlag, stopped: StopFlag, progress: KillProgress) {
        defer {
            target.close()
            fallback.close()
        }
        while !stopped.isSet {
            let session = sessions.randomElement(using: &random)!
            let stack = stacks[session] ?? []
            counter += 1
            let key = "k\(trial)w\(index)n\(counter)"
            let request: Request
            if stack.isEmpty || (stack.count < Self.maxDepth && Int.random(in: 0..<100, using: &random) < 55) {
                let destination = "w\(index)n\(counter)"
                request = Request(
                    path: "/v1/sessions/\(session)/presentations", body: ["destination": .string(destination)],
                    key: key, operation: "present \(destination)", destination: destination)
            } else {
                request = Request(
                    path: "/v1/sessions/\(session)/dismiss", body: [:], key: key, operation: "dismiss the top",
                    destination: nil)
            }
            if !log.touchedSessions.contains(session) { log.touchedSessions.append(session) }
            guard let response = send(request, killed: killed, progress: progress) else { return }
            guard (200...299).contains(response.status), let answered = response.json["session"],
                let version = answered["version"]?.intValue
            else {
                log.faults.append("writer \(index): \(request.operation) on \(session) answered \(response.excerpt)")
                return
            }
            log.acks.append(
                Ack(
                    session: session, version: version, stack: answered.stackIDs, key: key,
                    operation: request.operation, destination: request.destination))
            stacks[session] = answered.stackIDs
            progress.acknowledge()
        }
    }

    /// The answer to `request`, from this writer's instance, or from B after A failed; nil when
    /// none came (logged).
    private mutating func send(_ request: Request, killed: StopFlag, progress: KillProgress) -> JSONResponse? {
        let headers: HTTPHeaders = ["Idempotency-Key": request.key]
        do {
            return try target.call("POST", request.path, json: request.body, headers: headers)
        } catch {
            guard onA else {
                log.faults.append("writer \(index): \(request.operation) failed on B: \(error)")
                return nil
            }
            if !killed.isSet {
                log.faults.append("writer \(index): \(request.operation) failed on A before the kill: \(error)")
            }
        }
        // A is gone: this request again on B, then the rest there.
        onA = false
        target.close()
        target = fallback
        log.retriedOnB += 1
        var answer: JSONResponse?
        var lastFailure = "nothing"
        let client = fallback
        let answered = waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            do {
                let response = try client.call("POST", request.path, json: request.body, headers: headers)
                guard response.status < 500 else {
                    lastFailure = response.excerpt
                    return false
                }
                answer = response
                return true
            } catch {
                lastFailure = "\(error)"
                return false
            }
        }
        progress.writerMoved()
        guard answered, let answer else {
            log.faults.append(
                "writer \(index): \(request.operation) retried on B for 10 s, the last answer: \(lastFailure)")
            return nil
        }
        if answer.headers["Idempotent-Replayed"] == "true" { log.replayedOnB += 1 }
        return answer
    }
}

// MARK: Figures

/// Milliseconds from `start` to `end`, negative when `end` came first.
private func milliseconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Double {
    func value(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) * 1000 + Double(parts.attoseconds) / 1e15
    }
    return start <= end ? value(end - start) : -value(start - end)
}

/// The median, the 99th percentile (nearest rank) and the largest of `samples` (milliseconds).
private func summary(_ samples: [Double]) -> String {
    guard !samples.isEmpty else { return "no samples" }
    let sorted = samples.sorted()
    func percentile(_ fraction: Double) -> Double {
        sorted[max(0, min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
    }
    return String(
        format: "p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)", percentile(0.5), percentile(0.99),
        sorted[sorted.count - 1], sorted.count)
}

extension JSONResponse {
    /// The status and the start of the body, for a message.
    fileprivate var excerpt: String { "\(status) \(String(decoding: raw.prefix(300), as: UTF8.self))" }
}
