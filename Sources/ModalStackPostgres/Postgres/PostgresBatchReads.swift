import CLibPQ
import Glibc
import Locking

/// Answers many callers' reads with one statement per round trip, on a connection and a thread of
/// its own, without holding any caller's thread: a caller queues its read (``submit(_:)``) and is
/// answered later on this thread. Each round trip takes every read queued while the one before it
/// ran (up to `maxBatch`), so under load one round trip answers hundreds; with a `maxBatch` of 1,
/// each read can bring a statement of its own.
///
/// The thread drives the connection with libpq's asynchronous API (`PQsendQueryParams`,
/// `PQconsumeInput`, `PQisBusy`), waiting in poll(2) on its socket and on a pipe that wakes it. A
/// connection that broke is opened again for the next round trip; a round trip that failed on a
/// connection that had sat idle runs once more on a new one (a read can always run again).
final class PostgresBatchReads<Read: Sendable>: Sendable {
    /// The statement for the reads of one round trip. When it is prepared, its text is the same
    /// for every round trip; only its parameters change.
    typealias Statement = @Sendable ([Read]) -> PostgresConnection.Statement
    /// Answers the reads of one round trip with its rows, or its error.
    typealias Deliver = @Sendable ([Read], Result<PostgresRows, PostgresError>) -> Void

    private let connectionString: String
    private let maxBatch: Int
    private let statement: Statement
    /// Whether the statement is prepared once per connection (see ``PostgresConnection``).
    private let preparesStatement: Bool
    private let deliver: Deliver
    private let wake = PollingConnection.makeWakePipe()
    private let state = LockedValue(State())
    private let thread = LockedValue(ThreadPhase.notStarted)

    private enum ThreadPhase {
        case notStarted
        case running(pthread_t)
        case stopped
    }

    private struct State {
        var queued: [Read] = []
        /// The thread waits for the pipe: the next read queued must write to it.
        var sleeping = false
        /// A read was queued: the thread runs, or its first reader is starting it.
        var threadStarted = false
        var stopped = false
        /// The pipe is closed: the thread ended, and no read is queued any more.
        var pipeClosed = false
    }

    /// How long connecting may take before the queued reads fail (libpq's `connect_timeout`
    /// does not apply to PQconnectPoll).
    private static var connectTimeoutMilliseconds: Int32 { 5_000 }

    init(
        connectionString: String, preparesStatement: Bool, maxBatch: Int = 1_000, statement: @escaping Statement,
        deliver: @escaping Deliver
    ) {
        self.connectionString = connectionString
        self.preparesStatement = preparesStatement
        self.maxBatch = maxBatch
        self.statement = statement
        self.deliver = deliver
        _ = fcntl(wake.read, F_SETFL, fcntl(wake.read, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        closePipe()
    }

    /// Queues a read, starting the thread on the first. After ``stop()`` the read is answered at
    /// once with the store's closed error.
    func submit(_ read: Read) {
        let (accepted, starts) = state.withLock { state in
            guard !state.stopped else { return (false, false) }
            state.queued.append(read)
            if state.sleeping {
                state.sleeping = false
                signal()
            }
            defer { state.threadStarted = true }
            return (true, !state.threadStarted)
        }
        guard accepted else { return deliver([read], .failure(PostgresPool.closedError)) }
        // Only the first read takes the thread's lock: one queued by the thread itself (from an
        // answer) must not wait for it while stop() holds it to join the thread.
        guard starts else { return }
        thread.withLock { thread in
            // The thread holds the reader until `run` returns.
            if case .notStarted = thread { thread = .running(PollingConnection.startThread { self.run() }) }
        }
    }

    /// Fails the reads still queued, ends the round trip under way (its reads fail too) and waits
    /// for the thread to end. Later reads fail at once.
    func stop() {
        state.withLock { state in
            if !state.stopped { signal() }
            state.stopped = true
        }
        let ran = thread.withLock { thread in
            defer { thread = .stopped }
            guard case .running(let running) = thread else { return false }
            pthread_join(running, nil)
            return true
        }
        // Stopped before the first reader started the thread: no thread answers what it queued.
        if !ran { failQueued() }
        closePipe()
    }

    /// Answers the reads still queued with the store's closed error.
    private func failQueued() {
        let left = state.withLock { state in
            defer { state.queued = [] }
            return state.queued
        }
        if !left.isEmpty { deliver(left, .failure(PostgresPool.closedError)) }
    }

    /// Closes the pipe once; its descriptors would otherwise stay open until the store is freed.
    private func closePipe() {
        let open = state.withLock { state in
            defer { state.pipeClosed = true }
            return !state.pipeClosed
        }
        guard open else { return }
        close(wake.read)
        close(wake.write)
    }

    private func signal() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    // MARK: - The thread

    private func run() {
        var connection: OpaquePointer?
        defer { if let connection { PQfinish(connection) } }
        while let batch = nextBatch() {
            deliver(batch, roundTrip(batch, on: &connection))
        }
        failQueued()
    }

    /// The reads queued, up to `maxBatch`, waiting while there are none; nil once stopped.
    private func nextBatch() -> [Read]? {
        while true {
            let taken = state.withLock { state -> [Read]? in
                guard !state.stopped else { return nil }
                guard !state.queued.isEmpty else {
                    state.sleeping = true
                    return []
                }
                let batch = Array(state.queued.prefix(maxBatch))
                state.queued.removeFirst(batch.count)
                return batch
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            var descriptor = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
            while poll(&descriptor, 1, -1) < 0 && errno == EINTR {}
            var drained = [UInt8](repeating: 0, count: 64)
            while read(wake.read, &drained, drained.count) > 0 {}
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func roundTrip(_ batch: [Read], on connection: inout OpaquePointer?) -> Result<PostgresRows, PostgresError>
    {
        let statement = statement(batch)
        var reused = connection != nil
        while true {
            if connection == nil {
                switch connect() {
                case .success(let opened): connection = opened
                case .failure(let error): return .failure(error)
                }
                if preparesStatement, case .failure(let error) = prepare(on: connection!) {
                    PQfinish(connection)
                    connection = nil
                    return .failure(error)
                }
            }
            let result = send(statement, on: connection!)
            guard case .failure(let error) = result, error.connectionBroken else { return result }
            PQfinish(connection)
            connection = nil
            guard reused, !isStopped else { return result }
            reused = false
        }
    }

    private func connect() -> Result<OpaquePointer, PostgresError> {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Self.connectTimeoutMilliseconds))
        let opened = PollingConnection.connect(connectionString) { connection, events in
            let left = ContinuousClock.now.duration(to: deadline) / .milliseconds(1)
            return left > 0
                && PollingConnection.wait(
                    for: connection, events: events, wake: wake.read, timeoutMilliseconds: Int32(left.rounded(.up)))
        }
        switch opened {
        case .failure(let error) where error.message.isEmpty:
            return .failure(
                PostgresError(
                    sqlState: nil, message: "no connection within \(Self.connectTimeoutMilliseconds) ms",
                    connectionBroken: true))
        case .failure: return opened
        case .success(let connection):
            guard PQsetnonblocking(connection, 1) == 0 else {
                let error = PostgresError(result: nil, connection: connection)
                PQfinish(connection)
                return .failure(error)
            }
            return opened
        }
    }

    private static var statementName: String { "batch_read" }

    /// Sends the statement (prepared, when statements are) and reads its result, waiting only in poll(2).
    private func send(_ statement: PostgresConnection.Statement, on connection: OpaquePointer) -> Result<
        PostgresRows, PostgresError
    > {
        let sent = PostgresConnection.withValues(statement.parameters) { values, count in
            guard preparesStatement else {
                return PQsendQueryParams(connection, statement.sql, count, nil, values, nil, nil, 0)
            }
            return PQsendQueryPrepared(connection, Self.statementName, count, values, nil, nil, 0)
        }
        guard sent == 1 else { return .failure(error(on: connection)) }
        return receive(on: connection)
    }

    /// Prepares the statement on a new connection, planned once (see ``PostgresConnection``).
    private func prepare(on connection: OpaquePointer) -> Result<PostgresRows, PostgresError> {
        let setting = PostgresConnection.setting(PostgresConnection.preparedStatementSettings)
        guard PQsendQueryParams(connection, setting, 0, nil, nil, nil, nil, 0) == 1 else {
            return .failure(error(on: connection))
        }
        if case .failure(let error) = receive(on: connection) { return .failure(error) }
        let prepared = statement([])
        guard PQsendPrepare(connection, Self.statementName, prepared.sql, Int32(prepared.parameters.count), nil) == 1
        else {
            return .failure(error(on: connection))
        }
        return receive(on: connection)
    }

    /// Flushes what was sent and reads the result, waiting only in poll(2).
    private func receive(on connection: OpaquePointer) -> Result<PostgresRows, PostgresError> {
        // Nonblocking: what did not fit in the socket's buffer is flushed as it drains.
        while true {
            let flushed = PQflush(connection)
            if flushed == 0 { break }
            guard flushed > 0, wait(connection, POLLIN | POLLOUT), PQconsumeInput(connection) == 1 else {
                return .failure(error(on: connection))
            }
        }
        var rows: Result<PostgresRows, PostgresError>?
        while true {
            while PQisBusy(connection) == 1 {
                guard wait(connection, POLLIN), PQconsumeInput(connection) == 1 else {
                    return .failure(error(on: connection))
                }
            }
            guard let result = PQgetResult(connection) else { break }
            if rows == nil {
                rows = Result { () throws(PostgresError) in try PostgresRows(result, connection: connection) }
            } else {
                PQclear(result)
            }
        }
        return rows ?? .failure(error(on: connection))
    }

    /// The connection's error, or the store's closed error once ``stop()`` was called.
    private func error(on connection: OpaquePointer) -> PostgresError {
        isStopped ? PostgresPool.closedError : PostgresError(result: nil, connection: connection)
    }

    /// Waits for the socket; false once ``stop()`` was called.
    private func wait(_ connection: OpaquePointer, _ events: Int32) -> Bool {
        PollingConnection.wait(for: connection, events: events, wake: wake.read) || !isStopped
    }
}
