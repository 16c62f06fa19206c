/// A complete HTTP request: head and buffered body.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. `"GET"`.
    public var method: String
    /// The raw (still percent-encoded) path without the query, e.g. `"/v1/sessions/abc"`.
    public var path: String
    /// The query arguments in order, percent-decoded ('+' decoded as a space).
    public var query: [(name: String, value: String)]
    /// The request header fields.
    public var headers: HTTPHeaders
    /// The request body (empty when none was sent).
    public var body: [UInt8]
    /// The `{name}` segments of the matched route, percent-decoded; filled by ``Router``.
    public var pathParameters: PathParameters
    /// The pattern of the matched route, e.g. `"/v1/sessions/{sessionId}"`; filled by ``Router``.
    public var routeTemplate: String?
    /// The peer's IP address (`"127.0.0.1"`, `"::1"`), when known.
    public var remoteAddress: String? {
        get { peerAddress?.text }
        set { peerAddress = newValue.map(RemoteAddress.init(text:)) }
    }
    /// Where ``remoteAddress`` comes from: for requests the server built, the socket address.
    var peerAddress: RemoteAddress?
    /// The id the server sends back in ``HTTPServer/Configuration/requestIDHeader``: the client's own
    /// (when it is 1–128 visible ASCII characters) or a generated one; `nil` when that header is
    /// turned off (or for requests not built by the server).
    public var requestID: String?

    /// Creates a request; the server and tests use it.
    public init(
        method: String,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = [:],
        body: [UInt8] = [],
        remoteAddress: String? = nil,
        requestID: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = PathParameters()
        self.routeTemplate = nil
        self.peerAddress = remoteAddress.map(RemoteAddress.init(text:))
        self.requestID = requestID
    }

    /// Creates a request from a request target such as `"/v1/sessions?limit=10"`, splitting off and
    /// decoding the query the way the server does.
    public init(method: String, target: String, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        if let mark = target.firstIndex(of: "?") {
            self.init(
                method: method,
                path: String(target[..<mark]),
                query: PercentEncoding.parseQuery(target[target.index(after: mark)...]),
                headers: headers,
                body: body
            )
        } else {
            self.init(method: method, path: target, headers: headers, body: body)
        }
    }

    /// The values of every query argument named `name` (case-sensitive), in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }
}
