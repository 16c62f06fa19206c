/// Per-request state kept in libmicrohttpd's `*con_cls` between handler calls (retained there,
/// released by the completion callback). Only the connection's worker thread touches it.
final class RequestContext {
    enum Body {
        case accepting
        /// Over the limit: the rest is read and dropped so the client can read the 413.
        case tooLarge(discarded: Int)
    }

    let connection: ConnectionHandle
    var request: HTTPRequest
    var body: Body = .accepting
    /// Set when the request was handed to the responder.
    var reply: HTTPReply?
    /// Whether the server lists this request among the suspended ones it must answer on stop.
    var isTracked = false

    init(connection: ConnectionHandle, request: HTTPRequest) {
        self.connection = connection
        self.request = request
    }

    /// Takes a chunk of body; returns `false` when the connection should be dropped.
    func append(_ chunk: UnsafeRawBufferPointer, limit: Int, discardLimit: Int) -> Bool {
        switch body {
        case .accepting:
            if request.body.count + chunk.count <= limit {
                request.body.append(contentsOf: chunk)
            } else {
                request.body = []
                body = .tooLarge(discarded: chunk.count)
            }
            return true
        case .tooLarge(let discarded):
            let total = discarded + chunk.count
            body = .tooLarge(discarded: total)
            return total <= discardLimit
        }
    }
}
