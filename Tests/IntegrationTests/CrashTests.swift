import Foundation
import Glibc
import ModalStackCore
import ModalStackTestSupport
import Synchronization
import Testing

/// kill -9 under load: concurrent writers record each change only once its 2xx arrived; the server
/// is killed once a random number of changes were acknowledged, while the writers go on, restarted
/// on the same database, and every session is read back.
/// Every acknowledged change must be there; the only other changes allowed are the requests that
/// were in flight at the kill (at most one per writer, since each writer waits for its answer).
///
/// Replay a run with `MODALSTACK_SEED=<seed>` (printed at the start); `MODALSTACK_SOAK=1` runs 200
/// trials per durability mode instead of 20.
@Suite(
    "kill -9 under load", .enabled(if: ServerProcess.isLocal, "kills and restarts the server itself"),
    .enabled(if: !ServerProcess.usesPostgres, "reads the SQLite file (PostgreSQL: MultiInstanceTests)"),
    .enabled(if: SQLiteShell.isAvailable, "needs the sqlite3 shell or python3 for PRAGMA integrity_check"), .serialized)
struct CrashTests {
    static let trials = Soak.isOn ? 200 : 20
    static let writers = 4
    static let sessionsPerWriter = 8
    /// The load before the kill, in changes acknowledged (by all writers together): drawn from this
    /// range for each trial.
    static let loadWrites = Soak.isOn ? 50...2000 : 50...800
    /// Kept below the default depth (8), so that a present never queues and its effect is known.
    static let maxStackDepth = 6

    @Test("every acknowledged change survives kill -9 under concurrent load", arguments: ["normal", "full"])
    func killUnderLoad(durability: String) throws {
        let seed = SeededGenerator.seed()
        print("CrashTests[\(durability)]: seed \(seed) (replay with MODALSTACK_SEED=\(seed)), \(Self.trials) trials")
        var random = SeededGenerator(seed: seed)
        var totals = TrialReport()
        for trial in 0..<Self.trials {
            let report = try runTrial(
                durability: durability, seed: random.next(), load: Int.random(in: Self.loadWrites, using: &random))
            for fault in report.faults {
                Issue.record("trial \(trial) (durability \(durability), seed \(seed)): \(fault)")
            }
            totals.add(report)
        }
        print(
            "CrashTests[\(durability)]: \(Self.trials) trials, \(totals.acknowledged) acknowledged writes checked, "
                + "\(totals.losses) losses, \(totals.inFlight) in flight at the kill (\(totals.inFlightApplied) applied), "
                + "\(totals.phantoms) unexplained changes, integrity_check ok in \(totals.integrityOK)/\(Self.trials), seed \(seed)"
        )
        #expect(totals.losses == 0, "acknowledged changes were lost")
        #expect(totals.phantoms == 0, "changes appeared that no in-flight request explains")
        #expect(totals.integrityOK == Self.trials)
        #expect(totals.acknowledged >= Self.trials * 10, "the load acknowledged too few writes to mean anything")
    }

    // MARK: One trial

    private func runTrial(durability: String, seed: UInt64, load: Int) throws -> TrialReport {
        let server = try ServerProcess(arguments: ["--durability", durability])
        let host = server.host
        let port = server.port
        let killed = StopFlag()
        let stopped = StopFlag()
        let progress = LoadProgress()
        let group = ThreadGroup(count: Self.writers) { index in
            var writer = CrashWriter(
                index: index, host: host, port: port, seed: seed &+ UInt64(index),
                sessions: (0..<Self.sessionsPerWriter).map { "w\(index)-s\($0)" }, maxDepth: Self.maxStackDepth)
            writer.run(killed: killed, stopped: stopped, progress: progress)
            progress.writerEnded()
            return writer.log
        }
        // A writer that ends before the kill has logged why; with none left there is no load to wait for.
        let loaded = waitUntil(timeout: .seconds(60)) {
            progress.acknowledged >= load || progress.endedWriters == Self.writers
        }
        var startFaults: [String] = []
        if !loaded || progress.acknowledged < load {
            startFaults.append("the load had \(progress.acknowledged) of \(load) changes acknowledged before the kill")
        }
        // The writers go on until their next request fails: the kill lands in the middle of the load.
        killed.set()
        server.stop(signal: SIGKILL)
        stopped.set()
        let logs = group.join()

        var report = TrialReport(faults: startFaults)
        for log in logs {
            report.faults += log.faults
        }
        try server.start()
        let reader = server.client()
        for log in logs {
            for session in log.touchedSessions {
                try check(session: session, log: log, reader: reader, into: &report)
            }
        }
        reader.close()
        // Nothing else is in the database: every stored session was written by a writer.
        #expect(server.stop(signal: SIGTERM) == 0)
        let touched = Set(logs.flatMap(\.touchedSessions))
        let stored = try SQLiteShell.query(server.databasePath, "SELECT id FROM sessions ORDER BY id")
        for id in stored where !touched.contains(id) {
            report.phantoms += 1
            report.faults.append("session \(id) is stored but no writer wrote to it")
        }
        let integrity = try SQLiteShell.query(server.databasePath, "PRAGMA integrity_check")
        if integrity == ["ok"] {
            report.integrityOK += 1
        } else {
            report.faults.append("PRAGMA integrity_check: \(integrity.prefix(5).joined(separator: "; "))")
        }
        return report
    }

    /// Reads one session back and compares it with what its writer was told.
    private func check(session id: String, log: CrashWriter.Log, reader: HTTPClient, into report: inout TrialReport)
        throws
    {
        let acks = log.acks.filter { $0.session == id }.sorted { $0.version < $1.version }
        let inFlight = log.inFlight?.session == id ? log.inFlight : nil
        report.acknowledged += acks.count
        if inFlight != nil { report.inFlight += 1 }
        let lastAck = acks.last
        let response = try reader.call("GET", "/v1/sessions/\(id)")
        guard response.status == 200 else {
            if response.status == 404, lastAck == nil { return }  // only an in-flight first write, not applied
            report.losses += acks.count
            report.faults.append(
                "\(id): GET answered \(response.status) after the restart; \(acks.count) acknowledged changes (up to version \(lastAck?.version ?? 0)) are gone"
            )
            return
        }
        let storedVersion = response.json["version"]?.intValue ?? -1
        let storedStack = response.json.stackIDs
        let ackedVersion = lastAck?.version ?? 0
        let ackedStack = lastAck?.stack ?? []
        if storedVersion < ackedVersion {
            let lost = acks.filter { $0.version > storedVersion }
            report.losses += lost.count
            report.faults.append(
                "\(id): stored version \(storedVersion) but version \(ackedVersion) was acknowledged; lost versions \(lost.map(\.version))"
            )
        } else if storedVersion == ackedVersion {
            if storedStack != ackedStack {
                report.losses += 1
                report.faults.append(
                    "\(id): version \(storedVersion) stores stack \(storedStack), acknowledged was \(ackedStack)")
            }
        } else {
            // Only the in-flight request may have moved it on, by exactly one version, with its effect.
            if let inFlight, storedVersion == ackedVersion + 1,
                inFlight.operation.explains(before: ackedStack, after: response.json["stack"]?.arrayValue ?? [])
            {
                report.inFlightApplied += 1
            } else {
                report.phantoms += 1
                report.faults.append(
                    "\(id): stored version \(storedVersion) with stack \(storedStack), acknowledged \(ackedVersion) with \(ackedStack); in flight: \(inFlight.map { "\($0.operation)" } ?? "nothing")"
                )
            }
        }

        // The event log holds every acknowledged version, each with its acknowledged events, in order.
        let replay = EventReplay(try reader.loggedChanges(of: id))
        for fault in replay.faults {
            report.faults.append("\(id): event log: \(fault)")
        }
        if replay.finalSession.stackIDs != storedStack {
            report.faults.append(
                "\(id): the event log replays to \(replay.finalSession.stackIDs), the session stores \(storedStack)")
        }
        if replay.versions != Array(1...max(storedVersion, 1)) {
            report.faults.append("\(id): event log versions \(compact(replay.versions)), expected 1...\(storedVersion)")
        }
        for ack in acks {
            guard let session = replay.session(after: ack.version) else {
                report.losses += 1
                report.faults.append(
                    "\(id): acknowledged version \(ack.version) \(replay.whyNoSession(after: ack.version))")
                continue
            }
            if session.stackIDs != ack.stack {
                report.losses += 1
                report.faults.append(
                    "\(id): the event log replays version \(ack.version) to \(session.stackIDs), acknowledged was \(ack.stack)"
                )
            }
            let events = replay.change(ack.version)?.events ?? []
            if let problem = ack.operation.mismatch(events: events, ack: ack) {
                report.losses += 1
                report.faults.append("\(id): version \(ack.version) in the event log: \(problem)")
            }
        }
    }

    private func compact(_ versions: [Int]) -> String {
        versions.count <= 12 ? "\(versions)" : "\(versions.prefix(6))…\(versions.suffix(6)) (\(versions.count))"
    }
}

/// What a trial (or all of them) found.
private struct TrialReport {
    var acknowledged = 0
    var losses = 0
    var inFlight = 0
    var inFlightApplied = 0
    var phantoms = 0
    var integrityOK = 0
    var faults: [String] = []

    mutating func add(_ other: TrialReport) {
        acknowledged += other.acknowledged
        losses += other.losses
        inFlight += other.inFlight
        inFlightApplied += other.inFlightApplied
        phantoms += other.phantoms
        integrityOK += other.integrityOK
    }
}

/// How far the writers are, read by the trial while they run.
private final class LoadProgress: Sendable {
    private let acks = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)

    /// Changes acknowledged so far, by all writers.
    var acknowledged: Int { acks.load(ordering: .acquiring) }
    /// Writers whose `run` has returned.
    var endedWriters: Int { ended.load(ordering: .acquiring) }

    func acknowledge() { acks.add(1, ordering: .releasing) }
    func writerEnded() { ended.add(1, ordering: .releasing) }
}

/// One writer thread: its own connection, its own sessions, one request at a time.
private struct CrashWriter {
    enum Operation: Sendable, CustomStringConvertible {
        case present(destination: String)
        case dismiss
        case update(presentationID: String)

        var description: String {
            switch self {
            case .present(let destination): "present \(destination)"
            case .dismiss: "dismiss the top"
            case .update(let id): "update \(id)"
            }
        }

        /// Whether `after` (stack entries as stored) is what this operation makes of `before` (ids).
        func explains(before: [String], after: [JSONValue]) -> Bool {
            let ids = after.compactMap { $0["id"]?.stringValue }
            switch self {
            case .present(let destination):
                return ids.dropLast() == before[...] && after.last?["destination"]?.stringValue == destination
                    && ids.last.map { !before.contains($0) } == true
            case .dismiss:
                return ids == Array(before.dropLast())
            case .update:
                return ids == before
            }
        }

        /// Why the logged events of an acknowledged change do not match the response; nil when they do.
        func mismatch(events: [SessionEvent], ack: Ack) -> String? {
            let types = events.map(\.kind.rawValue)
            let ids = events.map { $0.presentation?.id ?? "" }
            var expectedTypes: [String] = ack.version == 1 ? ["sessionCreated"] : []
            var expectedIDs: [String] = ack.version == 1 ? [""] : []
            switch self {
            case .present:
                expectedTypes.append("presented")
                expectedIDs.append(ack.presentationIDs.first ?? "?")
            case .dismiss:
                expectedTypes += ack.presentationIDs.map { _ in "dismissed" }
                expectedIDs += ack.presentationIDs
            case .update:
                expectedTypes.append("updated")
                expectedIDs.append(ack.presentationIDs.first ?? "?")
            }
            guard types != expectedTypes || ids != expectedIDs else { return nil }
            return
                "events \(zip(types, ids).map { "\($0) \($1)" }), acknowledged \(self) answered \(zip(expectedTypes, expectedIDs).map { "\($0) \($1)" })"
        }
    }

    /// A change the server acknowledged with a 2xx.
    struct Ack: Sendable {
        let session: String
        let version: Int
        /// The stack's ids in the response.
        let stack: [String]
        let operation: Operation
        /// The presented or updated presentation's id; the dismissed ones, top first.
        let presentationIDs: [String]
    }

    struct InFlight: Sendable {
        let session: String
        let operation: Operation
    }

    struct Log: Sendable {
        var acks: [Ack] = []
        /// The request that had no answer when the server died.
        var inFlight: InFlight?
        var touchedSessions: [String] = []
        var faults: [String] = []
    }

    let index: Int
    let client: HTTPClient
    var random: SeededGenerator
    let sessions: [String]
    let maxDepth: Int
    var log = Log()
    /// Each session's stack (ids) as the last acknowledged response gave it.
    private var stacks: [String: [String]] = [:]
    private var counter = 0

    init(index: Int, host: String, port: UInt16, seed: UInt64, sessions: [String], maxDepth: Int) {
        self.index = index
        client = HTTPClient(host: host, port: port)
        random = SeededGenerator(seed: seed)
        self.sessions = sessions
        self.maxDepth = maxDepth
    }

    /// Writes until a request fails (the server was killed) or `stopped` is set; counts each
    /// acknowledged change in `progress`.
    mutating func run(killed: StopFlag, stopped: StopFlag, progress: LoadProgress) {
        defer { client.close() }
        while !stopped.isSet {
            let session = sessions.randomElement(using: &random)!
            let stack = stacks[session] ?? []
            let operation = nextOperation(on: stack)
            if !log.touchedSessions.contains(session) { log.touchedSessions.append(session) }
            log.inFlight = InFlight(session: session, operation: operation)
            let response: JSONResponse
            do {
                response = try send(operation, to: session, stack: stack)
            } catch {
                // The server died with this request unanswered: it may or may not have been applied.
                if !killed.isSet {
                    log.faults.append("writer \(index): \(operation) on \(session) failed before the kill: \(error)")
                }
                return
            }
            log.inFlight = nil
            guard (200...299).contains(response.status), let version = response.json["session"]?["version"]?.intValue
            else {
                log.faults.append(
                    "writer \(index): \(operation) on \(session) answered \(response.status): \(String(decoding: response.raw.prefix(300), as: UTF8.self))"
                )
                continue
            }
            let ids = response.json["session"]?.stackIDs ?? []
            let affected: [String]
            switch operation {
            case .present, .update:
                affected = [response.json["presentation"]?["id"]?.stringValue ?? "?"]
            case .dismiss:
                affected = response.json["dismissed"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            }
            log.acks.append(
                Ack(session: session, version: version, stack: ids, operation: operation, presentationIDs: affected))
            stacks[session] = ids
            progress.acknowledge()
        }
    }

    private mutating func nextOperation(on stack: [String]) -> Operation {
        let roll = Int.random(in: 0..<100, using: &random)
        if stack.isEmpty || (stack.count < maxDepth && roll < 55) {
            counter += 1
            return .present(destination: "d\(index)x\(counter)")
        }
        if roll < 85 { return .dismiss }
        return .update(presentationID: stack.randomElement(using: &random)!)
    }

    private mutating func send(_ operation: Operation, to session: String, stack: [String]) throws -> JSONResponse {
        switch operation {
        case .present(let destination):
            return try client.call(
                "POST", "/v1/sessions/\(session)/presentations",
                json: [
                    "destination": .string(destination), "payload": ["n": JSONValue(counter), "w": JSONValue(index)],
                ])
        case .dismiss:
            return try client.call("POST", "/v1/sessions/\(session)/dismiss", json: [:])
        case .update(let id):
            counter += 1
            return try client.call(
                "PATCH", "/v1/sessions/\(session)/presentations/\(id)", json: ["payload": ["u": JSONValue(counter)]])
        }
    }
}
