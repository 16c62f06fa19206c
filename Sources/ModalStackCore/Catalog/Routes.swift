/// A deep link the catalog routes: a URL pattern and what a matching link does, either a whole
/// target navigation built from the link's captures (the back stack an app would build for it)
/// or an action relative to what is open (push onto the top level, present a modal, replace the
/// top level's path), after clearing everything if `clear` says so.
///
/// ```json
/// {"name": "download-item", "url": "/onboarding/downloads/{itemId}",
///  "navigate": {"stack": [{"destination": "onboarding"},
///    {"destination": "downloads", "path": [{"destination": "downloadItem", "payload": {"itemId": "{itemId}"}}]}]}}
/// ```
///
/// `url` is an optional `scheme://host` (both then matched case-insensitively), a path of literal
/// segments and `{name}` captures, and optional query captures (`?topic={topic}`). A payload
/// string that is exactly `"{name}"` becomes the capture typed by the destination's payload schema
/// there (integer, number, boolean, else string); `{name}` inside a longer string is replaced as
/// text. A query capture the link lacks leaves its member out.
public struct Route: Sendable, Hashable {
    /// What the route does, as request bodies with `{name}` placeholders.
    enum Template: Sendable, Hashable {
        case navigate(JSONValue)
        case push(JSONValue, clear: Bool)
        case present(JSONValue, clear: Bool)
        case replacePath(JSONValue)
    }

    public let name: String?
    /// The pattern as declared.
    public let url: String
    let pattern: URLPattern
    let template: Template
    /// The route as the catalog file declares it, for ``Catalog/json``.
    let declared: JSONValue

    /// `{"name"?, "url"}`: how answers name the route that matched.
    public var json: JSONValue {
        var object: JSONObject = [:]
        if let name { object.append("name", .string(name)) }
        object.append("url", .string(url))
        return .object(object)
    }
}

/// What a link resolved to: the route that matched and the request it builds.
public struct ResolvedLink: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        case navigate(NavigationRequest)
        case push(PushRequest, clear: Bool)
        case present(PresentRequest, clear: Bool)
        /// The top level's new path; everything else stays.
        case replacePath([PushRequest])

        public var name: String {
            switch self {
            case .navigate: "navigate"
            case .push: "push"
            case .present: "present"
            case .replacePath: "replacePath"
            }
        }

        public var clears: Bool {
            switch self {
            case .push(_, let clear), .present(_, let clear): clear
            case .navigate, .replacePath: false
            }
        }
    }

    /// The link as given.
    public let url: String
    public let route: Route
    public let action: Action
    /// The body of the request the action is, captures filled in: what `GET /v1/links/resolve` shows.
    public let request: JSONValue
}

// MARK: - Resolving

extension Catalog {
    /// The longest link accepted, in bytes.
    public static let maxLinkLength = 2048

    /// Finds the first route matching `url` and builds its request; a link that no route matches
    /// is `no-route`, one that is not a URL or whose captures do not fit the payload schema is a
    /// validation error at `/url`.
    public func resolve(_ url: String) throws(ModalError) -> ResolvedLink {
        let link: LinkURL
        do {
            link = try LinkURL(url)
        } catch {
            throw .validation([.init(pointer: "/url", message: error.message)])
        }
        for route in routes {
            guard let captures = route.pattern.match(link) else { continue }
            let filled: JSONValue
            do {
                filled = try fill(route.template, captures: captures)
            } catch {
                throw .validation([.init(pointer: "/url", message: error.message)])
            }
            return ResolvedLink(
                url: url, route: route, action: try Self.action(route.template, body: filled), request: filled)
        }
        throw ModalError(.noRoute, "no route matches \(url)", context: ["url": .string(url)])
    }

    /// The request a route's filled-in template is.
    fileprivate static func action(_ template: Route.Template, body: JSONValue) throws(ModalError)
        -> ResolvedLink.Action
    {
        switch template {
        case .navigate: return .navigate(try NavigationRequest(json: body))
        case .push(_, let clear): return .push(try PushRequest(json: body, allowsLevel: false), clear: clear)
        case .present(_, let clear): return .present(try PresentRequest(json: body), clear: clear)
        case .replacePath:
            var errors: [ModalError.FieldError] = []
            let path = PushRequest.path(body["path"]?.arrayValue ?? [], at: "/path", errors: &errors)
            guard errors.isEmpty else { throw .validation(errors) }
            return .replacePath(path)
        }
    }

    private func fill(_ template: Route.Template, captures: [String: String]) throws(LinkError) -> JSONValue {
        switch template {
        case .navigate(let body):
            return .object([
                "path": .array(try fillEach(body["path"], captures)),
                "stack": .array(try fillEach(body["stack"], captures)),
            ])
        case .push(let body, _), .present(let body, _): return try fillRequest(body, captures)
        case .replacePath(let body): return .object(["path": .array(try fillEach(body["path"], captures))])
        }
    }

    private func fillEach(_ requests: JSONValue?, _ captures: [String: String]) throws(LinkError) -> [JSONValue] {
        var filled: [JSONValue] = []
        for request in requests?.arrayValue ?? [] {
            filled.append(try fillRequest(request, captures))
        }
        return filled
    }

    /// A present or push request with its captures filled in; its payload typed by its destination's schema.
    private func fillRequest(_ request: JSONValue, _ captures: [String: String]) throws(LinkError) -> JSONValue {
        guard let object = request.objectValue else { return request }
        let schema = object["destination"]?.stringValue.flatMap { destination(named: $0)?.payloadSchema }
        var filled: JSONObject = [:]
        for member in object.members {
            let value: JSONValue?
            switch member.key {
            case "payload": value = try Self.fill(member.value, captures, schema: schema, at: "payload")
            case "path": value = .array(try fillEach(member.value, captures))
            default: value = try Self.fill(member.value, captures, schema: nil, at: member.key)
            }
            if let value { filled.append(member.key, value) }
        }
        return .object(filled)
    }

    /// `value` with its placeholders filled; nil when it is a placeholder of a capture the link
    /// does not have (an absent query parameter).
    private static func fill(_ value: JSONValue, _ captures: [String: String], schema: PayloadSchema?, at place: String)
        throws(LinkError) -> JSONValue?
    {
        switch value {
        case .string(let text):
            if let name = RoutePlaceholders.whole(text) {
                guard let capture = captures[name] else { return nil }
                return try typed(capture, named: name, schema: schema, at: place)
            }
            var missing = false
            let filled = RoutePlaceholders.replace(in: text) { name in
                if captures[name] == nil { missing = true }
                return captures[name] ?? ""
            }
            return missing ? nil : .string(filled)
        case .object(let object):
            var filled: JSONObject = [:]
            for member in object.members {
                let inner = try fill(
                    member.value, captures, schema: schema?.property(member.key), at: place + "/" + member.key)
                if let inner { filled.append(member.key, inner) }
            }
            return .object(filled)
        case .array(let elements):
            var filled: [JSONValue] = []
            for element in elements {
                if let inner = try fill(element, captures, schema: nil, at: place) { filled.append(inner) }
            }
            return .array(filled)
        case .null, .bool, .number:
            return value
        }
    }

    /// A capture as the value the schema wants there: the first of its types the text reads as.
    private static func typed(_ capture: String, named name: String, schema: PayloadSchema?, at place: String)
        throws(LinkError) -> JSONValue
    {
        guard let types = schema?.typeNames else { return .string(capture) }
        for type in types {
            switch type {
            case "integer":
                if let value = try? JSONParser.parse(capture), value.intValue != nil { return value }
            case "number":
                if let value = try? JSONParser.parse(capture), value.doubleValue?.isFinite == true { return value }
            case "boolean":
                if capture == "true" || capture == "false" { return .bool(capture == "true") }
            case "string":
                return .string(capture)
            default:
                continue
            }
        }
        throw LinkError(
            message:
                "has {\(name)} = \(JSONValue.string(capture).jsonText), not a valid \(types.joined(separator: " or ")) for \(place)"
        )
    }
}

/// Why a link could not be read or filled in.
struct LinkError: Error {
    let message: String
}

/// `{name}` placeholders in route templates.
enum RoutePlaceholders {
    /// The capture name when `text` is exactly one placeholder.
    static func whole(_ text: String) -> String? {
        guard text.hasPrefix("{"), text.hasSuffix("}"), text.count > 2 else { return nil }
        let name = String(text.dropFirst().dropLast())
        return isValidName(name) ? name : nil
    }

    /// Every placeholder name in `text`, in order.
    static func names(in text: String) -> [String] {
        var names: [String] = []
        _ = replace(in: text) { name in
            names.append(name)
            return ""
        }
        return names
    }

    /// `text` with each `{name}` replaced by what `value` gives for it.
    static func replace(in text: String, _ value: (String) -> String) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "}"), isValidName(String(after[..<close])) else {
                result.append("{")
                rest = after
                continue
            }
            result += value(String(after[..<close]))
            rest = after[after.index(after: close)...]
        }
        return result + rest
    }

    /// `^[A-Za-z][A-Za-z0-9_]*$`, at most 64 characters.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 64, first.isASCIILetter else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "_" }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}

// MARK: - URLs and patterns

/// A link taken apart: scheme and host (lowercased; nil for a bare path), the path's segments
/// (percent-decoded, empty ones dropped) and the query's parameters.
struct LinkURL {
    let scheme: String?
    let host: String?
    let segments: [String]
    let query: [String: String]

    init(_ text: String) throws(LinkError) {
        guard !text.isEmpty, text.utf8.count <= Catalog.maxLinkLength else {
            throw LinkError(message: "must be 1-\(Catalog.maxLinkLength) bytes")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw LinkError(message: "must be a URL of visible ASCII characters (percent-encode the rest)")
        }
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var queryText: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var scheme: String?
        var host: String?
        if let colon = rest.firstIndex(of: ":"), !rest[..<colon].contains("/") {
            let name = rest[..<colon]
            guard let first = name.unicodeScalars.first, first.isASCIILetter,
                name.unicodeScalars.allSatisfy({
                    $0.isASCIILetter || ("0"..."9").contains($0) || "+.-".unicodeScalars.contains($0)
                })
            else { throw LinkError(message: "has an invalid scheme") }
            scheme = name.lowercased()
            rest = rest[rest.index(after: colon)...]
            if rest.hasPrefix("//") {
                rest = rest.dropFirst(2)
                let end = rest.firstIndex(of: "/") ?? rest.endIndex
                var authority = rest[..<end]
                if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
                if let portColon = authority.lastIndex(of: ":"), !authority.hasPrefix("[") {
                    authority = authority[..<portColon]
                }
                host = try Self.decode(authority).lowercased()
                rest = rest[end...]
            }
        } else if !rest.hasPrefix("/") {
            throw LinkError(message: "must be an absolute URL (scheme://host/path) or a path starting with /")
        }
        self.scheme = scheme
        self.host = host
        var segments: [String] = []
        for segment in rest.split(separator: "/", omittingEmptySubsequences: true) {
            segments.append(try Self.decode(segment))
        }
        self.segments = segments
        var query: [String: String] = [:]
        for pair in queryText.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0])
            if query[name] == nil { query[name] = try Self.decode(parts.count > 1 ? parts[1] : "") }
        }
        self.query = query
    }

    /// The segments a route without scheme and host matches: an app's own scheme puts the first
    /// segment in the host's place (`myapp://downloads/42` is `/downloads/42`).
    var routedSegments: [String] {
        guard let host, !host.isEmpty, scheme != "http", scheme != "https" else { return segments }
        return [host] + segments
    }

    /// Percent-decoding to UTF-8; a bad escape or bytes that are not UTF-8 are refused.
    static func decode(_ text: Substring) throws(LinkError) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                    let value = UInt8(String(text[high..<utf8.index(high, offsetBy: 2)]), radix: 16)
                else { throw LinkError(message: "has a bad percent-escape") }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw LinkError(message: "decodes to bytes that are not UTF-8")
        }
        return decoded
    }
}

/// A route's `url`, taken apart: what it requires of a link, and which captures it binds.
struct URLPattern: Sendable, Hashable {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case capture(String)
    }

    let scheme: String?
    let host: String?
    let segments: [Segment]
    /// Query parameter → capture name.
    let query: [String: String]

    /// Every capture the pattern binds, path first.
    var captureNames: [String] {
        segments.compactMap { if case .capture(let name) = $0 { name } else { nil } } + query.values.sorted()
    }

    init(_ text: String) throws(LinkError) {
        let url = try LinkURL(text)
        scheme = url.scheme
        host = url.host
        var names: Set<String> = []
        func capture(_ text: String) throws(LinkError) -> String? {
            guard text.contains("{") || text.contains("}") else { return nil }
            guard let name = RoutePlaceholders.whole(text) else {
                throw LinkError(
                    message: "\(JSONValue.string(text).jsonText) must be a literal or one whole {name} capture")
            }
            guard names.insert(name).inserted else { throw LinkError(message: "captures {\(name)} twice") }
            return name
        }
        var segments: [Segment] = []
        for segment in url.segments {
            segments.append(try capture(segment).map(Segment.capture) ?? .literal(segment))
        }
        self.segments = segments
        var query: [String: String] = [:]
        for (parameter, value) in url.query {
            guard let name = try capture(value) else {
                throw LinkError(message: "query parameter \(parameter) must be a {name} capture")
            }
            query[parameter] = name
        }
        self.query = query
    }

    /// The captures of `link` when it matches, else nil.
    func match(_ link: LinkURL) -> [String: String]? {
        let linkSegments: [String]
        if let scheme {
            guard link.scheme == scheme, link.host == host else { return nil }
            linkSegments = link.segments
        } else {
            linkSegments = link.routedSegments
        }
        guard linkSegments.count == segments.count else { return nil }
        var captures: [String: String] = [:]
        for (segment, text) in zip(segments, linkSegments) {
            switch segment {
            case .literal(let literal): guard literal == text else { return nil }
            case .capture(let name): captures[name] = text
            }
        }
        for (parameter, name) in query {
            if let value = link.query[parameter] { captures[name] = value }
        }
        return captures
    }
}

// MARK: - Loading

extension Catalog {
    private static let routeMembers = ["name", "url", "navigate", "push", "present", "replacePath", "clear"]
    private static let routeActions = ["navigate", "push", "present", "replacePath"]

    /// Reads `routes`, refusing a route that names an unknown destination, a style its
    /// destination does not allow, a push of a destination that may not be pushed, or a capture
    /// its `url` does not declare.
    func loadRoutes(_ value: JSONValue) throws(CatalogError) -> [Route] {
        guard let elements = value.arrayValue else {
            throw CatalogError(path: "/routes", message: "expected an array of routes, got \(value.typeName)")
        }
        var routes: [Route] = []
        for (index, element) in elements.enumerated() {
            routes.append(try loadRoute(element, path: "/routes/\(index)"))
        }
        return routes
    }

    private func loadRoute(_ element: JSONValue, path: String) throws(CatalogError) -> Route {
        guard let object = element.objectValue else {
            throw CatalogError(path: path, message: "expected a route object, got \(element.typeName)")
        }
        for key in object.keys where !Self.routeMembers.contains(key) {
            throw CatalogError(
                path: path + "/" + JSONPointer.escape(key),
                message: "unknown member \(JSONValue.string(key).jsonText); known members: "
                    + Self.routeMembers.joined(separator: ", "))
        }
        let name = object["name"]
        if let name, !(name.stringValue.map { Identifiers.isValidText($0, maxLength: 64) } ?? false) {
            throw CatalogError(path: path + "/name", message: "must be a string of 1-64 characters")
        }
        guard let url = object["url"]?.stringValue else {
            throw CatalogError(path: path + "/url", message: "is required: a string such as \"/downloads/{itemId}\"")
        }
        let pattern: URLPattern
        do {
            pattern = try URLPattern(url)
        } catch {
            throw CatalogError(path: path + "/url", message: error.message)
        }
        let actions = Self.routeActions.filter { object[$0] != nil }
        guard actions.count == 1, let actionName = actions.first, let body = object[actionName] else {
            throw CatalogError(path: path, message: "give exactly one of " + Self.routeActions.joined(separator: ", "))
        }
        let clear = object["clear"]
        if let clear {
            guard clear.boolValue != nil else {
                throw CatalogError(path: path + "/clear", message: "expected a boolean, got \(clear.typeName)")
            }
            guard actionName == "push" || actionName == "present" else {
                throw CatalogError(path: path + "/clear", message: "applies only to push and present")
            }
        }
        let actionPath = path + "/" + actionName
        let template: Route.Template
        switch actionName {
        case "navigate":
            guard let members = body.objectValue, members.keys.allSatisfy({ $0 == "path" || $0 == "stack" }) else {
                throw CatalogError(path: actionPath, message: "expected {\"path\"?: [...], \"stack\"?: [...]}")
            }
            template = .navigate(.object(["path": members["path"] ?? [], "stack": members["stack"] ?? []]))
        case "push": template = .push(body, clear: clear?.boolValue ?? false)
        case "present": template = .present(body, clear: clear?.boolValue ?? false)
        default: template = .replacePath(.object(["path": body]))
        }
        let declared = Set(pattern.captureNames)
        try Self.checkPlaceholders(in: body, declared: declared, at: actionPath)
        try checkTemplate(template, at: actionPath)
        return Route(name: name?.stringValue, url: url, pattern: pattern, template: template, declared: element)
    }

    /// Every `{name}` in the template's strings must be a capture of the route's `url`.
    private static func checkPlaceholders(in value: JSONValue, declared: Set<String>, at path: String)
        throws(CatalogError)
    {
        switch value {
        case .string(let text):
            for name in RoutePlaceholders.names(in: text) where !declared.contains(name) {
                let known =
                    declared.isEmpty ? "it declares none" : "it declares " + declared.sorted().joined(separator: ", ")
                throw CatalogError(path: path, message: "{\(name)} is not a capture of the route's url; \(known)")
            }
        case .object(let object):
            for member in object.members {
                try checkPlaceholders(
                    in: member.value, declared: declared, at: path + "/" + JSONPointer.escape(member.key))
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                try checkPlaceholders(in: element, declared: declared, at: "\(path)/\(index)")
            }
        case .null, .bool, .number:
            break
        }
    }

    /// Reads the template as the request it becomes, every capture a sample text, and checks its
    /// destinations and styles against the catalog (payloads are checked when a link fills them).
    private func checkTemplate(_ template: Route.Template, at path: String) throws(CatalogError) {
        let body: JSONValue
        switch template {
        case .navigate(let value), .push(let value, _), .present(let value, _), .replacePath(let value):
            body = Self.sampleFill(value)
        }
        // replacePath's body is {"path": […]}, pointed at without its "/path".
        let prefix: (String) -> String = { pointer in
            if case .replacePath = template { return path + pointer.dropFirst("/path".count) }
            return path + pointer
        }
        let action: ResolvedLink.Action
        do {
            action = try Self.action(template, body: body)
        } catch {
            let first = error.fieldErrors.first
            throw CatalogError(path: prefix(first?.pointer ?? ""), message: first?.message ?? error.detail)
        }
        var errors: [ModalError.FieldError] = []
        func entries(_ entries: [PushRequest], at pointer: String) {
            for (index, entry) in entries.enumerated() {
                errors += check(destination: entry.destination, style: nil, payload: nil, at: "\(pointer)/\(index)")
            }
        }
        switch action {
        case .navigate(let request):
            entries(request.path ?? [], at: "/path")
            for (index, modal) in request.stack.enumerated() {
                errors += check(
                    destination: modal.present.destination, style: modal.present.style, payload: nil,
                    at: "/stack/\(index)")
                entries(modal.path ?? [], at: "/stack/\(index)/path")
            }
        case .push(let request, _): errors += check(destination: request.destination, style: nil, payload: nil, at: "")
        case .present(let request, _):
            errors += check(destination: request.destination, style: request.style, payload: nil, at: "")
        case .replacePath(let path): entries(path, at: "/path")
        }
        if let first = errors.first {
            throw CatalogError(path: prefix(first.pointer), message: first.message)
        }
    }

    /// The template with every capture a sample text.
    private static func sampleFill(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text): .string(RoutePlaceholders.replace(in: text) { _ in "x" })
        case .object(let object): .object(JSONObject(object.members.map { ($0.key, sampleFill($0.value)) }))
        case .array(let elements): .array(elements.map { sampleFill($0) })
        case .null, .bool, .number: value
        }
    }
}
