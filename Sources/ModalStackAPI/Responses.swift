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

    static func noContent() -> HTTPResponse {
        HTTPResponse(status: 204, headers: HTTPHeaders(), body: [])
    }

    /// Runs an endpoint, turning whatever it throws into a problem response.
    static func guarded(_ endpoint: (HTTPRequest) throws -> HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        do {
            return try endpoint(request)
        } catch let problem as Problem {
            return problem.response
        } catch let error as ModalError {
            return Problem(error).response
        } catch let error as StoreError {
            return Problem(error).response
        } catch {
            return Problem(slug: "internal", status: 500, title: "Internal error", detail: "the server failed; nothing was changed").response
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
        let beforeParameters = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let mediaType = String(beforeParameters.filter { $0 != " " && $0 != "\t" }).lowercased()
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }
}
