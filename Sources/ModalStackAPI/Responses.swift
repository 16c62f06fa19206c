import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// Helpers shared by every endpoint: JSON in, JSON out, and errors as problems.
enum Responses {
    static func json(_ status: Int, _ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        return HTTPResponse(status: status, headers: headers, body: value.serialized())
    }

    /// A response that carries a session's state or a view of it: tagged with the session's version.
    static func session(_ status: Int, _ value: JSONValue, _ session: Session, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("ETag", EntityTag.of(version: session.version))
        return json(status, value, headers: headers)
    }

    /// A session's state already rendered (from the working set), tagged with its version.
    static func sessionBody(_ status: Int, _ body: [UInt8], _ session: Session) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json", "ETag": EntityTag.of(version: session.version)],
            body: body)
    }

    /// The answer to a change: what the endpoint says, then what was promoted from the queue, the
    /// transition plan from the stack before to the stack after, and the session.
    static func change(_ status: Int, _ body: JSONObject, _ outcome: CommandOutcome, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var body = body
        body["promoted"] = .array(outcome.promoted.map(\.json))
        body["transition"] = outcome.transition.json
        body["session"] = outcome.session.json
        return session(status, .object(body), outcome.session, headers: headers)
    }

    static func noContent() -> HTTPResponse {
        HTTPResponse(status: 204, headers: HTTPHeaders(), body: [])
    }

    /// Runs an endpoint, turning whatever it throws into a problem response.
    static func guarded(_ endpoint: (HTTPRequest) throws -> HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        do {
            return try endpoint(request)
        } catch {
            return problem(for: error)
        }
    }

    static func problem(for error: any Error) -> HTTPResponse {
        switch error {
        case let problem as Problem: problem.response
        case let error as ModalError: Problem(error).response
        case let error as StoreError: Problem(error).response
        default:
            Problem(slug: "internal", status: 500, title: "Internal error", detail: "the server failed; nothing was changed").response
        }
    }
}

/// Reading a request: path parameters and JSON bodies.
extension HTTPRequest {
    /// The `{sessionId}` path parameter, validated.
    func sessionID() throws -> String {
        let id = pathParameters["sessionId"] ?? ""
        guard Identifiers.isValidSessionID(id) else { throw Problem.invalidSessionID() }
        return id
    }

    /// A whole-number query parameter within `range`; nil when absent.
    func integerQuery(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = queryValue(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw Problem.invalidParameter(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A `true`/`false` query parameter; absent is false.
    func booleanQuery(_ name: String) throws -> Bool {
        switch queryValue(name) {
        case nil, "false": return false
        case "true": return true
        case let other?:
            throw Problem.invalidParameter(name, "must be true or false, not \"\(other)\"")
        }
    }

    /// The body as JSON. An empty body is `emptyBody` when the endpoint allows one, else malformed.
    /// A non-empty body must be declared `application/json` (or a `+json` type).
    func jsonBody(emptyBody: JSONValue? = nil) throws -> JSONValue {
        if body.isEmpty {
            guard let emptyBody else { throw Problem.malformedJSON("the body is empty") }
            return emptyBody
        }
        let contentType = headers["Content-Type"]
        guard let contentType, Self.isJSONMediaType(contentType) else {
            throw Problem.unsupportedMediaType(contentType)
        }
        do {
            return try JSONParser.parse(body)
        } catch {
            throw Problem.malformedJSON("\(error)")
        }
    }

    private static func isJSONMediaType(_ contentType: String) -> Bool {
        if contentType == "application/json" { return true }
        let beforeParameters = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let mediaType = String(beforeParameters).trimmingSpaces.lowercased()
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }
}
