import CMicroHTTPD
import Dispatch
import Glibc
import Locking

/// Makes libmicrohttpd read the end of input of clients that half-close (send FIN).
///
/// libmicrohttpd 0.9.75 watches its sockets edge-triggered (`EPOLLET`) and takes a read shorter
/// than it asked for as "nothing more to read" until the next edge (`recv_param_adapter` in
/// connection.c). When a FIN arrives with the bytes before it — a client sends part of a request
/// and half-closes — one short read takes the bytes, no edge follows, and the end of input is never
/// read: the connection stays open until the connection timeout.
///
/// Here each connection's socket is also in an epoll set of its own, for `EPOLLRDHUP` (the FIN).
/// Once the FIN has come and libmicrohttpd has read every byte before it, the socket is shut down
/// for reading: that changes nothing for the connection (its input has ended already) but wakes
/// libmicrohttpd's epoll, so it reads the end of input and does what it does for one: drops a
/// request cut short, closes a connection between requests, and first finishes answering a
/// request that came in whole.
///
/// A socket is shut down under the lock that libmicrohttpd's close notification takes before the
/// descriptor is closed, so a descriptor number reused by a newer connection is never hit; each
/// registration has an id that is never reused, so an event for an ended one is ignored.
final class HalfCloseWatcher: Sendable {
    private struct Registry {
        var epoll: Int32 = -1
        var source: (any DispatchSourceRead)?
        var nextRegistration: UInt64 = 1
        var registrations: [Int32: UInt64] = [:]
        var sockets: [UInt64: Int32] = [:]
    }

    private let registry = LockedValue(Registry())

    /// Creates the epoll set and starts watching it.
    /// - Throws: ``HTTPServerError`` when the epoll set cannot be created.
    func start() throws(HTTPServerError) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else {
            throw HTTPServerError(
                .daemonFailed, "cannot create the half-close watcher: \(String(cString: strerror(errno)))")
        }
        // The handlers hold the registry, not `self` (as in RequestDeadlines).
        let table = registry
        let queue = DispatchQueue(label: "modalstack.half-close-watcher")
        registry.withLock { registry in
            let source = DispatchSource.makeReadSource(fileDescriptor: epoll, queue: queue)
            source.setEventHandler { Self.takeEvents(epoll: epoll, table, queue) }
            source.setCancelHandler { close(epoll) }
            source.resume()
            registry.epoll = epoll
            registry.source = source
        }
    }

    /// Stops watching and closes the epoll set. Called once libmicrohttpd closed every connection.
    func stop() {
        registry.withLock { registry in
            registry.source?.cancel()
            registry.source = nil
            registry.epoll = -1
            registry.registrations = [:]
            registry.sockets = [:]
        }
    }

    /// A connection was set up: its socket is watched until ``connectionClosed(socket:)``.
    func connectionOpened(socket: Int32) {
        registry.withLock { registry in
            guard registry.epoll >= 0, socket >= 0 else { return }
            let registration = registry.nextRegistration
            registry.nextRegistration += 1
            // One-shot: one FIN per connection.
            var event = epoll_event(
                events: EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue, data: epoll_data_t(u64: registration))
            guard epoll_ctl(registry.epoll, EPOLL_CTL_ADD, socket, &event) == 0 else { return }
            registry.registrations[socket] = registration
            registry.sockets[registration] = socket
        }
    }

    /// libmicrohttpd is about to close the connection's socket.
    func connectionClosed(socket: Int32) {
        registry.withLock { registry in
            guard let registration = registry.registrations.removeValue(forKey: socket) else { return }
            registry.sockets[registration] = nil
            var event = epoll_event()
            _ = epoll_ctl(registry.epoll, EPOLL_CTL_DEL, socket, &event)
        }
    }

    private static func takeEvents(epoll: Int32, _ registry: LockedValue<Registry>, _ queue: DispatchQueue) {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), 0) }
        for event in events[..<Int(max(0, count))] {
            wakeLibrary(event.data.u64, registry, queue, retryMilliseconds: 5)
        }
    }

    /// Shuts the socket down for reading once libmicrohttpd has read every byte before the FIN
    /// (a wake before its last, short, read would be lost); until then, checks again later.
    private static func wakeLibrary(
        _ registration: UInt64,
        _ registry: LockedValue<Registry>,
        _ queue: DispatchQueue,
        retryMilliseconds: Int
    ) {
        let isDone = registry.withLock { registry -> Bool in
            guard let socket = registry.sockets[registration] else { return true }
            var byte: UInt8 = 0
            // With the FIN in, a peek returns 0 once no byte is left before it.
            guard recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0 else { return false }
            shutdown(socket, Int32(SHUT_RD))
            return true
        }
        guard !isDone else { return }
        // Bytes left while libmicrohttpd does not read (a request being answered) can stay for long.
        queue.asyncAfter(deadline: .now() + .milliseconds(retryMilliseconds)) {
            wakeLibrary(registration, registry, queue, retryMilliseconds: min(2 * retryMilliseconds, 1000))
        }
    }
}
