import CLibPQ
import Dispatch
import Glibc
import Locking

/// Listens on one notification channel on a connection of its own, on a thread of its own.
///
/// The thread blocks in poll(2) on the connection's socket and a pipe that ``stop()`` writes to,
/// so a notification is handed on as soon as it arrives and a stop needs no timeout. When the
/// connection is lost it connects again (waiting 50 ms, doubling up to 1 s) and runs LISTEN again.
/// Every libpq call that could wait on the server (connecting included) waits in that same poll.
final class PostgresListener: Sendable {
    private let connectionString: String
    private let channel: String
    private let onNotification: @Sendable (String) -> Void
    private let onResubscribed: @Sendable () -> Void
    /// A pipe whose reading end is readable once ``stop()`` wrote to it, and from then on (nothing
    /// reads it).
    private let wake: (read: Int32, write: Int32)
    private let phase = LockedValue(Phase.idle)
    private let listening = LockedValue(false)
    private let firstAttempt = DispatchSemaphore(value: 0)

    private enum Phase {
        case idle
        case running(pthread_t)
        case stopped
    }

    private static let firstBackoffMilliseconds: Int32 = 50
    private static let lastBackoffMilliseconds: Int32 = 1_000

    /// - Parameters:
    ///   - channel: The channel's name as `pg_notify` takes it (case and spaces kept).
    ///   - onNotification: The payload of each NOTIFY on `channel`, in order, on the listener's thread.
    ///   - onResubscribed: Called on the listener's thread whenever LISTEN is in effect again after
    ///     a time without it (the connection was lost, or the first LISTEN of ``start()`` failed):
    ///     notifications of that time are lost, so the caller reads the state again.
    init(
        connectionString: String, channel: String,
        onNotification: @escaping @Sendable (String) -> Void,
        onResubscribed: @escaping @Sendable () -> Void
    ) {
        // PostgreSQL would truncate a longer name (NAMEDATALEN) and then never match it.
        precondition(!channel.isEmpty && channel.utf8.count < 64, "a channel name is 1 to 63 bytes")
        self.connectionString = connectionString
        self.channel = channel
        self.onNotification = onNotification
        self.onResubscribed = onResubscribed
        wake = PollingConnection.makeWakePipe()
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// Whether LISTEN is in effect now.
    var isListening: Bool { listening.withLock { $0 } }

    /// Starts the thread and returns once its first LISTEN succeeded or failed; after a failure
    /// it keeps trying. Does nothing after the first call, or after ``stop()``.
    func start() {
        let started = phase.withLock { phase -> Bool in
            guard case .idle = phase else { return false }
            // The thread holds the listener until `run` returns.
            phase = .running(PollingConnection.startThread { self.run() })
            return true
        }
        if started { firstAttempt.wait() }
    }

    /// Wakes the thread, which closes the connection, and waits for it to end: no callback runs
    /// after this returns. Later calls do nothing. Not from the listener's own callbacks.
    func stop() {
        // The join is under the lock, so a concurrent second call also returns only after it.
        phase.withLock { phase in
            if case .running(let thread) = phase {
                var byte: UInt8 = 1
                _ = write(wake.write, &byte, 1)
                let status = pthread_join(thread, nil)
                precondition(status == 0, "pthread_join failed (\(status)): stop() from a listener's callback?")
            }
            phase = .stopped
        }
    }

    // MARK: - The listener's thread

    private func run() {
        var connection = subscribe()
        firstAttempt.signal()
        var backoff = Self.firstBackoffMilliseconds
        while true {
            if let lost = connection {
                receive(on: lost)
                listening.withLock { $0 = false }
                PQfinish(lost)
                backoff = Self.firstBackoffMilliseconds
            }
            guard pause(milliseconds: backoff) else { return }
            backoff = min(backoff * 2, Self.lastBackoffMilliseconds)
            connection = subscribe()
            if connection != nil { onResubscribed() }
        }
    }

    /// Hands on the channel's notifications until the connection is lost or ``stop()`` is called.
    private func receive(on connection: OpaquePointer) {
        while true {
            // Before waiting: the last read (or LISTEN's reply) may have buffered notifications
            // already, and poll would not report those. A stop skips the rest of a batch, so that
            // it waits for one callback at most.
            while !stopRequested, let notification = PQnotifies(connection) {
                let relname = String(cString: notification.pointee.relname)
                let payload = String(cString: notification.pointee.extra)
                PQfreemem(notification)
                if relname == channel { onNotification(payload) }
            }
            guard wait(for: connection, events: POLLIN), PQconsumeInput(connection) == 1,
                PQstatus(connection) == CONNECTION_OK
            else { return }
        }
    }

    /// Connects and runs LISTEN; nil when either failed or ``stop()`` was called.
    private func subscribe() -> OpaquePointer? {
        guard let connection = connect() else { return nil }
        guard listen(on: connection) else {
            PQfinish(connection)
            return nil
        }
        listening.withLock { $0 = true }
        return connection
    }

    /// PQconnectStart and PQconnectPoll rather than PQconnectdb, which could block ``stop()`` for
    /// as long as a host that does not answer takes to time out. `connect_timeout` does not apply:
    /// PQconnectPoll leaves timing to its caller.
    private func connect() -> OpaquePointer? {
        try? PollingConnection.connect(connectionString, wait: wait(for:events:)).get()
    }

    /// Sends `LISTEN "channel"` and reads its reply without blocking outside ``wait(for:events:)``.
    private func listen(on connection: OpaquePointer) -> Bool {
        guard let quoted = PQescapeIdentifier(connection, channel, channel.utf8.count) else { return false }
        let sql = "LISTEN " + String(cString: quoted)
        PQfreemem(quoted)
        guard PQsendQuery(connection, sql) == 1 else { return false }
        var succeeded = false
        while true {
            while PQisBusy(connection) == 1 {
                guard wait(for: connection, events: POLLIN), PQconsumeInput(connection) == 1 else { return false }
            }
            guard let result = PQgetResult(connection) else { return succeeded }
            succeeded = PQresultStatus(result) == PGRES_COMMAND_OK
            PQclear(result)
        }
    }

    /// Blocks until the connection's socket is ready for `events` (true) or ``stop()`` was called
    /// (false). An error or a hang-up counts as ready: the next libpq call reports it.
    private func wait(for connection: OpaquePointer, events: Int32) -> Bool {
        PollingConnection.wait(for: connection, events: events, wake: wake.read)
    }

    private var stopRequested: Bool { !pause(milliseconds: 0) }

    /// Waits `milliseconds` (true) unless ``stop()`` is called first (false).
    private func pause(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, milliseconds)
            if ready >= 0 || errno != EINTR { return ready == 0 }
        }
    }
}
