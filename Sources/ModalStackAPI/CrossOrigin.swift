import ModalStackHTTP

/// Cross-origin requests from browsers (the Fetch standard's CORS protocol), for the origins
/// configured with `--cors-origins`.
///
/// Every answer to a request from an allowed origin carries `Access-Control-Allow-Origin` (that
/// origin) and the response headers a page may read, and every answer `Vary: Origin`; a preflight (`OPTIONS`)
/// is answered with the methods and request headers the API takes. A request from any other
/// origin gets no CORS headers, so the browser keeps the response from the page.
struct CrossOrigin: Sendable {
    enum Origins: Sendable, Equatable {
        case none
        case any
        case list(Set<String>)
    }

    static let allowedHeaders =
        "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Prefer, Last-Event-ID, X-Request-Id"
    static let exposedHeaders =
        "ETag, Location, X-Request-Id, Idempotent-Replayed, Preference-Applied, Retry-After, WWW-Authenticate"
    /// How long a browser may reuse a preflight's answer, in seconds.
    static let maxAgeSeconds = 600

    let origins: Origins

    /// In front of the router: adds the CORS headers to every answer for an allowed origin.
    struct Responder: HTTPResponder {
        let policy: CrossOrigin
        let next: any HTTPResponder

        func respond(to request: HTTPRequest, reply: HTTPReply) {
            if policy.origins != .none {
                var headers = HTTPHeaders()
                // For every origin, allowed or not: a cache must not give one origin's answer to another.
                headers.set("Vary", "Origin")
                if let origin = policy.allowedOrigin(of: request) {
                    headers.set("Access-Control-Allow-Origin", origin)
                    headers.set("Access-Control-Expose-Headers", CrossOrigin.exposedHeaders)
                }
                reply.addHeaders(headers)
            }
            next.respond(to: request, reply: reply)
        }
    }

    /// The answer to `OPTIONS` on a path that exists: `204` with `Allow` (RFC 9110), and for a
    /// preflight from an allowed origin what the browser asks about.
    func options(_ request: HTTPRequest, allowed methods: [String]) -> HTTPResponse {
        let allowed = methods.joined(separator: ", ")
        var headers = HTTPHeaders()
        headers.set("Allow", allowed)
        if allowedOrigin(of: request) != nil, request.headers["Access-Control-Request-Method"] != nil {
            headers.set("Access-Control-Allow-Methods", allowed)
            headers.set("Access-Control-Allow-Headers", Self.allowedHeaders)
            headers.set("Access-Control-Max-Age", String(Self.maxAgeSeconds))
        }
        return HTTPResponse(status: 204, headers: headers, body: [])
    }

    private func allowedOrigin(of request: HTTPRequest) -> String? {
        guard let origin = request.headers["Origin"] else { return nil }
        switch origins {
        case .none: return nil
        case .any: return origin
        case .list(let allowed): return allowed.contains(origin) ? origin : nil
        }
    }
}
