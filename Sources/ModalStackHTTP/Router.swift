/// Routes requests by method and path pattern to handlers.
///
/// Patterns are `/`-separated literal segments and `{name}` segments, e.g.
/// `"/v1/sessions/{sessionId}/presentations/{presentationId}"`. A `{name}` segment matches one
/// non-empty segment, which is percent-decoded into ``HTTPRequest/pathParameters`` (a malformed escape
/// or invalid UTF-8 does not match). Literal segments compare with the raw path, and literal segments
/// win over `{name}` segments. A trailing slash is a different path. `HEAD` uses the `GET` handler
/// unless one is registered for `HEAD` (libmicrohttpd drops the body). The matched pattern is set on
/// the request (``HTTPRequest/routeTemplate``) and reported to ``HTTPServer/Configuration/onRequestCompleted``.
public struct Router: HTTPResponder {
    /// Answers synchronously.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Answers through the reply, now or later from any thread.
    public typealias DeferredHandler = @Sendable (HTTPRequest, HTTPReply) -> Void

    enum Endpoint: Sendable {
        case immediate(Handler)
        case deferred(DeferredHandler)
    }

    /// One node per path segment position; a trie shared by all routes.
    struct Node: Sendable {
        /// Literal segments as bytes, compared with the raw path's bytes.
        var literals: [(segment: [UInt8], child: Int)] = []
        var parameterChild: Int?
        /// Set when a pattern ends here.
        var route: Route?
    }

    struct Route: Sendable {
        let template: String
        let parameterNames: [String]
        /// A route has a handful of methods: found by comparing, not hashing, for every request.
        var endpoints: [(method: String, endpoint: Endpoint)] = []

        /// The methods for an `Allow` header: registered ones, plus `HEAD` when `GET` is there; sorted.
        var allowedMethods: [String] {
            var methods = Set(endpoints.map(\.method))
            if methods.contains("GET") { methods.insert("HEAD") }
            return methods.sorted()
        }

        func endpoint(for method: String) -> Endpoint? {
            registered(method) ?? (method == "HEAD" ? registered("GET") : nil)
        }

        func registered(_ method: String) -> Endpoint? {
            endpoints.first { $0.method == method }?.endpoint
        }
    }

    enum Match {
        case found(Endpoint, template: String, parameters: PathParameters)
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    private var nodes: [Node] = [Node()]
    private let notFound: Handler
    private let methodNotAllowed: @Sendable (HTTPRequest, _ allowed: [String]) -> HTTPResponse

    /// Creates an empty router.
    /// - Parameters:
    ///   - notFound: Answers requests whose path matches no pattern.
    ///   - methodNotAllowed: Answers requests whose path matches but not the method; receives the
    ///     allowed methods, sorted, for the `Allow` header.
    public init(
        notFound: @escaping Handler,
        methodNotAllowed: @escaping @Sendable (HTTPRequest, _ allowed: [String]) -> HTTPResponse
    ) {
        self.notFound = notFound
        self.methodNotAllowed = methodNotAllowed
    }

    /// Every method some route answers, `HEAD` wherever `GET` is.
    public var methods: Set<String> {
        Set(nodes.compactMap(\.route).flatMap(\.allowedMethods))
    }

    /// Registers a synchronous handler for `method` (e.g. `"GET"`) and `pattern`.
    ///
    /// An invalid pattern or a second handler for the same method and pattern is a programming error.
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        register(method, pattern, .immediate(handler))
    }

    /// Registers a handler that answers through the ``HTTPReply``, possibly later and from another thread.
    public mutating func addDeferred(_ method: String, _ pattern: String, _ handler: @escaping DeferredHandler) {
        register(method, pattern, .deferred(handler))
    }

    public func respond(to request: HTTPRequest, reply: HTTPReply) {
        switch match(method: request.method, path: request.path) {
        case .found(let endpoint, let template, let parameters):
            var request = request
            request.pathParameters = parameters
            request.routeTemplate = template
            reply.routeTemplate = template
            switch endpoint {
            case .immediate(let handler): reply.send(handler(request))
            case .deferred(let handler): handler(request, reply)
            }
        case .methodNotAllowed(let allowed):
            reply.send(methodNotAllowed(request, allowed))
        case .notFound:
            reply.send(notFound(request))
        }
    }

    // MARK: Matching

    func match(method: String, path: String) -> Match {
        var path = path
        return path.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/") else { return .notFound }
            return nodes.withUnsafeBufferPointer { nodes in
                var search = Search(nodes: nodes, path: bytes, method: method)
                if let route = search.route(at: 0, segmentStart: 1) {
                    // Registration keeps the names of a route distinct.
                    let parameters = PathParameters(names: route.parameterNames, values: search.captures)
                    return .found(route.endpoint(for: method)!, template: route.template, parameters: parameters)
                }
                if let route = search.firstPathMatch {
                    return .methodNotAllowed(allowed: route.allowedMethods)
                }
                return .notFound
            }
        }
    }

    /// Depth-first over the trie, literals before parameters: the first route that has the method,
    /// remembering the first route whose path matched at all (for 405). Works on the path's bytes:
    /// this runs for every request, so no segment is copied unless it is captured.
    private struct Search {
        let nodes: UnsafeBufferPointer<Node>
        let path: UnsafeBufferPointer<UInt8>
        let method: String
        var captures: [String] = []
        var firstPathMatch: Route?

        /// The route for the segments from `segmentStart` on, below node `index`; `segmentStart` is
        /// `nil` once the path is used up (a path ending in `/` has a last, empty segment).
        mutating func route(at index: Int, segmentStart: Int?) -> Route? {
            guard let start = segmentStart else {
                guard let route = nodes[index].route else { return nil }
                if route.endpoint(for: method) != nil { return route }
                if firstPathMatch == nil { firstPathMatch = route }
                return nil
            }
            let end = path[start...].firstIndex(of: UInt8(ascii: "/")) ?? path.count
            let segment = UnsafeBufferPointer(rebasing: path[start..<end])
            let next = end < path.count ? end + 1 : nil
            for literal in nodes[index].literals
            where literal.segment.count == segment.count && literal.segment.elementsEqual(segment) {
                if let found = route(at: literal.child, segmentStart: next) { return found }
            }
            if let child = nodes[index].parameterChild, !segment.isEmpty,
                let value = PercentEncoding.decodeStrictly(segment)
            {
                captures.append(value)
                if let found = route(at: child, segmentStart: next) { return found }
                captures.removeLast()
            }
            return nil
        }
    }

    // MARK: Registration

    private mutating func register(_ method: String, _ pattern: String, _ endpoint: Endpoint) {
        precondition(pattern.hasPrefix("/"), "route pattern \"\(pattern)\" must start with /")
        var index = 0
        var parameterNames: [String] = []
        for segment in pattern.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") {
                let name = String(segment.dropFirst().dropLast())
                precondition(
                    !name.isEmpty && !name.contains("{") && !name.contains("}"),
                    "route pattern \"\(pattern)\" has an invalid parameter segment \"\(segment)\"")
                precondition(!parameterNames.contains(name), "route pattern \"\(pattern)\" repeats {\(name)}")
                parameterNames.append(name)
                if let child = nodes[index].parameterChild {
                    index = child
                } else {
                    nodes.append(Node())
                    nodes[index].parameterChild = nodes.count - 1
                    index = nodes.count - 1
                }
            } else {
                precondition(
                    !segment.contains("{") && !segment.contains("}"),
                    "route pattern \"\(pattern)\" has braces inside segment \"\(segment)\"")
                if let literal = nodes[index].literals.first(where: { $0.segment.elementsEqual(segment.utf8) }) {
                    index = literal.child
                } else {
                    nodes.append(Node())
                    nodes[index].literals.append((Array(segment.utf8), nodes.count - 1))
                    index = nodes.count - 1
                }
            }
        }
        var route = nodes[index].route ?? Route(template: pattern, parameterNames: parameterNames)
        precondition(
            route.parameterNames == parameterNames,
            "route pattern \"\(pattern)\" names its parameters unlike \"\(route.template)\"")
        precondition(route.registered(method) == nil, "route \(method) \(pattern) is registered twice")
        route.endpoints.append((method, endpoint))
        nodes[index].route = route
    }
}
