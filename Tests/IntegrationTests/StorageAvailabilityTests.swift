import Foundation
import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// The database becomes unusable under a running server: its directory turns read-only, vanishes,
/// or another process locks it. Writes must get a clear problem (503 storage-unavailable or 507
/// storage-full, with Retry-After) and change nothing, the process must stay up and answer /livez,
/// and writes must work again once the cause is gone.
@Suite(
    "Storage availability", .enabled(if: ServerProcess.isLocal, "changes the files under servers it starts itself"),
    .enabled(if: !ServerProcess.usesPostgres, "the SQLite file's faults (PostgreSQL: MultiInstanceTests)"),
    .serialized)
struct StorageAvailabilityTests {
    /// How the test makes files read-only. Root ignores permission bits, so as root the files are
    /// made immutable with `chattr +i` (which even root's open descriptors cannot write through).
    enum ReadOnlyMethod: Sendable {
        case permissions
        case immutable(chattr: String)

        static let available: ReadOnlyMethod? = {
            guard geteuid() == 0 else { return .permissions }
            guard let chattr = findExecutable("chattr") else { return nil }
            // chattr needs CAP_LINUX_IMMUTABLE and a file system that supports the flag (ext4, xfs,
            // btrfs). The server's descriptors are open before the flag is set, so the probe writes
            // through one opened before it too: tmpfs takes the flag but lets such writes through.
            guard let directory = try? TemporaryDirectory() else { return nil }
            let probe = directory.appending("chattr-probe")
            guard FileManager.default.createFile(atPath: probe, contents: Data("x".utf8)) else { return nil }
            let fd = open(probe, O_WRONLY)
            defer {
                if fd >= 0 { close(fd) }
                // Before the directory goes: an immutable file cannot be removed.
                _ = try? runProgram(chattr, ["-i", probe])
            }
            guard fd >= 0, (try? runProgram(chattr, ["+i", probe]))?.status == 0 else { return nil }
            let written = "y".withCString { write(fd, $0, 1) }
            return written < 0 ? .immutable(chattr: chattr) : nil
        }()
    }

    static var canMakeReadOnly: Bool { ReadOnlyMethod.available != nil }

    /// The tests that make the database read-only run only where that is possible.
    static let needsReadOnlyFiles = ConditionTrait.enabled(
        if: canMakeReadOnly,
        "running as root without a working chattr +i: root writes through any permission bits, so the files cannot be made read-only"
    )

    /// The answer to a write while the database cannot take it.
    private func expectStorageProblem(
        _ response: JSONResponse, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            [503, 507].contains(response.status),
            "\(comment): \(response.status) \(String(decoding: response.raw, as: UTF8.self))",
            sourceLocation: sourceLocation)
        if [503, 507].contains(response.status) {
            let slug = response.problemSlug
            #expect(
                slug == (response.status == 503 ? "storage-unavailable" : "storage-full"),
                sourceLocation: sourceLocation)
            #expect(
                response.headers["Retry-After"].flatMap { Int($0) }.map { $0 > 0 } == true, "no Retry-After",
                sourceLocation: sourceLocation)
        }
    }

    @Test(
        "a read-only database directory: writes get 503 with Retry-After, reads and /livez go on, writes work again once it is writable",
        StorageAvailabilityTests.needsReadOnlyFiles)
    func readOnlyDirectory() throws {
        let method = try #require(ReadOnlyMethod.available)
        let server = try ServerProcess()
        let pid = try #require(server.processID)
        let client = server.client()
        let id = uniqueSessionID("ro")
        #expect(
            try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"]).status == 201
        )
        let before = try client.call("GET", "/v1/sessions/\(id)")
        let directory = (server.databasePath as NSString).deletingLastPathComponent
        // The -shm file is left alone: SQLite maps it into memory, and a write fault on a mapping of
        // an immutable file is a SIGBUS no program can answer. It holds no data, only the WAL's index.
        let files = [directory, server.databasePath, server.databasePath + "-wal"].filter {
            FileManager.default.fileExists(atPath: $0)
        }
        let restore = try makeReadOnly(files, method)
        var restored = false
        defer {
            if !restored { restore() }
            withExtendedLifetime(server) {}  // its directory is removed with it: only once writable again
        }

        let refused = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        switch method {
        case .immutable:
            expectStorageProblem(refused, "a write to an immutable database")
        case .permissions:
            // Permission bits are checked when a file is opened: the server's open descriptors stay
            // writable, so a running server may go on writing. Either outcome is right; a crash is not.
            if refused.status != 201 { expectStorageProblem(refused, "a write to a read-only database") }
        }
        let fresh = try client.call(
            "POST", "/v1/sessions/\(uniqueSessionID("ro-new"))/presentations", json: ["destination": "a"])
        if case .immutable = method { expectStorageProblem(fresh, "creating a session in an immutable database") }
        #expect(isProcessAlive(pid))
        #expect(try server.client().call("GET", "/livez").status == 200)
        let read = try client.call("GET", "/v1/sessions/\(id)")
        #expect(read.status == 200)
        if refused.status != 201 {
            #expect(read.raw == before.raw, "a refused write changed the session")
            let ready = try client.call("GET", "/readyz")
            #expect(ready.status == 503, "readiness does not report the read-only database")
        }

        restore()
        restored = true
        let again = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "profile"])
        #expect(
            again.status == 201,
            "writes do not work again once the directory is writable: \(again.status) \(String(decoding: again.raw, as: UTF8.self))"
        )
        #expect(try client.call("GET", "/readyz").status == 200)
        #expect(
            try client.call("GET", "/v1/sessions/\(id)").json["stack"]?.arrayValue?.last?["destination"] == "profile")
    }

    @Test(
        "a server started on a read-only database directory refuses to start with a clear message, or refuses writes; after the fix it works",
        StorageAvailabilityTests.needsReadOnlyFiles)
    func startOnReadOnlyDirectory() throws {
        let method = try #require(ReadOnlyMethod.available)
        let server = try ServerProcess()
        let id = uniqueSessionID("ro-start")
        #expect(
            try server.client().call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
                .status == 201)
        #expect(server.stop(signal: SIGTERM) == 0)
        let directory = (server.databasePath as NSString).deletingLastPathComponent
        let files = [directory, server.databasePath].filter { FileManager.default.fileExists(atPath: $0) }
        let restore = try makeReadOnly(files, method)
        var restored = false
        defer {
            if !restored { restore() }
            withExtendedLifetime(server) {}  // its directory is removed with it: only once writable again
        }

        let attempt = try StartAttempt.run(database: server.databasePath)
        if attempt.started {
            // Then it must serve reads and refuse writes clearly: started again as a ServerProcess.
            try server.start()
            let client = server.client()
            #expect(try client.call("GET", "/v1/sessions/\(id)").status == 200)
            expectStorageProblem(
                try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"]),
                "a write to a read-only database")
            restore()
            restored = true
            let again = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
            #expect(
                again.status == 201,
                "writes do not work again once the directory is writable, without a restart: \(again.status)")
        } else {
            #expect(attempt.exitStatus.map { $0 != 0 } == true)
            #expect(
                attempt.output.contains(server.databasePath),
                "the message does not name the database: \(attempt.output)")
            print(
                "StorageAvailabilityTests: start on a read-only directory: exit \(attempt.exitStatus ?? -1): \(attempt.output.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
            restore()
            restored = true
            try server.start()
            let client = server.client()
            #expect(try client.call("GET", "/v1/sessions/\(id)").status == 200)
            #expect(
                try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"]).status == 201
            )
        }
    }

    /// Deleting the database's directory under a running server.
    ///
    /// SQLite keeps its descriptors of the unlinked database and WAL and would go on writing into
    /// them; all of it is gone once the process ends. The store checks (`SQLITE_FCNTL_HAS_MOVED`)
    /// before each commit, so no write is acknowledged from then on: writes answer 503 and
    /// /readyz says why, reads go on, and the process stays up. A restart creates the directory
    /// again and begins with an empty database.
    @Test(
        "a vanished database directory: writes answer 503 instead of going into the deleted file, reads go on, readiness says why, a restart recovers"
    )
    func vanishedDirectory() throws {
        let server = try ServerProcess(capturingOutput: true)
        let pid = try #require(server.processID)
        let client = server.client()
        let id = uniqueSessionID("gone")
        #expect(
            try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"]).status == 201
        )
        let directory = (server.databasePath as NSString).deletingLastPathComponent
        try FileManager.default.removeItem(atPath: directory)
        #expect(!FileManager.default.fileExists(atPath: directory))

        let write = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        let create = try client.call(
            "POST", "/v1/sessions/\(uniqueSessionID("gone-new"))/presentations", json: ["destination": "a"])
        let read = try client.call("GET", "/v1/sessions/\(id)")
        let ready = try client.call("GET", "/readyz")
        // Writes would go into the unlinked file and be lost at the next start: none is acknowledged.
        for (name, response) in [("write", write), ("create", create)] {
            #expect(
                response.status == 503,
                "\(name) after the directory vanished: \(response.status) \(String(decoding: response.raw, as: UTF8.self))"
            )
            expectStorageProblem(response, name)
        }
        #expect(read.status == 200, "reads keep answering from what the server holds")
        // /readyz says which dependency failed; the log says why, and where.
        #expect(ready.status == 503 && ready.json["reason"] == "database: unavailable")
        #expect(
            try waitUntil(pollingEvery: .milliseconds(20)) {
                server.outputLines().contains { $0.contains(#""msg":"not ready""#) && $0.contains("deleted or moved") }
            }, "no log line with the store's message")
        #expect(isProcessAlive(pid))
        #expect(try server.client().call("GET", "/livez").status == 200)
        print(
            "StorageAvailabilityTests: after the database directory vanished: write \(write.status), create \(create.status), "
                + "read \(read.status), readyz \(ready.status) \(String(decoding: ready.raw, as: UTF8.self))")

        // Recovery: a restart creates the directory again and works (with an empty database).
        #expect(server.stop(signal: SIGTERM) == 0)
        try server.start()
        let after = server.client()
        #expect(try after.call("GET", "/readyz").status == 200)
        #expect(
            try after.call(
                "POST", "/v1/sessions/\(uniqueSessionID("reborn"))/presentations", json: ["destination": "a"]
            ).status == 201)
        #expect(try after.call("GET", "/v1/sessions/\(id)").status == 404, "the deleted database's sessions are gone")
    }

    @Test(
        "a database locked by another process: writes time out into 503 with Retry-After and change nothing, reads go on, writes work once the lock is released",
        .enabled(if: SQLiteShell.pythonPath != nil, "needs python3's sqlite3 module to hold the lock"))
    func lockedDatabase() throws {
        let server = try ServerProcess()
        let pid = try #require(server.processID)
        let client = server.client()
        let id = uniqueSessionID("locked")
        #expect(
            try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"]).status == 201
        )
        let before = try client.call("GET", "/v1/sessions/\(id)")

        let holder = try LockHolder(database: server.databasePath)
        defer { holder.release() }
        // The server waits its busy timeout (5 s), then gives up.
        let refused = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        expectStorageProblem(refused, "a write while another process holds the lock")
        let created = try client.call("PUT", "/v1/sessions/\(uniqueSessionID("locked-new"))")
        expectStorageProblem(created, "creating a session while another process holds the lock")
        #expect(isProcessAlive(pid))
        #expect(try server.client().call("GET", "/livez").status == 200)
        let read = try client.call("GET", "/v1/sessions/\(id)")
        #expect(read.status == 200)
        #expect(read.raw == before.raw, "a refused write changed the session")
        #expect(try client.call("GET", "/readyz").status == 503, "readiness does not report the locked database")

        holder.release()
        let again = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        #expect(again.status == 201, "writes do not work again once the lock is released: \(again.status)")
        #expect(again.json["session"]?["version"]?.intValue == 2, "a refused write used a version")
        #expect(try client.call("GET", "/readyz").status == 200)
    }

    // MARK: Helpers

    /// Makes `paths` read-only; returns how to undo it (the directory last, so the files can be reached).
    private func makeReadOnly(_ paths: [String], _ method: ReadOnlyMethod) throws -> () -> Void {
        switch method {
        case .permissions:
            for path in paths {
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                try #require(chmod(path, isDirectory.boolValue ? 0o555 : 0o444) == 0)
            }
            return {
                for path in paths {
                    var isDirectory: ObjCBool = false
                    _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                    chmod(path, isDirectory.boolValue ? 0o755 : 0o644)
                }
            }
        case .immutable(let chattr):
            let result = try runProgram(chattr, ["+i"] + paths)
            try #require(result.status == 0, "chattr +i failed: \(result.error)")
            return { _ = try? runProgram(chattr, ["-i"] + paths) }
        }
    }
}

/// Another process holding SQLite's write lock on the database (python3: BEGIN EXCLUSIVE) until
/// `release()`.
private final class LockHolder {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var released = false

    init(database: String) throws {
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            db.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            sys.stdin.readline()
            db.execute("ROLLBACK")
            db.close()
            print("released", flush=True)
            """
        process.executableURL = URL(fileURLWithPath: SQLiteShell.pythonPath ?? "/usr/bin/python3")
        process.arguments = ["-c", script, database]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard readLine() == "locked" else {
            process.terminate()
            throw RawConnectionError("python3 could not lock \(database)")
        }
    }

    /// Ends the transaction and waits until the lock is gone.
    func release() {
        guard !released else { return }
        released = true
        input.fileHandleForWriting.write(Data("\n".utf8))
        _ = readLine()
        process.waitUntilExitedWithoutRunLoop()
    }

    private func readLine() -> String? {
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == Data("\n".utf8) { return String(decoding: line, as: UTF8.self) }
            line += byte
        }
    }
}
