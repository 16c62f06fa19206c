import Foundation
import Glibc
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Synchronization
import Testing

// Helpers shared by the reliability suites (CrashTests, StorageAvailabilityTests, CorruptStartTests,
// HostileInputTests, SessionConcurrencyTests): plain threads, raw sockets, the server's memory, the
// sqlite3 shell, and the event log replayed. Seeded randomness is ModalStackTestSupport's.

/// Whether the long soak runs (`MODALSTACK_SOAK=1`): more trials, longer load.
enum Soak {
    static var isOn: Bool { ProcessInfo.processInfo.environment["MODALSTACK_SOAK"] == "1" }
}

/// Plain threads (not the cooperative pool, which has as many threads as cores): each runs
/// `body(index)` to its end; `join()` waits for all of them and returns their results in order.
final class ThreadGroup<Result: Sendable>: Sendable {
    private let results: LockedValue<[Int: Result]>
    private let group = DispatchGroup()
    private let count: Int

    init(count: Int, stackSize: Int = 1 << 20, _ body: @escaping @Sendable (Int) -> Result) {
        self.count = count
        results = LockedValue([:])
        for index in 0..<count {
            group.enter()
            let thread = Thread { [self] in
                let result = body(index)
                results.withLock { $0[index] = result }
                group.leave()
            }
            thread.stackSize = stackSize
            thread.start()
        }
    }

    func join() -> [Result] {
        group.wait()
        return results.withLock { results in (0..<count).map { results[$0]! } }
    }
}

/// A flag threads can read and set.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}

/// One raw TCP connection, for what ``HTTPClient`` will not do: trickle bytes, half-close, hold
/// connections idle, read whatever comes back (or notice that nothing does).
final class RawConnection {
    let fd: Int32

    init(host: String = "127.0.0.1", port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawConnectionError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw RawConnectionError("connect: \(message)")
        }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        // A server that stops reading must not block a write forever.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
    }

    /// Writes everything; false when the peer closed or reset the connection first.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// `shutdown(SHUT_WR)`: the server reads end-of-file after what was sent.
    func shutdownWrite() {
        shutdown(fd, Int32(SHUT_WR))
    }

    enum ReadOutcome {
        /// The peer closed (or reset) the connection; what arrived before.
        case closed([UInt8])
        /// Nothing more arrived within the time; what arrived before.
        case timedOut([UInt8])
    }

    /// Reads until the peer closes, or until `seconds` pass with the connection still open.
    func readUntilClosed(seconds: Double) -> ReadOutcome {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let left = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = Int32(max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
            if milliseconds <= 0 { return .timedOut(received) }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let count = poll(&ready, 1, milliseconds)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .timedOut(received) }
            let read = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read > 0 {
                received += chunk[..<read]
            } else if read == 0 || (errno != EINTR && errno != EAGAIN) {
                return .closed(received)
            }
        }
    }

    /// Reads until `count` whole responses arrived (Content-Length bodies), the peer closed, or
    /// `seconds` passed.
    func readResponses(count: Int, seconds: Double) -> (responses: [RawResponse], closed: Bool) {
        var responses: [RawResponse] = []
        var pending: [UInt8] = []
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            while let response = RawResponse(pending), response.isComplete {
                responses.append(response)
                pending = response.trailing
            }
            if responses.count >= count { return (responses, false) }
            let left = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = Int32(max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
            if milliseconds <= 0 { return (responses, false) }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, milliseconds)
            if polled < 0 && errno == EINTR { continue }
            if polled <= 0 { return (responses, false) }
            let read = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read > 0 {
                pending += chunk[..<read]
            } else if read == 0 || (errno != EINTR && errno != EAGAIN) {
                return (responses, true)
            }
        }
    }

    /// Reads until one whole response head (and its Content-Length body) arrived, the peer closed,
    /// or `seconds` passed.
    func readResponse(seconds: Double) -> (response: RawResponse?, closed: Bool) {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let response = RawResponse(received), response.isComplete { return (response, false) }
            let left = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = Int32(max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
            if milliseconds <= 0 { return (RawResponse(received), false) }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let count = poll(&ready, 1, milliseconds)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return (RawResponse(received), false) }
            let read = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read > 0 {
                received += chunk[..<read]
            } else if read == 0 || (errno != EINTR && errno != EAGAIN) {
                return (RawResponse(received), true)
            }
        }
    }
}

struct RawConnectionError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A response as read off a raw connection: status, headers, and the body that arrived.
struct RawResponse {
    let status: Int
    let headers: HTTPHeaders
    /// The body (up to its Content-Length when it has one).
    let body: [UInt8]
    /// What came after the body (the start of another response).
    let trailing: [UInt8]
    let isComplete: Bool

    /// Nil until a whole status line and header section arrived.
    init?(_ bytes: [UInt8]) {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4,
            let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == terminator })
        else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, lines[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            return nil
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        self.status = status
        self.headers = headers
        let rest = Array(bytes[(end + 4)...])
        let bodiless = [204, 304].contains(status) || (100...199).contains(status)
        if let length = bodiless ? 0 : headers["Content-Length"].flatMap({ Int($0) }) {
            isComplete = rest.count >= length
            body = Array(rest.prefix(length))
            trailing = Array(rest.dropFirst(length))
        } else {
            isComplete = headers["Transfer-Encoding"] == nil
            body = rest
            trailing = []
        }
    }

    var json: JSONValue { (try? JSONParser.parse(body)) ?? .null }
}

/// The resident set size of a process, from `/proc/<pid>/status`, in KiB.
func residentKiB(of pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
    return nil
}

/// Whether a process exists and is not a zombie.
func isProcessAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    // "pid (comm) S ...": the state follows the last ')'.
    guard let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
    return state != "Z" && state != "X"
}

/// Runs a program to its end; returns its exit status and what it wrote (stdout and stderr).
@discardableResult
func runProgram(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
    let result = try ChildProcess.run(path, arguments)
    return (
        result.status, String(decoding: result.output, as: UTF8.self), String(decoding: result.error, as: UTF8.self)
    )
}

/// The first executable called `name` in `/usr/bin`, `/usr/local/bin`, `/bin` or on `PATH`.
func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map(String.init) ?? []
    return (["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"] + path).map { $0 + "/" + name }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// The sqlite3 shell (installed by scripts/test), or python3's sqlite3 module when it is missing.
enum SQLiteShell {
    static var cliPath: String? { findExecutable("sqlite3") }

    static var pythonPath: String? { findExecutable("python3") }

    static var isAvailable: Bool { cliPath != nil || pythonPath != nil }

    /// Runs `sql` on the database at `path`; returns the rows, one a line, columns separated by `|`.
    static func query(_ path: String, _ sql: String) throws -> [String] {
        let result: (status: Int32, output: String, error: String)
        if let cli = cliPath {
            result = try runProgram(cli, ["-batch", path, sql])
        } else if let python = pythonPath {
            let script = """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                for row in db.execute(sys.argv[2]):
                    print("|".join("" if v is None else str(v) for v in row))
                """
            result = try runProgram(python, ["-c", script, path, sql])
        } else {
            throw RawConnectionError("neither sqlite3 nor python3 is installed")
        }
        guard result.status == 0 else {
            throw RawConnectionError("sqlite3 \(path) \(sql) failed (\(result.status)): \(result.error)")
        }
        return result.output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
}

// MARK: The event log

extension HTTPClient {
    /// The session's event log as change records, oldest first, following `next` from page to page.
    func loggedChanges(of sessionID: String, limit: Int = 1000) throws -> [SessionChange] {
        var changes: [SessionChange] = []
        var path: String? = "/v1/sessions/\(sessionID)/events?limit=\(limit)"
        var pages = 0
        while let next = path {
            let page = try call("GET", next)
            guard page.status == 200 else {
                throw RawConnectionError("GET \(next): \(page.status) \(String(decoding: page.raw, as: UTF8.self))")
            }
            changes += try Self.changeRecords(onPage: page.json, of: sessionID)
            path = page.json["next"]?.stringValue
            pages += 1
            if pages > 100_000 { throw RawConnectionError("the event log of \(sessionID) does not end") }
        }
        return changes
    }

    /// A page's `changes`, each with the flat `events` of its version (less the `version` and `at`
    /// they repeat), read as ModalStackCore reads a change record.
    private static func changeRecords(onPage page: JSONValue, of sessionID: String) throws -> [SessionChange] {
        guard let events = page["events"]?.arrayValue, let summaries = page["changes"]?.arrayValue else {
            throw RawConnectionError("not a page of the event log: \(page.jsonText)")
        }
        let eventsByVersion = Dictionary(grouping: events) { $0["version"]?.intValue ?? -1 }
        var changes: [SessionChange] = []
        for summary in summaries {
            guard var record = summary.objectValue, let version = summary["version"]?.intValue else {
                throw RawConnectionError("not a change summary: \(summary.jsonText)")
            }
            record["events"] = .array(
                (eventsByVersion[version] ?? []).map { event in
                    var object = event.objectValue ?? [:]
                    object["version"] = nil
                    object["at"] = nil
                    return .object(object)
                })
            changes.append(try SessionChange(sessionID: sessionID, json: .object(record)))
        }
        // Every event is read, in order: the page lists them change by change.
        let listed = changes.flatMap { change in change.events.map { _ in Int(change.version) } }
        guard listed == events.map({ $0["version"]?.intValue ?? -1 }) else {
            throw RawConnectionError("events out of order or of no listed change: \(page.jsonText)")
        }
        return changes
    }
}

/// A session's event log replayed from an empty session with ModalStackCore's
/// `Session.applying(_:)`, the one function that applies a change: the session after each version.
struct EventReplay {
    /// The log's changes, in log order.
    let changes: [SessionChange]
    /// The session after each version, up to the first change that does not apply.
    private var sessions: [Int: Session] = [:]
    private var changesByVersion: [Int: SessionChange] = [:]
    /// The session the log replays to (where the replay stopped, if it did).
    private(set) var finalSession: Session
    /// Why the log does not replay to its end, for the test to report: the first change that does
    /// not follow from the session before it. The replay stops there.
    private(set) var faults: [String] = []

    init(_ changes: [SessionChange]) {
        self.changes = changes
        var session = Session.unwritten(id: changes.first?.sessionID ?? "", at: Timestamp(millisecondsSinceEpoch: 0))
        for change in changes {
            changesByVersion[Int(change.version)] = change
            guard faults.isEmpty else { continue }
            do {
                session = try session.applying(change)
                sessions[Int(change.version)] = session
            } catch {
                faults.append(
                    "v\(change.version) does not apply to v\(session.version): \(error); the rest is not replayed")
            }
        }
        finalSession = session
    }

    /// The versions in the log, in order.
    var versions: [Int] { changes.map { Int($0.version) } }

    /// The change that made `version`, if the log holds it.
    func change(_ version: Int) -> SessionChange? {
        changesByVersion[version]
    }

    /// The session after `version`, if the log replays to it.
    func session(after version: Int) -> Session? {
        sessions[version]
    }

    /// Why `session(after:)` is nil: the version is not in the log, or the replay stopped before it.
    func whyNoSession(after version: Int) -> String {
        change(version) == nil ? "is not in the event log" : "is in the event log, which does not replay to it"
    }
}

extension Session {
    /// The session an answer served (the body of `PUT /v1/sessions/{id}`, a change's `session`), read
    /// with ModalStackCore's readers of presentations and path entries; it must write back as served.
    init(served json: JSONValue) throws {
        func presentations(_ key: String) throws -> [Presentation] {
            try (json[key]?.arrayValue ?? []).map { element throws(ModalError) in try Presentation(json: element) }
        }
        guard let id = json["id"]?.stringValue, let version = json["version"]?.intValue,
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let updatedAt = json["updatedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let ttl = json["ttl"]?.intValue
        else { throw RawConnectionError("not a session: \(json.jsonText)") }
        self.init(
            id: id, version: Int64(version), createdAt: createdAt, updatedAt: updatedAt,
            stack: try presentations("stack"), queue: try presentations("queue"), ttlSeconds: Int64(ttl),
            path: try (json["path"]?.arrayValue ?? []).map { element throws(ModalError) in
                try PathEntry(json: element)
            })
        guard self.json == json else {
            throw RawConnectionError("a session that reads back otherwise: \(json.jsonText)")
        }
    }

    /// The ids of the stack, bottom first, and of the queue: what answers are compared by.
    var stackIDs: [String] { stack.map(\.id) }
    var queueIDs: [String] { queue.map(\.id) }
}

extension SessionEvent {
    /// `type presentationId`, and a replace's new stack: an event in a message.
    var summary: String {
        ([kind.rawValue] + [presentation?.id].compactMap { $0 }).joined(separator: " ")
            + (details["stack"].map { " stack \($0.arrayValue?.compactMap(\.stringValue) ?? [])" } ?? "")
    }
}

extension JSONValue {
    /// The ids of a session's stack (`session.stack[].id`).
    var stackIDs: [String] { self["stack"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
    var queueIDs: [String] { self["queue"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
}

/// The binary started by hand, to see whether it starts at all: its exit status and what it said.
struct StartAttempt {
    /// The exit status when the process ended by itself; nil when it started listening.
    let exitStatus: Int32?
    /// Standard error up to the exit or the "listening on" line.
    let output: String

    var started: Bool { exitStatus == nil }

    /// Runs `modalstack --host 127.0.0.1 --port 0 --db <database> <arguments>` until it exits or
    /// says it listens (then it is killed at once with SIGKILL, so that it writes nothing more).
    static func run(database: String, arguments: [String] = []) throws -> StartAttempt {
        let child = try ChildProcess(
            ServerProcess.binaryPath, ["--host", "127.0.0.1", "--port", "0", "--db", database] + arguments,
            standardError: .pipe)
        // A start that neither fails nor listens within 60 s is ended, so that the test goes on.
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        let standardError = child.standardError!
        var output = ""
        while let bytes = standardError.read(before: deadline), !bytes.isEmpty {
            output += String(decoding: bytes, as: UTF8.self)
            if output.contains("listening on") {
                child.send(SIGKILL)
                _ = child.waitForExit()
                return StartAttempt(exitStatus: nil, output: output)
            }
        }
        child.send(SIGKILL)
        return StartAttempt(exitStatus: child.waitForExit(), output: output)
    }
}

/// A file's bytes, or nil when it does not exist.
func fileBytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}

/// A change a client was told was made: its version, the stack and queue its answer gave (ids),
/// and what the client did, for messages.
protocol AcknowledgedChange {
    var version: Int { get }
    var stack: [String] { get }
    var queue: [String] { get }
    var operation: String { get }
}

/// Expects each acknowledged version once, and with the session's creation (version 1) every
/// version from 1 to `finalVersion`: no change lost, none given a version twice.
func expectEachVersionOnce(_ acks: [some AcknowledgedChange], finalVersion: Int) {
    let versions = acks.map(\.version)
    var seen: [Int: Int] = [:]
    for version in versions { seen[version, default: 0] += 1 }
    let duplicated = seen.filter { $0.value > 1 }.keys.sorted()
    #expect(duplicated.isEmpty, "versions acknowledged more than once: \(duplicated.prefix(20))")
    #expect(
        Set(versions + [1]) == Set(1...finalVersion),
        "acknowledged versions miss \(Set(1...finalVersion).subtracting(versions + [1]).sorted().prefix(20))")
    #expect(versions.count + 1 == finalVersion)
}

extension EventReplay {
    /// The acknowledged states the log, replayed from the start, does not reach, described.
    func divergences(from acks: [some AcknowledgedChange]) -> [String] {
        var divergences: [String] = []
        for ack in acks.sorted(by: { $0.version < $1.version }) {
            guard let session = session(after: ack.version) else {
                divergences.append("v\(ack.version) (\(ack.operation)) \(whyNoSession(after: ack.version))")
                continue
            }
            if session.stackIDs != ack.stack || session.queueIDs != ack.queue {
                divergences.append(
                    "v\(ack.version) (\(ack.operation)): acknowledged stack \(ack.stack) queue \(ack.queue), the log replays to stack \(session.stackIDs) queue \(session.queueIDs)"
                )
            }
        }
        return divergences
    }
}
