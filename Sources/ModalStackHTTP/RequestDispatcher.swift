import CMicroHTTPD
import Glibc
import Locking
import Synchronization
import Timekeeping

/// What the daemon's callbacks work on: turns libmicrohttpd's handler calls into one `respond` per
/// request and queues the answers. Its address is the callbacks' `cls`.
final class RequestDispatcher: Sendable {
    private struct Suspensions {
        var isStopping = false
        var replies: [ObjectIdentifier: HTTPReply] = [:]
        /// Queued streams: their connections suspend while idle, so they too must be ended (and
        /// resumed) before the daemon may stop.
        var streams: [ObjectIdentifier: HTTPStream] = [:]
    }

    let configuration: HTTPServer.Configuration
    /// Notices clients leaving idle streams; runs while the daemon runs.
    let hangUpWatcher = HangUpWatcher()
    /// Drops connections that do not send their request in time; runs while the daemon runs.
    let requestDeadlines: RequestDeadlines
    /// Makes libmicrohttpd notice clients that half-close; runs while the daemon runs.
    let halfCloseWatcher = HalfCloseWatcher()
    private let responder: any HTTPResponder
    private let rejections: @Sendable (HTTPRejection) -> HTTPResponse
    /// Suspended requests and open streams, which must be ended (and so resumed) before the daemon
    /// may stop.
    private let suspensions = LockedValue(Suspensions())
    /// Connections libmicrohttpd has set up and not yet closed, for the connection limit.
    private let openConnections = Atomic<Int>(0)
    /// Cleared when the server stops: new connections are refused from then on.
    private let isAccepting = Atomic<Bool>(true)
    /// libmicrohttpd allocates this much per streamed response; chunked bodies are read straight into
    /// the connection's buffer, so it only sizes the reads of HTTP/1.0 (close-delimited) streams.
    private static let streamBlockSize = 4096

    init(
        configuration: HTTPServer.Configuration,
        responder: any HTTPResponder,
        rejections: @escaping @Sendable (HTTPRejection) -> HTTPResponse
    ) {
        self.configuration = configuration
        self.requestDeadlines = RequestDeadlines(
            timeoutSeconds: configuration.connectionTimeoutSeconds, time: configuration.time)
        self.responder = responder
        self.rejections = rejections
    }

    // MARK: Handler calls

    /// The request line is in: the request's context, before libmicrohttpd reads the headers.
    func requestLineReceived(connection: OpaquePointer, targetLengthBeforeNUL: Int) -> RequestContext {
        let handle = ConnectionHandle(pointer: connection, socket: modalstack_mhd_connection_socket(connection))
        let deadline = modalstack_mhd_socket_context(connection).map {
            Unmanaged<RequestDeadlines.Entry>.fromOpaque($0).takeUnretainedValue()
        }
        return RequestContext(
            connection: handle, targetLengthBeforeNUL: targetLengthBeforeNUL,
            startedAt: configuration.time.monotonicNanoseconds(), deadline: deadline)
    }

    /// First call for a request: the head is in. Gives the request its id, and rejects at once a
    /// request line holding a NUL byte, or a request target, headers or announced body over their
    /// limits, before any body is read.
    func begin(
        _ context: RequestContext,
        connection: OpaquePointer,
        url: UnsafePointer<CChar>,
        method: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>
    ) -> MHD_Result {
        let headers = HTTPHeaders(Self.values(of: connection, kind: .HEADER_KIND))
        let path = String(cString: url)
        // Query arguments arrive raw (see modalstack_mhd_keep_escaped) except '+', already a space.
        let rawQuery = Self.values(of: connection, kind: .GET_ARGUMENT_KIND)
        let query = rawQuery.map {
            (name: PercentEncoding.decodeLeniently($0.name[...]), value: PercentEncoding.decodeLeniently($0.value[...]))
        }
        // Built in place: the context holds the request from here on.
        context.request = HTTPRequest(
            method: String(cString: method),
            path: path,
            query: query,
            headers: headers,
            requestID: configuration.requestIDHeader.map { RequestID.resolve(incoming: headers[$0]) }
        )
        context.request?.peerAddress = modalstack_mhd_client_address(connection).flatMap(RemoteAddress.init)
        if Self.requestLineHoldsNUL(
            method: method, target: url, version: version, targetLengthBeforeNUL: context.targetLengthBeforeNUL)
        {
            var response = rejections(.nulInRequestLine)
            response.headers.set("Connection", "close")
            return queue(response, for: context)
        }
        if let rejection = limitExceeded(path: path, rawQuery: rawQuery, headers: headers) {
            // Queued on the first call, libmicrohttpd answers without reading any body and closes.
            return queue(rejections(rejection), for: context)
        }
        return .YES
    }

    /// Whether the method or the target had a NUL byte, which libmicrohttpd 0.9.75 hands over as
    /// the end of its C string: a target `/v1/sessions/a\0b` would be taken for `/v1/sessions/a`.
    ///
    /// Read off libmicrohttpd's own parse of the request line (`parse_initial_message_line` in
    /// connection.c), whose pieces stay in place in the connection's read buffer: the method, a NUL
    /// where the space after it was, any further spaces, the target, a NUL where the space before
    /// the version was, the version (which a request must have). So the target as received spans
    /// from `target` to just before `version`, and only the spaces libmicrohttpd skipped may follow
    /// the method's end. libmicrohttpd's own cuts of the target (at `?`, `&`, `=`) come after the
    /// URI callback measured it.
    static func requestLineHoldsNUL(
        method: UnsafePointer<CChar>,
        target: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>,
        targetLengthBeforeNUL: Int
    ) -> Bool {
        let receivedTargetLength = target.distance(to: version) - 1
        if targetLengthBeforeNUL < receivedTargetLength { return true }
        let methodEnd = method + strlen(method)
        guard methodEnd < target else { return false }
        return UnsafeBufferPointer(start: methodEnd + 1, count: (methodEnd + 1).distance(to: target)).contains {
            $0 != CChar(UInt8(ascii: " "))
        }
    }

    /// Later calls: a body chunk, the end of the request, or the call after a resume.
    func proceed(
        _ context: RequestContext,
        uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        let size = uploadDataSize.pointee
        if size > 0 {
            uploadDataSize.pointee = 0
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: size)
            let keep = context.append(
                chunk, limit: configuration.maxBodyBytes, discardLimit: configuration.maxDiscardedBodyBytes)
            return keep ? MHD_Result.YES : MHD_Result.NO
        }
        if let reply = context.reply {
            guard let answer = reply.resumed() else { return .NO }
            return queue(answer, for: context)
        }
        if case .tooLarge = context.body {
            return queue(rejections(.bodyTooLarge(limit: configuration.maxBodyBytes)), for: context)
        }
        return dispatch(context)
    }

    /// The request is complete: hand it to the responder, then queue the answer or suspend.
    private func dispatch(_ context: RequestContext) -> MHD_Result {
        requestDeadlines.requestReceived(on: context.deadline)
        let connection = context.connection.pointer
        let reply = HTTPReply(
            connection: context.connection,
            streams: StreamSettings(bufferLimit: configuration.maxStreamBufferBytes, watcher: hangUpWatcher))
        context.reply = reply
        guard let request = context.request else { return .NO }
        // The responder may keep the request while suspended; the context need not keep a second body.
        context.request?.body = []
        responder.respond(to: request, reply: reply)

        switch reply.respondReturned() {
        case .queue(let answer):
            return queue(answer, for: context)
        case .fail:
            return .NO
        case .suspend:
            if track(reply) {
                context.isTracked = true
            } else {
                reply.send(stoppingResponse())
            }
            MHD_suspend_connection(connection)
            if reply.suspendCompleted() == .resume {
                MHD_resume_connection(connection)
            }
            return .YES
        }
    }

    /// The completion callback: the request is over, whatever the reason; `endedNormally` when its
    /// response went out completely.
    func complete(contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, endedNormally: Bool) {
        guard let raw = contextSlot.pointee else { return }
        contextSlot.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        requestDeadlines.requestEnded(on: context.deadline)
        if let reply = context.reply {
            let stream = reply.close()
            stream?.connectionFinished()
            if context.isTracked || stream != nil {
                suspensions.withLock { suspensions in
                    suspensions.replies.removeValue(forKey: ObjectIdentifier(reply))
                    if let stream { suspensions.streams.removeValue(forKey: ObjectIdentifier(stream)) }
                }
            }
        }
        report(context, endedNormally: endedNormally)
    }

    /// Hands the completed request to ``HTTPServer/Configuration/onRequestCompleted``, if it got a response.
    private func report(_ context: RequestContext, endedNormally: Bool) {
        // The last use of the request: taken, not copied.
        guard let onRequestCompleted = configuration.onRequestCompleted, let queued = context.queued,
            let request = context.request.take()
        else { return }
        let bodyBytes =
            switch queued.body {
            case .bytes(let count): Self.carriesBody(method: request.method, status: queued.status) ? count : 0
            case .stream(let stream): stream.deliveredCount
            }
        let elapsed = configuration.time.monotonicNanoseconds() - context.startedAt
        var completed = CompletedRequest(
            method: request.method,
            path: request.path,
            routeTemplate: context.reply?.routeTemplate,
            status: queued.status,
            responseBodyBytes: bodyBytes,
            requestID: request.requestID,
            remoteAddress: nil,
            duration: Double(elapsed) / 1e9,
            endedNormally: endedNormally)
        completed.peerAddress = request.peerAddress
        onRequestCompleted(completed)
    }

    /// Whether a response with `status` to `method` has a body on the wire (libmicrohttpd drops it
    /// for `HEAD`, `1xx`, 204 and 304).
    static func carriesBody(method: String, status: Int) -> Bool {
        method != "HEAD" && status >= 200 && status != 204 && status != 304
    }

    // MARK: Connections

    /// The accept policy: whether a new connection is taken — the server is not stopping, and the
    /// connection stays under ``HTTPServer/Configuration/connectionLimit``. A refused socket is closed
    /// at once, so the client learns it without waiting.
    func admitsConnection() -> Bool {
        isAccepting.load(ordering: .acquiring)
            && openConnections.load(ordering: .relaxed) < max(1, configuration.connectionLimit)
    }

    /// The server is stopping: every later connection is refused.
    func stopAccepting() {
        isAccepting.store(false, ordering: .releasing)
    }

    /// A connection was set up; returns its deadline entry, if deadlines are on.
    func connectionOpened(socket: Int32) -> RequestDeadlines.Entry? {
        openConnections.wrappingAdd(1, ordering: .relaxed)
        halfCloseWatcher.connectionOpened(socket: socket)
        return requestDeadlines.connectionOpened(socket: socket)
    }

    /// libmicrohttpd is about to close a connection (and its socket).
    func connectionClosed(_ entry: RequestDeadlines.Entry?, socket: Int32) {
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        halfCloseWatcher.connectionClosed(socket: socket)
        if let entry { requestDeadlines.connectionClosed(entry) }
    }

    // MARK: Stopping

    /// Answers every suspended request with the stopping response, closes every open stream (its
    /// buffered bytes and the end of its body go out), and waits (up to `gracePeriod`) until they are
    /// complete; requests suspending or streams starting from now on get the same treatment at once.
    /// Afterwards no connection is suspended or suspends again.
    func endSuspensionsForStop(gracePeriod: Duration) {
        let (replies, streams) = suspensions.withLock { suspensions in
            suspensions.isStopping = true
            return (Array(suspensions.replies.values), Array(suspensions.streams.values))
        }
        let response = stoppingResponse()
        for reply in replies {
            reply.send(response)
        }
        for stream in streams {
            stream.close()
        }
        // Polled: the completion callbacks that empty the lists signal nothing to wait on, and this
        // runs once per server. On the system clock: a clock moved by hand would never end the wait.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: gracePeriod)
        while suspensions.withLock({ !$0.replies.isEmpty || !$0.streams.isEmpty }) && clock.now < deadline {
            usleep(2_000)
        }
    }

    private func track(_ reply: HTTPReply) -> Bool {
        suspensions.withLock { suspensions in
            guard !suspensions.isStopping else { return false }
            suspensions.replies[ObjectIdentifier(reply)] = reply
            return true
        }
    }

    private func stoppingResponse() -> HTTPResponse {
        var response = rejections(.serverStopping)
        response.headers.set("Connection", "close")
        return response
    }

    /// A stream is about to be queued: list it, or close it at once when the server is stopping.
    private func track(_ stream: HTTPStream) {
        let tracked = suspensions.withLock { suspensions in
            guard !suspensions.isStopping else { return false }
            suspensions.streams[ObjectIdentifier(stream)] = stream
            return true
        }
        if !tracked { stream.close() }
    }

    // MARK: Queueing responses

    private func queue(_ answer: ReplyStateMachine.Answer, for context: RequestContext) -> MHD_Result {
        switch answer {
        case .response(let response):
            return queue(response, for: context)
        case .stream(let head, let stream):
            guard context.request?.method != "HEAD" && head.status != 304 && head.status != 204 else {
                // No body may follow (HEAD, 204, 304). libmicrohttpd 0.9.75 would still send a chunked
                // body's last chunk ("0\r\n\r\n") after a HEAD or 304 head, which a client takes for the
                // start of the next response: send a bodiless response instead; the stream ends at once.
                stream.close()
                return queue(head, for: context)
            }
            return queue(head, streaming: stream, for: context)
        }
    }

    /// Queues `response`; libmicrohttpd copies the body and adds Content-Length and Date.
    private func queue(_ response: HTTPResponse, for context: RequestContext) -> MHD_Result {
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return .NO }
        return queue(created, head: response, body: .bytes(response.body.count), for: context)
    }

    /// Queues a response of unknown size whose body libmicrohttpd pulls from `stream` (chunked on
    /// HTTP/1.1). The response keeps the stream alive until libmicrohttpd frees it.
    private func queue(
        _ head: HTTPResponse,
        streaming stream: HTTPStream,
        for context: RequestContext
    ) -> MHD_Result {
        track(stream)
        let retained = Unmanaged.passRetained(stream).toOpaque()
        guard
            let created = MHD_create_response_from_callback(
                MHDCallbacks.unknownSize, Self.streamBlockSize, MHDCallbacks.streamReader, retained,
                MHDCallbacks.streamReleased)
        else {
            Unmanaged<HTTPStream>.fromOpaque(retained).release()
            return .NO
        }
        return queue(created, head: head, body: .stream(stream), for: context)
    }

    /// Adds the head's headers and the request id to `created`, queues it, notes it for the
    /// completion hook and drops the caller's reference to it. Every response the server sends —
    /// answers, stream heads, rejections — passes here.
    private func queue(
        _ created: OpaquePointer,
        head: HTTPResponse,
        body: RequestContext.QueuedResponse.Body,
        for context: RequestContext
    ) -> MHD_Result {
        defer { MHD_destroy_response(created) }
        let requestID = configuration.requestIDHeader.flatMap { name in context.request?.requestID.map { (name, $0) } }
        for (name, value) in head.headers {
            // The server's request id replaces one the application set.
            if let (idName, _) = requestID, HTTPHeaders.namesMatch(name, idName) { continue }
            // Refused for headers libmicrohttpd manages itself (Content-Length): it sets those.
            Self.addIfValid(name, value, to: created)
        }
        if let (name, value) = requestID {
            Self.addIfValid(name, value, to: created)
        }
        let status = (200...599).contains(head.status) ? UInt32(head.status) : 500
        let result = MHD_queue_response(context.connection.pointer, status, created)
        if result == .YES {
            context.queued = RequestContext.QueuedResponse(status: Int(status), body: body)
        }
        return result
    }

    // MARK: Limits

    /// The first limit the request head passes, if any: request target, headers, announced body.
    private func limitExceeded(
        path: String,
        rawQuery: [(name: String, value: String)],
        headers: HTTPHeaders
    ) -> HTTPRejection? {
        if Self.targetLength(path: path, rawQuery: rawQuery) > configuration.maxURLBytes {
            return .uriTooLong(limit: configuration.maxURLBytes)
        }
        if Self.headerBytes(headers) > configuration.maxHeaderBytes {
            return .headersTooLarge(limit: configuration.maxHeaderBytes)
        }
        let lengths = headers.values(for: "Content-Length")
        if lengths.contains(where: { $0 != lengths[0] }) || (!lengths.isEmpty && headers.contains("Transfer-Encoding"))
        {
            return .ambiguousBodyLength
        }
        if let length = headers["Content-Length"], let announced = Int(length), announced > configuration.maxBodyBytes {
            return .bodyTooLarge(limit: configuration.maxBodyBytes)
        }
        return nil
    }

    /// The length of the request target as sent, rebuilt from the path and the raw query arguments
    /// (libmicrohttpd hands them over separately): `?`/`&` and `=` count one byte each. An empty
    /// argument (`a&&b`) or an empty value (`a=`) may make it a byte or two short.
    static func targetLength(path: String, rawQuery: [(name: String, value: String)]) -> Int {
        rawQuery.reduce(path.utf8.count) { length, argument in
            length + 1 + argument.name.utf8.count + (argument.value.isEmpty ? 0 : 1 + argument.value.utf8.count)
        }
    }

    /// The header section's size as sent: each field's name and value plus `": "` and CR LF.
    static func headerBytes(_ headers: HTTPHeaders) -> Int {
        headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    // MARK: libmicrohttpd values

    /// Adds the header to `response` unless its name or value would break the response framing
    /// (header injection). Checks the bytes `withCString` lends, which for a native string are its
    /// own (passing a `String` as a `const char *` argument copies it into a new array first): this
    /// runs for every header of every response.
    private static func addIfValid(_ name: String, _ value: String, to response: OpaquePointer) {
        let nameCount = name.utf8.count
        let valueCount = value.utf8.count
        _ = name.withCString { name in
            value.withCString { value in
                guard
                    isValidHeader(
                        name: UnsafeRawBufferPointer(start: name, count: nameCount),
                        value: UnsafeRawBufferPointer(start: value, count: valueCount))
                else { return MHD_Result.NO }
                return MHD_add_response_header(response, name, value)
            }
        }
    }

    private static func isValidHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        !name.isEmpty && name.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
            && !value.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }

    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(name: String, value: String)] {
        var values: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &values) { sink in
            _ = MHD_get_connection_values_n(connection, kind, MHDCallbacks.collectValue, sink)
        }
        return values
    }
}
