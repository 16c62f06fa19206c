/// An HTTP response to send.
///
/// `Content-Length`, `Date` and `Connection` are managed by libmicrohttpd; the body is omitted for `HEAD`.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code, passed through as is (200–599; anything else is sent as 500).
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
