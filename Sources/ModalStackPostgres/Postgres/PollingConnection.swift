import CLibPQ
import Glibc

/// A libpq connection driven by its asynchronous API on a thread of its own, which waits in
/// poll(2) on the connection's socket and on a pipe that wakes it: no call blocks anywhere else,
/// so whoever writes to the pipe can always stop the thread.
enum PollingConnection {
    /// Connects without blocking outside `wait` (PQconnectStart and PQconnectPoll); the error when
    /// it failed or `wait` returned false. A host name is still looked up synchronously.
    static func connect(_ connectionString: String, wait: (OpaquePointer, Int32) -> Bool) -> Result<
        OpaquePointer, PostgresError
    > {
        guard let connection = PostgresConnection.withDefaults(connectionString, { PQconnectStartParams($0, $1, 1) })
        else {
            return .failure(
                PostgresError(sqlState: nil, message: "libpq could not allocate a connection", connectionBroken: true))
        }
        // As libpq's documentation says: a first PQconnectPoll once the socket is writable.
        var polling = PQstatus(connection) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING
        while polling == PGRES_POLLING_READING || polling == PGRES_POLLING_WRITING {
            guard wait(connection, polling == PGRES_POLLING_READING ? POLLIN : POLLOUT) else { break }
            polling = PQconnectPoll(connection)
        }
        guard polling == PGRES_POLLING_OK else {
            let error = PostgresError(result: nil, connection: connection)
            PQfinish(connection)
            return .failure(error)
        }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        return .success(connection)
    }

    /// Blocks until the connection's socket is ready for `events` (true), or `wake` is readable or
    /// `timeoutMilliseconds` passed (false; -1 waits without a limit). An error or a hang-up counts
    /// as ready: the next libpq call reports it.
    static func wait(for connection: OpaquePointer, events: Int32, wake: Int32, timeoutMilliseconds: Int32 = -1)
        -> Bool
    {
        let socket = PQsocket(connection)
        // poll ignores a negative descriptor and would wait for the wake alone.
        guard socket >= 0 else { return true }
        var descriptors = [
            pollfd(fd: socket, events: Int16(events), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        var ready: Int32
        repeat { ready = poll(&descriptors, 2, timeoutMilliseconds) } while ready < 0 && errno == EINTR
        return ready > 0 && descriptors[1].revents == 0
    }

    /// A pipe for waking the thread: its reading end is readable once a byte was written.
    /// Not an eventfd: Swift's Glibc module exports neither `sys/eventfd.h` nor `pipe2`.
    static func makeWakePipe() -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        let status = pipe(&ends)
        precondition(status == 0, "pipe failed: errno \(errno)")
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }
}

extension PollingConnection {
    /// Starts a thread of its own that runs `body`: a POSIX thread, not one of Dispatch's, as it
    /// spends its life waiting in poll(2).
    static func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { raw in
                Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
                return nil
            }, Unmanaged.passRetained(ThreadBody(body)).toOpaque())
        precondition(status == 0, "pthread_create failed: \(status)")
        return thread
    }

    private final class ThreadBody {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
