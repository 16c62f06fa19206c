import Glibc
import Locking

/// A program run as a child process with `posix_spawn`: the one place the tests start processes
/// (the server, the sqlite3 shell, python3).
///
/// Not Foundation's `Process`, for two faults of swift-corelibs-foundation 6.3.1 on Linux
/// (Sources/Foundation/Process.swift) that together crashed the soak:
/// - `run()` finds the highest open descriptor by reading `/proc/self/fd`, copying each entry's
///   whole 256-byte `d_name` (`findMaximumOpenFromProcSelfFD`) although readdir's entries are
///   about 24 bytes. Once some 1,350 descriptors are open, readdir's 32 KiB buffer is full and the
///   copy reads past its end: a segmentation fault in `memmove` when the buffer ends a heap
///   (fixed upstream after 6.3.1, swift-corelibs-foundation#5472).
/// - A `Process` waited for by polling `isRunning` (`waitUntilExit()` runs a run loop, which
///   crashes the ThreadSanitizer run) is never freed: the run-loop source made by `run()` holds
///   it, and only `waitUntilExit()` lets go. Its pipes stay open with it, two or so descriptors
///   per child, which is how the soak's 200 trials reached those 1,350.
///
/// Here the child gets only its three standard streams (`posix_spawn_file_actions_addclosefrom_np`),
/// signals at their defaults and none blocked, as a shell would start it; every descriptor the
/// parent holds is closed when its owner goes away, and the child is reaped with `waitpid`.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `reaped` is only reached under its lock; the rest is immutable.

    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe, read by the parent through ``standardOutput`` or ``standardError``.
        case pipe
        /// The end of a file, created when missing.
        case appending(toFile: String)
    }

    public let processID: pid_t
    /// The child's standard output, when it goes to a pipe.
    public let standardOutput: PipeReader?
    /// The child's standard error, when it goes to a pipe.
    public let standardError: PipeReader?
    /// The exit status once the child is reaped; its pid may belong to another process from then.
    private let reaped = LockedValue<Int32?>(nil)

    /// Starts `path` with `arguments`, standard input from `/dev/null`.
    /// - Parameter environment: the child's whole environment; by default this process's.
    public init(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil,
        standardOutput: Output = .null, standardError: Output = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        var childEnds: [Int32] = []
        defer {
            for end in childEnds { close(end) }
        }
        func route(_ output: Output, to descriptor: Int32) throws -> PipeReader? {
            switch output {
            case .null:
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
                return nil
            case .appending(let file):
                posix_spawn_file_actions_addopen(&actions, descriptor, file, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                return nil
            case .pipe:
                let (readEnd, writeEnd) = try Self.makePipe()
                childEnds.append(writeEnd)
                posix_spawn_file_actions_adddup2(&actions, writeEnd, descriptor)
                return PipeReader(descriptor: readEnd)
            }
        }
        self.standardOutput = try route(standardOutput, to: STDOUT_FILENO)
        self.standardError = try route(standardError, to: STDERR_FILENO)
        let closeFrom = try Self.addCloseFrom()
        guard closeFrom(&actions, STDERR_FILENO + 1) == 0 else {
            throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np failed")
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Whatever the spawning thread blocks or this process ignores (SIGPIPE, say), the child
        // starts with no signal blocked and each at its default, as a shell would start it.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer {
            for argument in argv { free(argument) }
        }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            for variable in envp ?? [] { free(variable) }
        }
        var pid: pid_t = 0
        let status =
            if let envp {
                posix_spawn(&pid, path, &actions, &attributes, argv, envp)
            } else {
                posix_spawn(&pid, path, &actions, &attributes, argv, environ)
            }
        guard status == 0 else {
            throw ChildProcessError("posix_spawn \(path): \(String(cString: strerror(status)))")
        }
        processID = pid
    }

    deinit {
        if reaped.withLock({ $0 == nil }) {
            send(SIGKILL)
            _ = waitForExit()
        }
    }

    /// Sends `signal`, unless the child was reaped (its pid may be another process's by then).
    public func send(_ signal: Int32) {
        reaped.withLock { status in
            if status == nil { kill(processID, signal) }
        }
    }

    /// Whether the child has not exited yet.
    public var isRunning: Bool {
        if reaped.withLock({ $0 != nil }) { return false }
        var info = siginfo_t()
        // WNOWAIT: looks without reaping, so that only `waitForExit` reaps.
        let result = waitid(P_PID, id_t(processID), &info, WEXITED | WNOHANG | WNOWAIT)
        // With WNOHANG, a child still running leaves `info` zeroed (no pid, no code).
        return result == 0 && info.si_signo == 0
    }

    /// Waits for the child to end and reaps it; returns its exit status, or 128 + the signal's
    /// number when a signal ended it (as a shell says). Later calls return the same.
    public func waitForExit() -> Int32 {
        // Waits without reaping, so that no lock is held while waiting: `send` may come meanwhile.
        var info = siginfo_t()
        while waitid(P_PID, id_t(processID), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        return reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            while waitpid(processID, &status, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which do not import.
            let exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            reaped = exitStatus
            return exitStatus
        }
    }

    /// Runs a program to its end: its exit status (as ``waitForExit()`` gives it), standard output
    /// and standard error, both read as they come so that a full pipe never blocks the child.
    public static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (
        status: Int32, output: [UInt8], error: [UInt8]
    ) {
        let child = try ChildProcess(
            path, arguments, environment: environment, standardOutput: .pipe, standardError: .pipe)
        let (output, error) = PipeReader.readToEnd(child.standardOutput!, child.standardError!)
        return (child.waitForExit(), output, error)
    }

    /// A pipe whose ends are closed on exec, so that no child started meanwhile by another thread
    /// (with Foundation, say) holds its write end open.
    private static func makePipe() throws -> (readEnd: Int32, writeEnd: Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw ChildProcessError("pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), found at run time:
    /// Swift imports `spawn.h` without `_GNU_SOURCE`, so not its GNU extensions.
    private static func addCloseFrom() throws -> AddCloseFrom {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw ChildProcessError(
                "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }
}

/// The read end of a pipe from a child process; closed when the object goes away.
public final class PipeReader: @unchecked Sendable {
    // @unchecked Sendable: read by one thread at a time (the one that holds it).

    public let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// The bytes that arrive first: some bytes, `[]` once the writer closed its end, nil when
    /// `deadline` passed with nothing.
    public func read(before deadline: ContinuousClock.Instant) -> [UInt8]? {
        while true {
            let left = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = Int32(clamping: max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let count = poll(&ready, 1, milliseconds)
            if count < 0 && errno == EINTR { continue }
            return count > 0 ? readChunk() : nil
        }
    }

    /// Everything until the writer closes its end.
    public func readToEnd() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            let chunk = readChunk()
            if chunk.isEmpty { return bytes }
            bytes += chunk
        }
    }

    /// Reads until the writer closes its end, keeping nothing.
    public func discardToEnd() {
        while !readChunk().isEmpty {}
    }

    /// Both pipes to their ends, each read as its bytes come, on the calling thread.
    static func readToEnd(_ first: PipeReader, _ second: PipeReader) -> ([UInt8], [UInt8]) {
        let readers = [first, second]
        var outputs: [[UInt8]] = [[], []]
        var open = [true, true]
        while open.contains(true) {
            // A negative descriptor is skipped by poll.
            var ready = readers.indices.map {
                pollfd(fd: open[$0] ? readers[$0].descriptor : -1, events: Int16(POLLIN), revents: 0)
            }
            if poll(&ready, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in readers.indices where open[index] && ready[index].revents != 0 {
                let chunk = readers[index].readChunk()
                if chunk.isEmpty { open[index] = false } else { outputs[index] += chunk }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// One read(2), blocking until something comes: some bytes, or `[]` at the end (or on an error).
    private func readChunk() -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let length = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if length < 0 && errno == EINTR { continue }
            return length > 0 ? Array(chunk[..<length]) : []
        }
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
