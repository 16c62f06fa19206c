import CMicroHTTPD
import Glibc
import Synchronization

/// An HTTP/1.1 server over libmicrohttpd that hands complete requests to an ``HTTPResponder``.
///
/// Requests run on libmicrohttpd's worker threads (one epoll loop per thread); responders must not
/// block. Bodies are buffered up to ``Configuration/maxBodyBytes``. Connections are kept alive
/// (responses are queued on the handler's last call). A server starts once and stops once.
///
/// ``HTTPRequest/path`` is the raw, still percent-encoded path: libmicrohttpd 0.9.75 would decode it
/// before the handler sees it (so `%2F` would split a segment), which the server turns off.
public final class HTTPServer: Sendable {
    /// Listening address, threads and limits.
    public struct Configuration: Sendable {
        /// An IPv4 or IPv6 literal, or `localhost`. `"::"` accepts IPv4 and IPv6.
        public var host: String
        /// The TCP port; 0 picks a free one (see ``HTTPServer/boundPort``).
        public var port: UInt16
        /// Worker threads, each with its own epoll loop. Defaults to the number of online processors.
        public var threadPoolSize: Int
        /// Open connections (including idle keep-alive and suspended ones) beyond which new ones are refused.
        public var connectionLimit: Int
        /// Idle time after which a connection is closed. Suspended connections do not time out.
        public var connectionTimeoutSeconds: Int
        /// The largest request body accepted; larger ones get `rejections(.bodyTooLarge(limit:))`.
        public var maxBodyBytes: Int
        /// How much of an oversize chunked body is read and dropped so the client can still read the
        /// 413; beyond it the connection is closed without an answer.
        public var maxDiscardedBodyBytes: Int
        /// libmicrohttpd's per-connection buffer (request line and headers must fit); `nil` keeps its
        /// default of 32 KiB. Overflows are answered 414/431 by libmicrohttpd itself.
        public var connectionMemoryLimitBytes: Int?
        /// How long ``HTTPServer/stop()`` waits for the 503 answers to suspended requests to go out.
        public var stopGracePeriod: Duration

        /// Creates a configuration; every parameter has a production default.
        public init(
            host: String = "0.0.0.0",
            port: UInt16 = 8080,
            threadPoolSize: Int = Configuration.processorCount,
            connectionLimit: Int = 1024,
            connectionTimeoutSeconds: Int = 30,
            maxBodyBytes: Int = 65536,
            maxDiscardedBodyBytes: Int = 1 << 20,
            connectionMemoryLimitBytes: Int? = nil,
            stopGracePeriod: Duration = .seconds(5)
        ) {
            self.host = host
            self.port = port
            self.threadPoolSize = threadPoolSize
            self.connectionLimit = connectionLimit
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.maxBodyBytes = maxBodyBytes
            self.maxDiscardedBodyBytes = maxDiscardedBodyBytes
            self.connectionMemoryLimitBytes = connectionMemoryLimitBytes
            self.stopGracePeriod = stopGracePeriod
        }

        /// The number of online processors (at least 1).
        public static var processorCount: Int {
            max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        }
    }

    private enum Lifecycle {
        case idle
        case running(RunningDaemon)
        case stopping
        case stopped
    }

    private struct RunningDaemon: @unchecked Sendable {
        let daemon: OpaquePointer
        let listenSocket: Int32
        let port: UInt16
    }

    /// The configuration the server was created with.
    public let configuration: Configuration
    private let dispatcher: RequestDispatcher
    private let lifecycle = Mutex(Lifecycle.idle)

    /// Creates a stopped server.
    /// - Parameters:
    ///   - configuration: Address, threads and limits.
    ///   - responder: Answers every request (usually a ``Router``).
    ///   - rejections: Renders the answers the server gives on the application's behalf
    ///     (413 for a body over the limit, 503 for deferred requests pending at stop).
    public init(
        configuration: Configuration = Configuration(),
        responder: any HTTPResponder,
        rejections: @escaping @Sendable (HTTPRejection) -> HTTPResponse
    ) {
        self.configuration = configuration
        self.dispatcher = RequestDispatcher(configuration: configuration, responder: responder, rejections: rejections)
    }

    deinit {
        stop()
    }

    /// Binds the address and starts the worker threads.
    /// - Throws: ``HTTPServerError`` naming the address and cause (address in use, invalid host, …).
    public func start() throws(HTTPServerError) {
        try lifecycle.withLock { (state: inout Lifecycle) throws(HTTPServerError) in
            guard case .idle = state else {
                throw HTTPServerError(.alreadyStarted, "the server was already started")
            }
            state = .running(try launch())
        }
    }

    /// The port the server listens on (the real one when port 0 was configured); 0 when not running.
    public var boundPort: UInt16 {
        lifecycle.withLock { state in
            if case .running(let running) = state { running.port } else { 0 }
        }
    }

    /// Stops accepting connections, answers every suspended request with `rejections(.serverStopping)`
    /// (with `Connection: close`), waits up to ``Configuration/stopGracePeriod`` for those answers to go
    /// out, then stops the worker threads and closes every connection. Idempotent; returns at once
    /// when another `stop()` is already in progress. Must not be called from a handler (it waits for
    /// the worker threads to finish).
    public func stop() {
        let running: RunningDaemon? = lifecycle.withLock { state in
            guard case .running(let running) = state else { return nil }
            state = .stopping
            return running
        }
        guard let running else { return }

        let quiescedSocket = MHD_quiesce_daemon(running.daemon)
        dispatcher.answerSuspendedRequestsForStop(gracePeriod: configuration.stopGracePeriod)
        MHD_stop_daemon(running.daemon)
        // After a quiesce the listen socket is ours to close, and only after MHD_stop_daemon.
        if quiescedSocket >= 0 { Glibc.close(quiescedSocket) }
        Unmanaged.passUnretained(dispatcher).release()
        lifecycle.withLock { $0 = .stopped }
    }

    private func launch() throws(HTTPServerError) -> RunningDaemon {
        let listenSocket = try ListenSocket.open(host: configuration.host, port: configuration.port, backlog: 511)
        func option(_ option: MHD_OPTION, _ value: Int) -> MHD_OptionItem {
            MHD_OptionItem(option: option, value: value, ptr_value: nil)
        }
        var options = [
            option(.LISTEN_SOCKET, Int(listenSocket)),
            option(.CONNECTION_LIMIT, max(1, configuration.connectionLimit)),
            option(.CONNECTION_TIMEOUT, max(0, configuration.connectionTimeoutSeconds)),
        ]
        if configuration.threadPoolSize > 1 {
            options.append(option(.THREAD_POOL_SIZE, configuration.threadPoolSize))
        }
        if let memoryLimit = configuration.connectionMemoryLimitBytes {
            options.append(option(.CONNECTION_MEMORY_LIMIT, memoryLimit))
        }
        options.append(option(.END, 0))

        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ITC.rawValue
        // The daemon's reference to the dispatcher, released in stop() after MHD_stop_daemon.
        let context = Unmanaged.passRetained(dispatcher).toOpaque()
        let daemon = options.withUnsafeMutableBufferPointer { items in
            modalstack_mhd_start_daemon(
                flags, MHDCallbacks.accessHandler, context, MHDCallbacks.requestCompleted, context, items.baseAddress)
        }
        guard let daemon else {
            Unmanaged.passUnretained(dispatcher).release()
            Glibc.close(listenSocket)
            throw HTTPServerError(
                .daemonFailed,
                "libmicrohttpd could not start on \(configuration.host):\(configuration.port) "
                    + "(threads: \(configuration.threadPoolSize), connection limit: \(configuration.connectionLimit))")
        }
        var port = modalstack_mhd_bind_port(daemon)
        if port == 0 { port = ListenSocket.boundPort(listenSocket) }
        return RunningDaemon(daemon: daemon, listenSocket: listenSocket, port: port)
    }
}
