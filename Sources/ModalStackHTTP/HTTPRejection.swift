/// Why the server answered on the application's behalf; the application renders the response.
///
/// The server adds the request id header (``HTTPServer/Configuration/requestIDHeader``) to whatever is
/// rendered. Requests over libmicrohttpd's own buffer (``HTTPServer/Configuration/connectionMemoryLimitBytes``)
/// never get here: libmicrohttpd answers them itself (414 or 431, with a small HTML body).
public enum HTTPRejection: Sendable, Equatable {
    /// The request body is larger than the configured limit (render as 413).
    case bodyTooLarge(limit: Int)
    /// The server is stopping and a deferred request was still unanswered (render as 503).
    case serverStopping
    /// The request target (path and query) is longer than ``HTTPServer/Configuration/maxURLBytes``
    /// (render as 414).
    case uriTooLong(limit: Int)
    /// The body's length is ambiguous: several different `Content-Length` values, or both
    /// `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.3; render as 400). The connection is
    /// closed, so that no byte of such a body is ever read as the next request.
    case ambiguousBodyLength
    /// The request header fields take more than ``HTTPServer/Configuration/maxHeaderBytes`` (render as 431).
    case headersTooLarge(limit: Int)
    /// The request line (method or target) holds a NUL byte, where libmicrohttpd would cut it short
    /// (render as 400). The connection is closed.
    case nulInRequestLine
}
