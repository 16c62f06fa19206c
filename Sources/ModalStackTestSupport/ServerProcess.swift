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
    private var process: Process?
    private var standardError: Pipe?
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
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExitedWithoutRunLoop()
        }
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        let database = databaseURL.map { ["--database-url", $0] } ?? ["--db", databasePath]
        process.arguments = ["--host", "127.0.0.1", "--port", String(requested)] + database + extraArguments
        let pipe = Pipe()
        process.standardError = pipe
        if let standardOutputPath {
            _ = FileManager.default.createFile(atPath: standardOutputPath, contents: nil)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: standardOutputPath))
            output.seekToEndOfFile()
            process.standardOutput = output
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        try process.run()
        self.process = process
        self.standardError = pipe
        port = try Self.waitForListeningPort(pipe.fileHandleForReading)
    }

    /// Sends `signal` and waits for the process to end; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        send(signal)
        return waitForExit()
    }

    /// Sends `signal` without waiting.
    public func send(_ signal: Int32) {
        if let process { kill(process.processIdentifier, signal) }
    }

    /// Waits for the process to end; returns its exit status.
    public func waitForExit() -> Int32 {
        guard let process else { return -1 }
        process.waitUntilExitedWithoutRunLoop()
        self.process = nil
        return process.terminationStatus
    }

    /// Stops the server with `signal` and starts it again on the same database, on `port`: by
    /// default a new free one; a client that keeps the server's URL needs the one it had.
    public func restart(signal: Int32 = SIGTERM, port: UInt16 = 0) throws {
        stop(signal: signal)
        try start(port: port)
    }

    /// The process id of the running server.
    public var processID: Int32? { process?.processIdentifier }

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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binaryPath)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExitedWithoutRunLoop()
        return (process.terminationStatus, output)
    }

    /// Reads stderr until the "listening on HOST:PORT" line; the rest of stderr is drained in the background.
    private static func waitForListeningPort(_ handle: FileHandle) throws -> UInt16 {
        var buffer = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let data = handle.availableData
            if data.isEmpty { break }
            buffer += String(decoding: data, as: UTF8.self)
            if let range = buffer.range(of: #"listening on \S+:(\d+)"#, options: .regularExpression) {
                let match = String(buffer[range])
                let port = UInt16(match.split(separator: ":").last ?? "") ?? 0
                handle.readabilityHandler = { handle in _ = handle.availableData }
                return port
            }
        }
        throw ServerStartError(output: buffer)
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
    /// `--sanitize thread` run. Polling `isRunning` needs no run loop.
    public func waitUntilExitedWithoutRunLoop() {
        while isRunning { usleep(1000) }
    }
}
