import CMicroHTTPD
import Dispatch
import Glibc
import Locking
import Synchronization
import Timekeeping

/// Drops connections that take too long to send a request (slowloris).
///
/// libmicrohttpd's connection timeout counts idle time and restarts with every byte received, so a
/// client trickling its request one byte at a time would hold its connection for ever. Here each
/// connection waiting for a request — just accepted, or its previous response sent — has a
/// deadline by which the whole request, head and body, must be in. Once a second the sockets of
/// connections past their deadline are shut down; libmicrohttpd sees them fail and closes them. A
/// request being answered (including a suspended long poll or an open stream) has no deadline.
///
/// A socket is shut down under the lock that libmicrohttpd's close notification takes before the
/// descriptor is closed, so a descriptor number reused by a newer connection is never hit.
final class RequestDeadlines: Sendable {
    /// One connection's socket and deadline (monotonic nanoseconds; 0 while a request is answered).
    final class Entry: Sendable {
        fileprivate let socket: Int32
        fileprivate let deadline: Atomic<Int64>

        fileprivate init(socket: Int32, deadline: Int64) {
            self.socket = socket
            self.deadline = Atomic(deadline)
        }
    }

    private let timeoutNanoseconds: Int64
    private let time: any TimeSource
    private let connections = LockedValue<[ObjectIdentifier: Entry]>([:])
    private let timer = LockedValue<(any DispatchSourceTimer)?>(nil)

    /// - Parameters:
    ///   - timeoutSeconds: The time a connection has to send each request; 0 turns the deadlines off
    ///     (as it turns off libmicrohttpd's idle timeout).
    ///   - time: Where the deadlines are read from (its monotonic clock).
    init(timeoutSeconds: Int, time: any TimeSource) {
        timeoutNanoseconds = Int64(max(0, timeoutSeconds)) * 1_000_000_000
        self.time = time
    }

    private var isEnabled: Bool { timeoutNanoseconds > 0 }

    /// Starts checking the deadlines once a second.
    func start() {
        guard isEnabled else { return }
        timer.withLock { timer in
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "modalstack.request-deadlines"))
            source.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(100))
            // The handler holds the table, not `self`: a weak reference to `self` outlived the
            // server until exit (LeakSanitizer reported it), and a strong one would be a cycle.
            let connections = connections
            let time = time
            source.setEventHandler { Self.dropExpired(connections, now: time.monotonicNanoseconds()) }
            source.resume()
            timer = source
        }
    }

    /// Stops checking; connections still open are left to libmicrohttpd.
    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    /// A connection was accepted: its first request is due within the timeout. Returns its entry, to
    /// be kept in the connection's socket context until ``connectionClosed(_:)``.
    func connectionOpened(socket: Int32) -> Entry? {
        guard isEnabled, socket >= 0 else { return nil }
        let entry = Entry(socket: socket, deadline: time.monotonicNanoseconds() + timeoutNanoseconds)
        connections.withLock { $0[ObjectIdentifier(entry)] = entry }
        return entry
    }

    /// libmicrohttpd is about to close the connection's socket.
    func connectionClosed(_ entry: Entry) {
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(entry)) }
    }

    /// The connection's request is in and being answered: no deadline until it is over.
    func requestReceived(on entry: Entry?) {
        entry?.deadline.store(0, ordering: .relaxed)
    }

    /// The connection's request is over: the next one is due within the timeout.
    func requestEnded(on entry: Entry?) {
        entry?.deadline.store(time.monotonicNanoseconds() + timeoutNanoseconds, ordering: .relaxed)
    }

    /// Shuts down the connections past their deadline now, rather than at the timer's next check:
    /// for tests that move ``HTTPServer/Configuration/time`` by hand.
    func dropExpired() {
        Self.dropExpired(connections, now: time.monotonicNanoseconds())
    }

    private static func dropExpired(_ connections: LockedValue<[ObjectIdentifier: Entry]>, now: Int64) {
        connections.withLock { connections in
            for entry in connections.values {
                let deadline = entry.deadline.load(ordering: .relaxed)
                guard deadline != 0, deadline < now else { continue }
                entry.deadline.store(0, ordering: .relaxed)
                shutdown(entry.socket, Int32(SHUT_RDWR))
            }
        }
    }
}
