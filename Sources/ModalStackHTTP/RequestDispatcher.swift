import CMicroHTTPD
import Glibc
import Synchronization

/// What the daemon's callbacks work on: turns libmicrohttpd's handler calls into one `respond` per
/// request and queues the answers. Its address is the callbacks' `cls`.
final class RequestDispatcher: Sendable {
    private struct Suspensions {
        var isStopping = false
        var replies: [ObjectIdentifier: HTTPReply] = [:]
    }

    let configuration: HTTPServer.Configuration
    private let responder: any HTTPResponder
    private let rejections: @Sendable (HTTPRejection) -> HTTPResponse
    /// Suspended requests, which must be answered (and so resumed) before the daemon may stop.
    private let suspensions = Mutex(Suspensions())

    init(
        configuration: HTTPServer.Configuration,
        responder: any HTTPResponder,
        rejections: @escaping @Sendable (HTTPRejection) -> HTTPResponse
    ) {
        self.configuration = configuration
        self.responder = responder
        self.rejections = rejections
    }

    // MARK: Handler calls

    /// First call for a request: the head is in. Rejects an announced oversize body before it is read.
    func begin(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>,
        method: UnsafePointer<CChar>,
        contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let headers = HTTPHeaders(Self.values(of: connection, kind: .HEADER_KIND))
        if let length = headers["Content-Length"], let announced = Int(length), announced > configuration.maxBodyBytes {
            // Queued on the first call, libmicrohttpd answers without reading the body and closes.
            return queue(rejections(.bodyTooLarge(limit: configuration.maxBodyBytes)), on: connection)
        }
        // Query arguments arrive raw (see modalstack_mhd_keep_escaped) except '+', already a space.
        let query = Self.values(of: connection, kind: .GET_ARGUMENT_KIND).map {
            (name: PercentEncoding.decodeLeniently($0.name[...]), value: PercentEncoding.decodeLeniently($0.value[...]))
        }
        let request = HTTPRequest(
            method: String(cString: method),
            path: String(cString: url),
            query: query,
            headers: headers,
            remoteAddress: modalstack_mhd_client_address(connection).flatMap(ListenSocket.text(of:))
        )
        let context = RequestContext(connection: ConnectionHandle(pointer: connection), request: request)
        contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
        return .YES
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
        let connection = context.connection.pointer
        if let reply = context.reply {
            guard let response = reply.resumed() else { return .NO }
            return queue(response, on: connection)
        }
        if case .tooLarge = context.body {
            return queue(rejections(.bodyTooLarge(limit: configuration.maxBodyBytes)), on: connection)
        }
        return dispatch(context)
    }

    /// The request is complete: hand it to the responder, then queue the answer or suspend.
    private func dispatch(_ context: RequestContext) -> MHD_Result {
        let connection = context.connection.pointer
        let reply = HTTPReply(connection: context.connection)
        context.reply = reply
        let request = context.request
        // The responder may keep the request while suspended; the context need not keep a second body.
        context.request.body = []
        responder.respond(to: request, reply: reply)

        switch reply.respondReturned() {
        case .queue(let response):
            return queue(response, on: connection)
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

    /// The completion callback: the request is over, whatever the reason.
    func complete(contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = contextSlot.pointee else { return }
        contextSlot.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        guard let reply = context.reply else { return }
        reply.close()
        if context.isTracked {
            suspensions.withLock { _ = $0.replies.removeValue(forKey: ObjectIdentifier(reply)) }
        }
    }

    // MARK: Stopping

    /// Answers every suspended request with the stopping response and waits (up to `gracePeriod`) until
    /// they are complete; requests suspending from now on get the same answer at once.
    func answerSuspendedRequestsForStop(gracePeriod: Duration) {
        let pending = suspensions.withLock { suspensions in
            suspensions.isStopping = true
            return Array(suspensions.replies.values)
        }
        let response = stoppingResponse()
        for reply in pending {
            reply.send(response)
        }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: gracePeriod)
        while suspensions.withLock({ !$0.replies.isEmpty }) && clock.now < deadline {
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

    // MARK: libmicrohttpd values

    /// Queues `response`; libmicrohttpd copies the body and adds Content-Length and Date.
    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for (name, value) in response.headers where Self.isValidHeader(name: name, value: value) {
            // Refused for headers libmicrohttpd manages itself (Content-Length): it sets those.
            _ = MHD_add_response_header(created, name, value)
        }
        let status = (200...599).contains(response.status) ? UInt32(response.status) : 500
        return MHD_queue_response(connection, status, created)
    }

    /// Rejects names and values that would break the response framing (header injection).
    private static func isValidHeader(name: String, value: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
            && value.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0 }
    }

    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(name: String, value: String)] {
        var values: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &values) { sink in
            _ = MHD_get_connection_values_n(connection, kind, MHDCallbacks.collectValue, sink)
        }
        return values
    }
}
