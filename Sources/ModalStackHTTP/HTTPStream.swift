import CMicroHTTPD
import Glibc
import Locking

/// The body of a streamed response (e.g. Server-Sent Events), written over time from any thread.
///
/// Created by ``HTTPReply/startStream(status:headers:)``. The body goes out with chunked transfer
/// encoding (HTTP/1.0 clients get it delimited by the connection's close). Written bytes are buffered
/// until libmicrohttpd takes them; while the buffer is empty the connection is suspended, so an idle
/// stream costs neither a thread nor CPU time. A client that hangs up is noticed at once, even while
/// the stream is idle (a client that only shuts down its sending side counts as gone, as it does for
/// most servers).
///
/// The stream closes — writes return `false` from then on and the ``onClose(_:)`` handlers run, once —
/// when ``close()`` is called, when the client goes away, when more than
/// ``HTTPServer/Configuration/maxStreamBufferBytes`` are waiting for a client that does not read
/// (the connection is then dropped), when the connection fails or times out, or when the server stops.
public final class HTTPStream: Sendable {
    private enum Destination: Sendable {
        case connection(ConnectionHandle, watcher: HangUpWatcher?)
        case callback(@Sendable ([UInt8]) -> Void)
    }

    private struct Guarded {
        var machine: StreamStateMachine
        var closeHandlers: [@Sendable () -> Void] = []
        /// The hang-up watcher's registration while the connection is suspended.
        var watch: UInt64?
    }

    private let destination: Destination
    private let guarded: LockedValue<Guarded>

    init(connection: ConnectionHandle, bufferLimit: Int, watcher: HangUpWatcher?) {
        destination = .connection(connection, watcher: watcher)
        guarded = LockedValue(Guarded(machine: StreamStateMachine(bufferLimit: bufferLimit)))
    }

    /// A stream not attached to a connection: each accepted write goes to `onWrite`, in order, under
    /// the stream's lock (`onWrite` must not call back into the stream).
    init(onWrite: @escaping @Sendable ([UInt8]) -> Void) {
        destination = .callback(onWrite)
        guarded = LockedValue(Guarded(machine: StreamStateMachine(bufferLimit: .max)))
    }

    // MARK: Writing

    /// Queues `bytes` to be sent after the bytes written before.
    ///
    /// Never blocks. Writes from several threads are each kept whole, in the order they take the
    /// stream's lock; writes arriving together may go out in one chunk.
    /// - Returns: `false` when the stream is closed (nothing is queued), including when this write
    ///   would pass the buffer limit — the stream then closes and the connection is dropped.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, handlers) = guarded.withLock { guarded -> (Bool, [@Sendable () -> Void]) in
            switch destination {
            case .callback(let onWrite):
                guard !guarded.machine.isClosed else { return (false, []) }
                if !bytes.isEmpty { onWrite(bytes) }
                return (true, [])
            case .connection(let connection, let watcher):
                switch guarded.machine.write(bytes) {
                case .buffered:
                    return (true, [])
                case .resume:
                    Self.endSuspension(&guarded, connection, watcher)
                    return (true, [])
                case .rejected:
                    return (false, [])
                case .overflowed(let wasSuspended):
                    if wasSuspended {
                        Self.endSuspension(&guarded, connection, watcher)
                    } else {
                        // libmicrohttpd is stuck sending to a client that does not read, and would keep
                        // the connection until its timeout. The descriptor is still open: it is closed
                        // only after the completion callback, which `finish` (this lock) marks.
                        shutdown(connection.socket, Int32(SHUT_RDWR))
                    }
                    return (false, Self.takeCloseHandlers(&guarded))
                }
            }
        }
        for handler in handlers { handler() }
        return accepted
    }

    /// Queues the UTF-8 bytes of `text`, like the bytes variant.
    @discardableResult
    public func write(_ text: String) -> Bool {
        write(Array(text.utf8))
    }

    /// Ends the response after the bytes already written: the client sees the end of the body, and
    /// the connection then serves the client's next request (keep-alive) or closes. Later calls do
    /// nothing.
    public func close() {
        let handlers = guarded.withLock { guarded -> [@Sendable () -> Void] in
            guard case .closed(let resume) = guarded.machine.close() else { return [] }
            if resume, case .connection(let connection, let watcher) = destination {
                Self.endSuspension(&guarded, connection, watcher)
            }
            return Self.takeCloseHandlers(&guarded)
        }
        for handler in handlers { handler() }
    }

    /// Whether the stream is closed (writes return `false`); the last bytes may still be on their way.
    public var isClosed: Bool {
        guarded.withLock { $0.machine.isClosed }
    }

    /// Whether the connection is suspended: nothing is buffered, and the hang-up watcher watches it.
    var isSuspended: Bool {
        guarded.withLock { $0.machine.state == .suspended }
    }

    /// Registers `handler` to run once when the stream closes, whatever the reason, on the thread that
    /// closes it (a writer, a libmicrohttpd worker thread, the hang-up watcher, the thread calling
    /// `HTTPServer.stop()`), so it must not block. When the stream is already closed, `handler` runs at
    /// once, on the calling thread. Handlers run outside the stream's lock: they may call `write`
    /// (which returns `false`) or `close`.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let closed = guarded.withLock { guarded in
            if !guarded.machine.isClosed { guarded.closeHandlers.append(handler) }
            return guarded.machine.isClosed
        }
        if closed { handler() }
    }

    // MARK: libmicrohttpd events

    /// The content reader callback: copies buffered bytes, or suspends the connection while there
    /// are none, or ends the body. Returns the reader callback's result.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guarded.withLock { guarded in
            switch guarded.machine.read(into: buffer) {
            case .bytes(let count):
                return count
            case .suspend:
                guard case .connection(let connection, let watcher) = destination else { return 0 }
                // Under the lock: a writer sees `suspended` only once the connection really is.
                MHD_suspend_connection(connection.pointer)
                guarded.watch = watcher?.watch(socket: connection.socket, stream: self)
                return 0
            case .endOfStream:
                return MHD_CONTENT_READER_END_OF_STREAM
            case .endWithError:
                return MHD_CONTENT_READER_END_WITH_ERROR
            }
        }
    }

    /// The hang-up watcher saw the client go away while the connection was suspended.
    func peerHungUp(registration: UInt64) {
        let handlers = guarded.withLock { guarded -> [@Sendable () -> Void] in
            guard guarded.watch == registration, case .connection(let connection, let watcher) = destination,
                case .closed = guarded.machine.hangUp()
            else { return [] }
            Self.endSuspension(&guarded, connection, watcher)
            return Self.takeCloseHandlers(&guarded)
        }
        for handler in handlers { handler() }
    }

    /// The request is over (completion callback): from now on nothing touches the connection.
    func connectionFinished() {
        let handlers = guarded.withLock { guarded -> [@Sendable () -> Void] in
            if let registration = guarded.watch, case .connection(_, let watcher?) = destination {
                watcher.forget(registration)
                guarded.watch = nil
            }
            guard case .closed = guarded.machine.finish() else { return [] }
            return Self.takeCloseHandlers(&guarded)
        }
        for handler in handlers { handler() }
    }

    /// Bytes libmicrohttpd took for sending so far.
    var deliveredCount: Int {
        guarded.withLock { $0.machine.deliveredCount }
    }

    // MARK: Helpers (under the lock)

    private static func endSuspension(
        _ guarded: inout Guarded,
        _ connection: ConnectionHandle,
        _ watcher: HangUpWatcher?
    ) {
        if let registration = guarded.watch {
            watcher?.unwatch(socket: connection.socket, registration: registration)
            guarded.watch = nil
        }
        MHD_resume_connection(connection.pointer)
    }

    private static func takeCloseHandlers(_ guarded: inout Guarded) -> [@Sendable () -> Void] {
        defer { guarded.closeHandlers = [] }
        return guarded.closeHandlers
    }
}
