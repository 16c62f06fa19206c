/// A request that got a response, as reported to ``HTTPServer/Configuration/onRequestCompleted``
/// once libmicrohttpd is done with it: the facts an access log line or a metric needs.
public struct CompletedRequest: Sendable, Equatable {
    /// The method as sent, e.g. `"GET"`.
    public var method: String
    /// The raw (still percent-encoded) path without the query.
    public var path: String
    /// The pattern of the route that answered, e.g. `"/v1/sessions/{sessionId}"`; `nil` when no route
    /// matched (404, 405), when the server answered on its own (413, 414, 431), or when the responder
    /// is not a ``Router``.
    public var routeTemplate: String?
    /// The status sent (for a stream, the status of its head).
    public var status: Int
    /// Body bytes handed to libmicrohttpd for sending: the whole body of a response (0 for `HEAD`,
    /// `1xx`, 204 and 304, which carry none), or what a stream's writes had delivered when it ended.
    public var responseBodyBytes: Int
    /// ``HTTPRequest/requestID``; `nil` when ``HTTPServer/Configuration/requestIDHeader`` is `nil`.
    public var requestID: String?
    /// The peer's IP address, when known.
    public var remoteAddress: String? {
        get { peerAddress?.text }
        set { peerAddress = newValue.map(RemoteAddress.init(text:)) }
    }
    /// Where ``remoteAddress`` comes from (``HTTPRequest/peerAddress``).
    var peerAddress: RemoteAddress?
    /// Seconds from the first handler call (the request head was in) until libmicrohttpd finished
    /// with the response, on the monotonic clock of ``HTTPServer/Configuration/time``.
    public var duration: Double
    /// Whether the response went out completely (libmicrohttpd's `MHD_REQUEST_TERMINATED_COMPLETED_OK`);
    /// `false` when the client went away or the connection failed, timed out, or was cut by the
    /// server (a stream overflowing its buffer, a connection still busy when ``HTTPServer/stop()``
    /// gives up waiting).
    public var endedNormally: Bool

    /// Creates a record; the server fills it in, tests and log formatters may build their own.
    public init(
        method: String,
        path: String,
        routeTemplate: String?,
        status: Int,
        responseBodyBytes: Int,
        requestID: String?,
        remoteAddress: String?,
        duration: Double,
        endedNormally: Bool
    ) {
        self.method = method
        self.path = path
        self.routeTemplate = routeTemplate
        self.status = status
        self.responseBodyBytes = responseBodyBytes
        self.requestID = requestID
        self.peerAddress = remoteAddress.map(RemoteAddress.init(text:))
        self.duration = duration
        self.endedNormally = endedNormally
    }
}
