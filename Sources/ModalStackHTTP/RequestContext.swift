/// Per-request state kept in libmicrohttpd's `*con_cls` from the request line on (retained there by
/// the URI callback, released by the completion callback). Only the connection's worker thread
/// touches it.
final class RequestContext {
    enum Body {
        case accepting
        /// Over the limit: the rest is read and dropped so the client can read the 413.
        case tooLarge(discarded: Int)
    }

    /// What was queued for libmicrohttpd to send, for ``HTTPServer/Configuration/onRequestCompleted``.
    struct QueuedResponse {
        enum Body {
            case bytes(Int)
            /// Counted when the request is over: what the stream's writes delivered.
            case stream(HTTPStream)
        }

        let status: Int
        let body: Body
    }

    let connection: ConnectionHandle
    /// The connection's request deadline (``RequestDeadlines``), `nil` when deadlines are off.
    let deadline: RequestDeadlines.Entry?
    /// The request target's length up to its first NUL byte, measured on the request line as
    /// received, before libmicrohttpd cuts it into path and query.
    let targetLengthBeforeNUL: Int
    /// Set on the first handler call, once the head is in.
    var request: HTTPRequest?
    var body: Body = .accepting
    /// When the request line was read, in nanoseconds on the monotonic clock of
    /// ``HTTPServer/Configuration/time``.
    let startedAt: Int64
    /// Set when the request was handed to the responder.
    var reply: HTTPReply?
    /// Whether the server lists this request among the suspended ones it must answer on stop.
    var isTracked = false
    /// Set once libmicrohttpd accepted a response for the request.
    var queued: QueuedResponse?

    init(
        connection: ConnectionHandle,
        targetLengthBeforeNUL: Int,
        startedAt: Int64,
        deadline: RequestDeadlines.Entry?
    ) {
        self.connection = connection
        self.deadline = deadline
        self.targetLengthBeforeNUL = targetLengthBeforeNUL
        self.startedAt = startedAt
    }

    /// Takes a chunk of body; returns `false` when the connection should be dropped.
    func append(_ chunk: UnsafeRawBufferPointer, limit: Int, discardLimit: Int) -> Bool {
        switch body {
        case .accepting:
            if let received = request?.body.count, received + chunk.count <= limit {
                request?.body.append(contentsOf: chunk)
            } else {
                request?.body = []
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
