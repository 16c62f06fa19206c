import CMicroHTTPD
import Glibc
import Locking

/// Notices clients that hang up while their stream is idle.
///
/// libmicrohttpd does not watch suspended connections: without this, a client that left an idle
/// stream would only be noticed at the second write after it left. The socket of each suspended
/// stream is registered here, in an epoll set of its own, for `EPOLLRDHUP` (the client's FIN) and
/// `EPOLLHUP`/`EPOLLERR`; one thread sleeps in `epoll_wait` and tells the stream, which closes and
/// resumes its connection so that libmicrohttpd drops it.
///
/// Sockets are registered only while their connection is suspended: libmicrohttpd then neither uses
/// nor closes them, so the descriptor cannot be closed or reused under the watch. Each registration
/// has an id that is never reused, so an event for an ended registration is ignored.
final class HangUpWatcher: Sendable {
    private struct Registry {
        var epoll: Int32 = -1
        var wake: Int32 = -1
        var thread: pthread_t?
        var nextRegistration: UInt64 = 1
        var streams: [UInt64: HTTPStream] = [:]
    }

    /// epoll data of the wake-up descriptor; registrations start at 1.
    fileprivate static let wakeRegistration: UInt64 = 0
    private let registry = LockedValue(Registry())

    /// Creates the epoll set and starts the thread.
    /// - Throws: ``HTTPServerError`` when a descriptor or the thread cannot be created.
    func start() throws(HTTPServerError) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        let wake = eventfd(0, Int32(EFD_CLOEXEC))
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeRegistration))
        guard epoll >= 0, wake >= 0, epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) == 0 else {
            let message = String(cString: strerror(errno))
            if epoll >= 0 { close(epoll) }
            if wake >= 0 { close(wake) }
            throw HTTPServerError(.daemonFailed, "cannot create the stream hang-up watcher: \(message)")
        }
        let context = Unmanaged.passRetained(WatchLoop(watcher: self, epoll: epoll)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { raw in
                Unmanaged<WatchLoop>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, context)
        guard status == 0 else {
            Unmanaged<WatchLoop>.fromOpaque(context).release()
            close(epoll)
            close(wake)
            throw HTTPServerError(.daemonFailed, "cannot start the stream hang-up watcher thread: error \(status)")
        }
        registry.withLock { registry in
            registry.epoll = epoll
            registry.wake = wake
            registry.thread = thread
        }
    }

    /// Stops the thread and closes the descriptors. Called once no connection is suspended.
    func stop() {
        guard
            let (thread, epoll, wake) = registry.withLock({ registry -> (pthread_t, Int32, Int32)? in
                guard let thread = registry.thread else { return nil }
                registry.thread = nil
                registry.streams = [:]
                return (thread, registry.epoll, registry.wake)
            })
        else { return }
        var one: UInt64 = 1
        _ = Glibc.write(wake, &one, MemoryLayout<UInt64>.size)
        pthread_join(thread, nil)
        registry.withLock { registry in
            registry.epoll = -1
            registry.wake = -1
        }
        close(epoll)
        close(wake)
    }

    /// Watches the socket of a connection that was just suspended. Returns the registration, or `nil`
    /// when the watcher is not running.
    func watch(socket: Int32, stream: HTTPStream) -> UInt64? {
        registry.withLock { registry -> UInt64? in
            guard registry.thread != nil else { return nil }
            let registration = registry.nextRegistration
            registry.nextRegistration += 1
            // One-shot: one event is all the stream needs; it unwatches while resuming.
            var event = epoll_event(
                events: EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue, data: epoll_data_t(u64: registration))
            guard epoll_ctl(registry.epoll, EPOLL_CTL_ADD, socket, &event) == 0 else { return nil }
            registry.streams[registration] = stream
            return registration
        }
    }

    /// Stops watching a socket whose connection is about to be resumed (so it is still open).
    func unwatch(socket: Int32, registration: UInt64) {
        registry.withLock { registry in
            guard registry.streams.removeValue(forKey: registration) != nil else { return }
            var event = epoll_event()
            _ = epoll_ctl(registry.epoll, EPOLL_CTL_DEL, socket, &event)
        }
    }

    /// Drops a registration without touching its socket (the connection is gone; closing the socket
    /// removed it from the epoll set).
    func forget(_ registration: UInt64) {
        registry.withLock { _ = $0.streams.removeValue(forKey: registration) }
    }

    fileprivate func stream(for registration: UInt64) -> HTTPStream? {
        registry.withLock { $0.streams[registration] }
    }
}

/// The watcher thread's loop, with what it needs passed in rather than read under the lock.
private final class WatchLoop {
    let watcher: HangUpWatcher
    let epoll: Int32

    init(watcher: HangUpWatcher, epoll: Int32) {
        self.watcher = watcher
        self.epoll = epoll
    }

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if count < 0 {
                if errno == EINTR { continue }
                return
            }
            for event in events[..<Int(count)] {
                let registration = event.data.u64
                if registration == HangUpWatcher.wakeRegistration { return }
                watcher.stream(for: registration)?.peerHungUp(registration: registration)
            }
        }
    }
}
