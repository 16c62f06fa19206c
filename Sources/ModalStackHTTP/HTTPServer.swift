import CMicroHTTPD
import Glibc
import Locking
import Timekeeping

/// An HTTP/1.1 server over libmicrohttpd that hands complete requests to an ``HTTPResponder``.
///
/// Requests run on libmicrohttpd's worker threads (one epoll loop per thread); responders must not
/// block. Bodies are buffered up to ``Configuration/maxBodyBytes``. Connections are kept alive
/// (responses are queued on the handler's last call). A server starts once and stops once.
///
/// Responses may also be streamed (``HTTPReply/startStream(status:headers:)``): an idle stream's
/// connection is suspended, so it holds no thread and costs no CPU time, and one extra thread
/// watches those connections for clients that hang up.
///
/// ``HTTPRequest/path`` is the raw, still percent-encoded path: libmicrohttpd 0.9.75 would decode it
/// before the handler sees it (so `%2F` would split a segment), which the server turns off.
///
/// For operations, every request gets an id (``HTTPRequest/requestID``, echoed in
/// ``Configuration/requestIDHeader`` on every response), and each request that got a response is
/// reported once it is over (``Configuration/onRequestCompleted``, a ``CompletedRequest``).
public final class HTTPServer: Sendable {
    /// Listening address, threads and limits.
    public struct Configuration: Sendable {
        /// An IPv4 or IPv6 literal, or `localhost`. `"::"` accepts IPv4 and IPv6.
        public var host: String
        /// The TCP port; 0 picks a free one (see ``HTTPServer/boundPort``).
        public var port: UInt16
        /// Worker threads, each with its own epoll loop. Defaults to the number of online processors.
        public var threadPoolSize: Int
        /// Open connections (including idle keep-alive and suspended ones) beyond which new ones are
        /// refused: closed as soon as they are accepted, before anything is read. (libmicrohttpd's own
        /// limit would leave them unanswered in the listen backlog until a connection closes.) Under
        /// simultaneous connects the count may pass the limit by up to ``threadPoolSize`` − 1.
        public var connectionLimit: Int
        /// Idle time after which a connection is closed, and the time a connection has to send each
        /// request in full (head and body), counted from its accept or its previous response — so a
        /// client trickling bytes is dropped too. 0 turns both off. Suspended connections and
        /// requests being answered do not time out.
        public var connectionTimeoutSeconds: Int
        /// The largest request body accepted; larger ones get `rejections(.bodyTooLarge(limit:))`.
        public var maxBodyBytes: Int
        /// How much of an oversize chunked body is read and dropped so the client can still read the
        /// 413; beyond it the connection is closed without an answer. libmicrohttpd 0.9.75 takes a
        /// response only once the whole request is in (or before any body is read), so the 413 to a
        /// chunked body that goes over ``maxBodyBytes`` waits for its end. By default no byte count
        /// bounds that, only ``connectionTimeoutSeconds`` (the request must arrive in full in time):
        /// dropped bytes cost no memory.
        public var maxDiscardedBodyBytes: Int
        /// libmicrohttpd's per-connection buffer (request line and headers must fit); `nil` keeps its
        /// default of 32 KiB. Overflows are answered by libmicrohttpd itself, before any handler runs
        /// (so without the request id or the completion hook): 414 when the request line does not
        /// fit, 431 when the headers do not, both with `Connection: close` and a small HTML body. A
        /// head that only just fits can leave no room for the response head, and the connection is
        /// then closed without an answer (libmicrohttpd 0.9.75). Keep it a few KiB above
        /// ``maxURLBytes`` + ``maxHeaderBytes`` so that the server's own 414/431 come first.
        public var connectionMemoryLimitBytes: Int?
        /// The longest request target (path and query, as received) accepted; longer ones get
        /// `rejections(.uriTooLong(limit:))`.
        public var maxURLBytes: Int
        /// The most header bytes accepted (each field counts its name, its value and 4 bytes for
        /// `": "` and the line end); more get `rejections(.headersTooLarge(limit:))`.
        public var maxHeaderBytes: Int
        /// The header that carries the request id in both directions: taken from the request when it
        /// is 1–128 visible ASCII characters, generated otherwise, and set on every response to the
        /// request (including streams and rejections; replacing a value the application set). `nil`
        /// turns request ids off.
        public var requestIDHeader: String?
        /// Called once for each request that got a response, when libmicrohttpd is done with it —
        /// whether it went out completely or the client went away (see
        /// ``CompletedRequest/endedNormally``). Requests that got no response at all (the client left
        /// before the end of its request, a body cut off past ``maxDiscardedBodyBytes``) and requests
        /// libmicrohttpd rejected by itself (see ``connectionMemoryLimitBytes``) are not reported.
        /// Runs on a worker thread (or the thread calling ``HTTPServer/stop()``): it must not block.
        public var onRequestCompleted: (@Sendable (CompletedRequest) -> Void)?
        /// How long ``HTTPServer/stop()`` waits for the 503 answers to suspended requests, and the ends
        /// of open streams, to go out.
        public var stopGracePeriod: Duration
        /// The most bytes written to an ``HTTPStream`` and not yet sent that are kept; a write beyond
        /// it closes the stream and drops the connection (a client that does not read cannot make the
        /// server buffer without bound). Per stream, on top of libmicrohttpd's and the kernel's buffers.
        public var maxStreamBufferBytes: Int
        /// Where the server reads the time: the request deadlines (see ``connectionTimeoutSeconds``)
        /// and ``CompletedRequest/duration`` use its monotonic clock. libmicrohttpd's own idle
        /// timeout and ``stopGracePeriod`` run on the system's clock whatever this is.
        public var time: any TimeSource = SystemTime()

        /// Creates a configuration; every parameter has a production default.
        public init(
            host: String = "0.0.0.0",
            port: UInt16 = 8080,
            threadPoolSize: Int = Configuration.processorCount,
            connectionLimit: Int = 1024,
            connectionTimeoutSeconds: Int = 30,
            maxBodyBytes: Int = 65536,
            maxDiscardedBodyBytes: Int = .max,
            connectionMemoryLimitBytes: Int? = nil,
            stopGracePeriod: Duration = .seconds(5),
            maxStreamBufferBytes: Int = 1 << 20,
            maxURLBytes: Int = 8192,
            maxHeaderBytes: Int = 16384,
            requestIDHeader: String? = "X-Request-Id",
            onRequestCompleted: (@Sendable (CompletedRequest) -> Void)? = nil
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
            self.maxStreamBufferBytes = maxStreamBufferBytes
            self.maxURLBytes = maxURLBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.requestIDHeader = requestIDHeader
            self.onRequestCompleted = onRequestCompleted
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
    let dispatcher: RequestDispatcher
    private let lifecycle = LockedValue(Lifecycle.idle)

    /// Creates a stopped server.
    /// - Parameters:
    ///   - configuration: Address, threads and limits.
    ///   - responder: Answers every request (usually a ``Router``).
    ///   - rejections: Renders the answers the server gives on the application's behalf (413, 414
    ///     and 431 for a body, request target or headers over their limits, 503 for deferred requests
    ///     pending at stop).
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

    /// Whether ``Configuration/host`` may be `host`: an IPv4 or IPv6 literal (brackets allowed), or
    /// `localhost`.
    public static func isValidHost(_ host: String) -> Bool {
        (try? ListenSocket.parse(host: host, port: 0)) != nil
    }

    /// The port the server listens on (the real one when port 0 was configured); 0 when not running.
    public var boundPort: UInt16 {
        lifecycle.withLock { state in
            if case .running(let running) = state { running.port } else { 0 }
        }
    }

    /// Stops accepting connections (new ones are closed at once), answers every suspended request with
    /// `rejections(.serverStopping)`
    /// (with `Connection: close`), closes every open ``HTTPStream`` (its buffered bytes and the end of
    /// its body go out; its close handlers run), waits up to ``Configuration/stopGracePeriod`` for
    /// those to go out, then stops the worker threads and closes every connection. Idempotent;
    /// returns at once when another `stop()` is already in progress. Must not be called from a
    /// handler (it waits for the worker threads to finish).
    public func stop() {
        let running: RunningDaemon? = lifecycle.withLock { state in
            guard case .running(let running) = state else { return nil }
            state = .stopping
            return running
        }
        guard let running else { return }

        // Not MHD_quiesce_daemon: in 0.9.75 it races with the epoll worker threads, which also take
        // the listen socket out of their epoll sets once they see the quiesce; the loser's epoll_ctl
        // fails and libmicrohttpd aborts the process ("Failed to remove listen FD from epoll set",
        // seen about once in 40 runs of this module's tests). The accept policy refuses instead.
        dispatcher.stopAccepting()
        // libmicrohttpd 0.9.75 aborts when stopped with a suspended connection: end them all first.
        dispatcher.endSuspensionsForStop(gracePeriod: configuration.stopGracePeriod)
        // Also closes the listen socket.
        MHD_stop_daemon(running.daemon)
        dispatcher.hangUpWatcher.stop()
        dispatcher.halfCloseWatcher.stop()
        dispatcher.requestDeadlines.stop()
        Unmanaged.passUnretained(dispatcher).release()
        lifecycle.withLock { $0 = .stopped }
    }

    private func launch() throws(HTTPServerError) -> RunningDaemon {
        let listenSocket = try ListenSocket.open(host: configuration.host, port: configuration.port, backlog: 511)
        do {
            try dispatcher.hangUpWatcher.start()
            try dispatcher.halfCloseWatcher.start()
        } catch {
            dispatcher.hangUpWatcher.stop()
            Glibc.close(listenSocket)
            throw error
        }
        func option(_ option: MHD_OPTION, _ value: Int) -> MHD_OptionItem {
            MHD_OptionItem(option: option, value: value, ptr_value: nil)
        }
        // The connection limit is enforced by the accept policy (see RequestDispatcher.admitsConnection):
        // a libmicrohttpd thread at its own limit stops accepting, which leaves new clients waiting in
        // the backlog. Its limit is split between the threads, so each share must stay above ours.
        let threads = max(1, configuration.threadPoolSize)
        let libraryLimit = (max(1, configuration.connectionLimit) + threads) * threads
        var options = [
            option(.LISTEN_SOCKET, Int(listenSocket)),
            option(.CONNECTION_LIMIT, libraryLimit),
            option(.CONNECTION_TIMEOUT, max(0, configuration.connectionTimeoutSeconds)),
        ]
        if threads > 1 {
            options.append(option(.THREAD_POOL_SIZE, threads))
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
                flags, context, MHDCallbacks.acceptPolicy, MHDCallbacks.accessHandler, MHDCallbacks.uriReceived,
                MHDCallbacks.requestCompleted, MHDCallbacks.connectionNotified, items.baseAddress)
        }
        guard let daemon else {
            Unmanaged.passUnretained(dispatcher).release()
            dispatcher.hangUpWatcher.stop()
            dispatcher.halfCloseWatcher.stop()
            Glibc.close(listenSocket)
            throw HTTPServerError(
                .daemonFailed,
                "libmicrohttpd could not start on \(configuration.host):\(configuration.port) "
                    + "(threads: \(configuration.threadPoolSize), connection limit: \(configuration.connectionLimit))")
        }
        dispatcher.requestDeadlines.start()
        var port = modalstack_mhd_bind_port(daemon)
        if port == 0 { port = ListenSocket.boundPort(listenSocket) }
        return RunningDaemon(daemon: daemon, listenSocket: listenSocket, port: port)
    }
}
