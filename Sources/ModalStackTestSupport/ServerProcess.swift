import Foundation

/// The server under test: the built `modalstack` binary started on a free port with a temporary
/// database, or — when `MODALSTACK_URL` is set — an already-running server (a container, say).
public final class ServerProcess: @unchecked Sendable {
    /// Set `MODALSTACK_URL=http://host:port` to test a running server instead of starting one.
    public static let externalURL = ProcessInfo.processInfo.environment["MODALSTACK_URL"]
    /// Whether tests may start, stop and restart servers themselves.
    public static var isLocal: Bool { externalURL == nil }
    /// Set `MODALSTACK_TEST_ENGINE=postgresql` to start every server on a new database of the
    /// throwaway PostgreSQL server (``PostgresServer/shared()``) instead of a new SQLite file.
    public static let usesPostgres = ProcessInfo.processInfo.environment["MODALSTACK_TEST_ENGINE"] == "postgresql"

    public let host: String
    public private(set) var port: UInt16
    /// The SQLite file, unless the server uses PostgreSQL.
    public let databasePath: String
    /// The PostgreSQL database the server uses, if any (`--database-url`).
    public let databaseURL: String?
    public let extraArguments: [String]
    private var child: ChildProcess?
    /// Where the database and the captured output go; removed with the process object.
    private let directory: TemporaryDirectory?
    /// Where the server's standard output (the access log) goes, when captured.
    public let standardOutputPath: String?

    /// Starts a server (or attaches to the external one).
    /// - Parameters:
    ///   - capturingOutput: keep the server's standard output (its access log) in a file.
    ///   - databaseURL: a PostgreSQL database to use (instances sharing one); by default a new
    ///     SQLite file, or a new PostgreSQL database when ``usesPostgres``.
    public init(arguments: [String] = [], capturingOutput: Bool = false, databaseURL: String? = nil) throws {
        extraArguments = arguments
        if let url = Self.externalURL {
            let parts = try Self.hostAndPort(url)
            host = parts.host
            port = parts.port
            databasePath = ""
            self.databaseURL = nil
            directory = nil
            standardOutputPath = nil
            return
        }
        if let databaseURL {
            self.databaseURL = databaseURL
        } else if Self.usesPostgres {
            let server = try PostgresServer.shared()
            self.databaseURL = server.url(database: try server.createDatabase("server"))
        } else {
            self.databaseURL = nil
        }
        let directory = try TemporaryDirectory()
        self.directory = directory
        standardOutputPath = capturingOutput ? directory.appending("stdout.log") : nil
        host = "127.0.0.1"
        port = 0
        databasePath = directory.appending("data/modalstack.sqlite")
        try start()
    }

    deinit {
        // Before the directory, with the database, is removed.
        child?.send(SIGKILL)
        _ = child?.waitForExit()
    }

    /// The built binary: next to the test bundle, in the same build products directory.
    public static var binaryPath: String {
        if let path = ProcessInfo.processInfo.environment["MODALSTACK_BINARY"] { return path }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("modalstack").path
    }

    /// Starts the binary on a free port and waits until it says where it listens.
    public func start() throws { try start(port: 0) }

    private func start(port requested: UInt16) throws {
        let database = databaseURL.map { ["--database-url", $0] } ?? ["--db", databasePath]
        let child = try ChildProcess(
            Self.binaryPath, ["--host", "127.0.0.1", "--port", String(requested)] + database + extraArguments,
            standardOutput: standardOutputPath.map { .appending(toFile: $0) } ?? .null, standardError: .pipe)
        self.child = child
        port = try Self.waitForListeningPort(child)
    }

    /// Sends `signal` and waits for the process to end; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        send(signal)
        return waitForExit()
    }

    /// Sends `signal` without waiting.
    public func send(_ signal: Int32) {
        child?.send(signal)
    }

    /// Waits for the process to end; returns its exit status (128 + the signal's number when a
    /// signal ended it).
    public func waitForExit() -> Int32 {
        guard let child else { return -1 }
        let status = child.waitForExit()
        self.child = nil
        return status
    }

    /// Stops the server with `signal` and starts it again on the same database, on `port`: by
    /// default a new free one; a client that keeps the server's URL needs the one it had.
    public func restart(signal: Int32 = SIGTERM, port: UInt16 = 0) throws {
        stop(signal: signal)
        try start(port: port)
    }

    /// The process id of the running server.
    public var processID: Int32? { child?.processID }

    /// The lines the server wrote to standard output so far.
    public func outputLines() -> [String] {
        guard let standardOutputPath, let data = FileManager.default.contents(atPath: standardOutputPath) else {
            return []
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    public func client() -> HTTPClient {
        HTTPClient(host: host, port: port)
    }

    /// Runs the binary with `arguments` until it exits (a start that must fail): its exit status and standard error.
    public static func runUntilExit(_ arguments: [String], environment: [String: String]? = nil) throws -> (
        status: Int32, output: String
    ) {
        let child = try ChildProcess(binaryPath, arguments, environment: environment, standardError: .pipe)
        let output = String(decoding: child.standardError!.readToEnd(), as: UTF8.self)
        return (child.waitForExit(), output)
    }

    /// Reads stderr until the "listening on HOST:PORT" line, for at most 20 s; the rest of stderr
    /// is drained on a thread of its own until the server ends, so that the server never blocks
    /// on a full pipe. A server that does not say it listens is killed.
    private static func waitForListeningPort(_ child: ChildProcess) throws -> UInt16 {
        let standardError = child.standardError!
        var buffer = ""
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while let bytes = standardError.read(before: deadline), !bytes.isEmpty {
            buffer += String(decoding: bytes, as: UTF8.self)
            if let range = buffer.range(of: #"listening on \S+:(\d+)"#, options: .regularExpression) {
                let match = String(buffer[range])
                let port = UInt16(match.split(separator: ":").last ?? "") ?? 0
                startThread { standardError.discardToEnd() }
                return port
            }
        }
        child.send(SIGKILL)
        let status = child.waitForExit()
        throw ServerStartError(output: buffer + "\n(exit status \(status))")
    }

    private static func hostAndPort(_ url: String) throws -> (host: String, port: UInt16) {
        guard let components = URLComponents(string: url), let host = components.host else {
            throw ServerStartError(output: "MODALSTACK_URL \(url) is not a URL")
        }
        return (host, UInt16(components.port ?? 80))
    }
}

public struct ServerStartError: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "the server did not start:\n\(output)" }
}

extension Process {
    /// `waitUntilExit()` without its run loop: on Linux that call runs `RunLoop.current` on the
    /// calling thread, and when that thread (a shared worker) later exits, Foundation's run-loop
    /// clean-up allocates after ThreadSanitizer has retired the thread, which crashes the
    /// `--sanitize thread` run. Polling `isRunning` needs no run loop, but then the `Process` is
    /// never freed (see ``ChildProcess``): only for a few children, as StorageAvailabilityTests'
    /// lock holder, whose standard input is a pipe.
    public func waitUntilExitedWithoutRunLoop() {
        while isRunning { usleep(1000) }
    }
}
