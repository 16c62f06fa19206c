import Foundation
import Locking

/// A throwaway PostgreSQL server for tests: its own cluster in a short temp directory, on a free
/// port of 127.0.0.1 and a unix socket in that directory, tuned for speed (no fsync: the data is
/// thrown away). `initdb` and the server refuse to run as root, so as root they run as the
/// `postgres` user through `runuser`. ``stop()`` (or `deinit`) stops it and removes the directory;
/// a watchdog in a session of its own does the same if the test process dies first (SIGKILL, Ctrl-C).
public final class PostgresServer: @unchecked Sendable {
    /// Where `initdb`, `pg_ctl` and `createdb` are: `MODALSTACK_POSTGRES_BIN`, or the newest
    /// `/usr/lib/postgresql/*/bin` (Debian's layout); nil when PostgreSQL is not installed.
    public static let binDirectory: String? = {
        if let path = ProcessInfo.processInfo.environment["MODALSTACK_POSTGRES_BIN"] { return path }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return
            versions
            .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .max { (Int($0) ?? 0) < (Int($1) ?? 0) }
            .map { "\(root)/\($0)/bin" }
    }()

    /// Why servers cannot be started here, or nil when they can: what a skipped test says.
    public static let unavailableReason: String? = {
        guard let binDirectory else {
            return "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; Debian: postgresql)"
        }
        if let missing = missingTool(["initdb", "pg_ctl", "createdb"], in: binDirectory) { return missing }
        if getuid() == 0 && getpwnam("postgres") == nil {
            return "running as root without a postgres user to run the server as"
        }
        return nil
    }()

    /// Why ``startSynchronousStandby()`` and a failover cannot work here, or nil when they can.
    public static var standbyUnavailableReason: String? {
        unavailableReason ?? binDirectory.flatMap { missingTool(["pg_basebackup", "psql"], in: $0) }
    }

    /// What a skipped test says when one of `tools` is not in `binDirectory`; nil when all are.
    private static func missingTool(_ tools: [String], in binDirectory: String) -> String? {
        tools.first { !FileManager.default.isExecutableFile(atPath: "\(binDirectory)/\($0)") }
            .map { "\(binDirectory)/\($0) is missing" }
    }

    /// Whether ``shared()`` and ``init()`` can start a server on this machine.
    public static var isAvailable: Bool { unavailableReason == nil }

    private static let sharedServer = LockedValue<PostgresServer?>(nil)

    /// One server for the whole test process, started on first use: a test takes a database of
    /// its own with ``createDatabase(_:)`` (tens of milliseconds) instead of a cluster (about a second).
    public static func shared() throws -> PostgresServer {
        try sharedServer.withLock { server throws -> PostgresServer in
            if let server { return server }
            let started = try PostgresServer()
            server = started
            return started
        }
    }

    /// The cluster's directory: the data directory, the log and the socket are in it.
    public let directory: String
    /// The directory of the unix socket (`host=` in a connection string).
    public var socketDirectory: String { directory }
    public let port: UInt16
    private let stopped = LockedValue(false)
    private let databaseCounter = LockedValue(0)
    private let watchdog: pid_t?
    /// Whether the tools run as the postgres user (this process is root).
    private let asPostgres: Bool

    /// Creates, starts and waits for a new cluster; throws with the tools' output when that fails.
    /// - Parameter replicated: a primary for ``startSynchronousStandby()``: its WAL carries what
    ///   a standby needs, and a commit that asks for it waits for the standby to have it.
    public init(replicated: Bool = false) throws {
        if let reason = Self.unavailableReason { throw PostgresServerError(reason) }
        // Short, under /tmp: a unix socket's path is limited to 107 bytes.
        var template = Array("/tmp/mspg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw PostgresServerError("mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
        var owner: (uid: uid_t, gid: gid_t)?
        if getuid() == 0, let user = getpwnam("postgres") {
            owner = (user.pointee.pw_uid, user.pointee.pw_gid)
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        var lastError: (any Error)?
        var startedPort: UInt16?
        do {
            try Self.run(
                "initdb",
                [
                    "-D", "\(directory)/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8",
                    "--no-sync",
                ],
                asPostgres: owner != nil)
            // A primary's WAL carries what a standby replays, and its commits may wait for one.
            let replication =
                replicated
                ? "wal_level = replica\nmax_wal_senders = 4\nsynchronous_standby_names = '\(Self.standbyName)'"
                : "wal_level = minimal\nmax_wal_senders = 0"
            let settings = """

                # ModalStack tests: the data is thrown away, so nothing is synced.
                fsync = off
                synchronous_commit = off
                full_page_writes = off
                \(replication)
                listen_addresses = '127.0.0.1'
                unix_socket_directories = '\(directory)'
                max_connections = 200

                """
            try Self.append(settings, to: "\(directory)/data/postgresql.conf")
            // Another process may take the free port before the server binds it: try a few.
            for _ in 0..<3 where startedPort == nil {
                let port = try Self.freePort()
                do {
                    try Self.run(
                        "pg_ctl",
                        [
                            "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "30",
                            "-o", "-p \(port)", "start",
                        ], asPostgres: owner != nil)
                    startedPort = port
                } catch {
                    lastError = error
                }
            }
        } catch {
            lastError = error
        }
        guard let startedPort else {
            try? FileManager.default.removeItem(atPath: directory)
            throw lastError ?? PostgresServerError("the server did not start")
        }
        port = startedPort
        asPostgres = owner != nil
        watchdog = Self.startWatchdog(directory: directory, asPostgres: owner != nil)
    }

    deinit { stop() }

    /// Stops the server (`pg_ctl -m fast stop`) and removes its directory; later calls do nothing.
    public func stop() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        stopPgBouncer()
        if standbyPort != nil {
            try? Self.run("pg_ctl", ["-D", standbyData, "-m", "immediate", "-w", "stop"], asPostgres: asPostgres)
        }
        try? stopServer()
        if let watchdog {
            kill(watchdog, SIGKILL)
            waitpid(watchdog, nil, 0)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: A synchronous standby, and failover

    /// The standby's `application_name`, which the primary's `synchronous_standby_names` waits for.
    static let standbyName = "standby1"

    private var standbyData: String { "\(directory)/standby" }
    /// The standby's port, once ``startSynchronousStandby()`` started it.
    public private(set) var standbyPort: UInt16?

    /// Copies the primary (`pg_basebackup`) into a standby that streams from it under
    /// ``standbyName``, starts it on a port of its own and waits until the primary counts it as
    /// its synchronous standby. Needs a server made with `replicated: true`.
    public func startSynchronousStandby() throws {
        try Self.run(
            "pg_basebackup",
            ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-D", standbyData, "-R", "-X", "stream"],
            asPostgres: asPostgres)
        // -R wrote a primary_conninfo without a name; a later line wins.
        let settings = """

            primary_conninfo = 'host=127.0.0.1 port=\(port) user=postgres application_name=\(Self.standbyName)'

            """
        try Self.append(settings, to: "\(standbyData)/postgresql.auto.conf")
        let standby = try Self.freePort()
        try Self.run(
            "pg_ctl",
            ["-D", standbyData, "-l", "\(directory)/standby.log", "-w", "-t", "30", "-o", "-p \(standby)", "start"],
            asPostgres: asPostgres)
        standbyPort = standby
        let synchronous = waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
            (try? psql(
                port: port, "SELECT sync_state FROM pg_stat_replication WHERE application_name = '\(Self.standbyName)'"))
                == "sync"
        }
        guard synchronous else { throw PostgresServerError("the standby did not become synchronous") }
    }

    /// kill -9 of the primary's postmaster, as a machine that died: its backends end once they
    /// notice, and nothing is shut down cleanly.
    public func killPrimary() throws {
        let pidFile = try String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
            throw PostgresServerError("no postmaster pid in \(directory)/data/postmaster.pid")
        }
        kill(pid, SIGKILL)
    }

    /// Makes the standby the primary (`pg_ctl promote`, waiting until it accepts writes), then
    /// has it stop waiting for a synchronous standby of its own, which it does not have: the
    /// primary's `synchronous_standby_names` came with the copy, and would hold every commit.
    /// A failover manager does the same until it attaches a new standby.
    public func promoteStandby() throws {
        guard let standbyPort else { throw PostgresServerError("no standby to promote") }
        try Self.run("pg_ctl", ["-D", standbyData, "-w", "-t", "30", "promote"], asPostgres: asPostgres)
        try psql(port: standbyPort, "ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()")
    }

    /// A libpq string for `database` on the primary and the standby, in that order, which
    /// connects to whichever of them accepts writes (`target_session_attrs=read-write`).
    public func failoverConnectionString(database: String) -> String {
        "host=127.0.0.1,127.0.0.1 port=\(port),\(standbyPort ?? port) user=postgres dbname=\(database) "
            + "target_session_attrs=read-write connect_timeout=2"
    }

    /// Runs `statements` with `psql` on `database` at 127.0.0.1:`port`, in order; returns what they
    /// printed, unaligned and without headers (one value for one query of one value).
    @discardableResult
    private func psql(port: UInt16, database: String = "postgres", _ statements: String...) throws -> String {
        let arguments = ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-At"]
        return try Self.run("psql", arguments + statements.flatMap { ["-c", $0] }, asPostgres: false)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Appends `settings` to a server's configuration file.
    private static func append(_ settings: String, to path: String) throws {
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        file.seekToEndOfFile()
        file.write(Data(settings.utf8))
        try file.close()
    }

    /// Stops the server and keeps its directory: for a test of a database that went away.
    public func stopServer() throws {
        try Self.run("pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "stop"], asPostgres: asPostgres)
    }

    /// Starts the server again after ``stopServer()``, on the same port and socket.
    public func startServer() throws {
        try Self.run(
            "pg_ctl",
            [
                "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "30", "-o", "-p \(port)",
                "start",
            ],
            asPostgres: asPostgres)
    }

    /// Creates a new, empty database and returns its name: `prefix` and a counter.
    public func createDatabase(_ prefix: String = "test") throws -> String {
        let number = databaseCounter.withLock { counter in
            counter += 1
            return counter
        }
        let name = "\(prefix)_\(number)"
        try Self.run(
            "createdb", ["-h", socketDirectory, "-p", String(port), "-U", "postgres", "-T", "template0", name],
            asPostgres: false)
        return name
    }

    /// A libpq connection string for `database` over the unix socket.
    public func connectionString(database: String) -> String {
        "host=\(socketDirectory) port=\(port) user=postgres dbname=\(database)"
    }

    /// A `postgresql://` URL for `database` over TCP on 127.0.0.1: on the server's port, or
    /// another (a PgBouncer's).
    public func url(database: String, port: UInt16? = nil) -> String {
        "postgresql://postgres@127.0.0.1:\(port ?? self.port)/\(database)"
    }

    // MARK: A table held locked

    /// Takes an exclusive lock on `table` of `database` and holds it until ``release(_:)``: every
    /// statement that reads the table waits meanwhile, as on a database that stopped answering.
    /// Returns once the lock is held.
    public func lock(table: String, database: String) throws -> ChildProcess {
        let holder = try ChildProcess(
            "\(Self.binDirectory ?? "")/psql",
            [
                "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-c",
                "BEGIN; LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600)",
            ], environment: ["PGAPPNAME": Self.lockHolderName])
        let held = try waitUntil(timeout: .seconds(10)) {
            try psql(
                port: port, database: database,
                "SELECT count(*) FROM pg_locks WHERE relation = '\(table)'::regclass AND mode = 'AccessExclusiveLock' AND granted"
            ) == "1"
        }
        guard held else {
            holder.send(SIGKILL)
            _ = holder.waitForExit()
            throw PostgresServerError("no exclusive lock on \(table) within 10 s")
        }
        return holder
    }

    /// Ends the lock's transaction (its backend is terminated) and waits for its holder to exit.
    public func release(_ holder: ChildProcess) throws {
        try psql(
            port: port,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(Self.lockHolderName)'")
        _ = holder.waitForExit()
    }

    private static let lockHolderName = "modalstack_test_lock"

    // MARK: PgBouncer

    /// Where Debian's `pgbouncer` package puts the pooler.
    public static let pgBouncerPath = "/usr/sbin/pgbouncer"

    /// Why ``startPgBouncer(poolSize:)`` cannot work here, or nil when it can.
    public static var pgBouncerUnavailableReason: String? {
        if let unavailableReason { return unavailableReason }
        return FileManager.default.isExecutableFile(atPath: pgBouncerPath)
            ? nil : "PgBouncer is not installed (no \(pgBouncerPath); Debian: pgbouncer)"
    }

    private var pgBouncerPIDFile: String { "\(directory)/pgbouncer.pid" }

    /// Starts PgBouncer in transaction mode in front of this server, on a free port of 127.0.0.1
    /// (see ``url(database:port:)``), with at most `poolSize` server connections per database:
    /// at 1, every client's transactions take turns on one PostgreSQL session. It stops with the
    /// server (``stop()``, or the watchdog).
    public func startPgBouncer(poolSize: Int) throws -> UInt16 {
        if let reason = Self.pgBouncerUnavailableReason { throw PostgresServerError(reason) }
        let users = "\(directory)/pgbouncer-users.txt"
        try Data("\"postgres\" \"\"\n".utf8).write(to: URL(fileURLWithPath: users))
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try Self.freePort()
            let configuration = """
                [databases]
                * = host=\(socketDirectory) port=\(self.port)

                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(users)
                pool_mode = transaction
                default_pool_size = \(poolSize)
                max_client_conn = 500
                pidfile = \(pgBouncerPIDFile)
                logfile = \(directory)/pgbouncer.log

                """
            let path = "\(directory)/pgbouncer.ini"
            try Data(configuration.utf8).write(to: URL(fileURLWithPath: path))
            do {
                // -d: it detaches once listening, so the port is ready when this returns.
                try Self.run(Self.pgBouncerPath, ["-d", path], asPostgres: asPostgres)
                return port
            } catch {
                lastError = error
            }
        }
        throw lastError ?? PostgresServerError("PgBouncer did not start")
    }

    /// Stops the PgBouncer of ``startPgBouncer(poolSize:)``, if one runs.
    private func stopPgBouncer() {
        guard let text = try? String(contentsOfFile: pgBouncerPIDFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        // Not SIGTERM: PgBouncer 1.18 was seen to outlive it, its server already gone.
        kill(pid, SIGKILL)
    }

    /// The server's log so far, for a failing test's message.
    public func log() -> String {
        (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? ""
    }

    /// Runs one of the PostgreSQL tools to its end; throws with its output unless it exits 0.
    /// `tool` is a name in ``binDirectory``, or a path. Returns what it wrote.
    @discardableResult
    private static func run(_ tool: String, _ arguments: [String], asPostgres: Bool) throws -> String {
        guard let binDirectory else { throw PostgresServerError("PostgreSQL is not installed") }
        let path = tool.hasPrefix("/") ? tool : "\(binDirectory)/\(tool)"
        let command = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments
        // Into a file, not a pipe: the server that `pg_ctl` starts would hold a pipe open until it stops.
        var template = Array("/tmp/mspg-output-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw PostgresServerError("mkstemp failed: errno \(errno)") }
        let outputPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer {
            close(descriptor)
            unlink(outputPath)
        }
        let status = try spawnAndWait(command, output: descriptor)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw PostgresServerError("\(tool) \(arguments.joined(separator: " ")) failed (\(status)):\n\(text)")
        }
        return text
    }

    /// posix_spawn and waitpid, run from /tmp (a directory the postgres user can enter), standard
    /// input from /dev/null and both outputs into `output`. Not Foundation's Process: its exit
    /// monitoring was seen to miss a child's exit here, leaving `isRunning` true for a zombie.
    private static func spawnAndWait(_ command: [String], output: Int32) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // env -C: from a directory the postgres user can enter.
        let arguments: [UnsafeMutablePointer<CChar>?] =
            (["/usr/bin/env", "-C", "/tmp"] + command).map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, arguments, environ)
        guard spawned == 0 else { throw PostgresServerError("posix_spawn \(command[0]) failed: \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw PostgresServerError("waitpid failed: errno \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS, which do not import.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// A port of 127.0.0.1 that nothing listens on right now.
    private static func freePort() throws -> UInt16 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw PostgresServerError("socket failed: errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        guard bound else { throw PostgresServerError("bind failed: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A shell in a session of its own (so Ctrl-C of the tests does not reach it) that waits for
    /// this process to end, then stops the server and removes its directory.
    private static func startWatchdog(directory: String, asPostgres: Bool) -> pid_t? {
        guard let binDirectory else { return nil }
        let runAs = asPostgres ? "/usr/sbin/runuser -u postgres -- " : ""
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 0.5; done
            [ -f '\(directory)/pgbouncer.pid' ] && kill -9 "$(cat '\(directory)/pgbouncer.pid')"
            [ -d '\(directory)/standby' ] && \(runAs)'\(binDirectory)/pg_ctl' -D '\(directory)/standby' -m immediate -w stop
            \(runAs)'\(binDirectory)/pg_ctl' -D '\(directory)/data' -m immediate -w stop
            rm -rf '\(directory)'
            """
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in 0...2 {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_RDWR, 0)
        }
        let command: [String] = ["/usr/bin/setsid", "/usr/bin/env", "-C", "/tmp", "/bin/sh", "-c", script]
        let arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/usr/bin/setsid", &actions, nil, arguments, environ) == 0 else { return nil }
        return pid
    }
}

public struct PostgresServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
