import ModalStackCore
import ModalStackHTTP

/// An RFC 9457 problem: every error the API gives is one of these, as `application/problem+json`.
/// Its slug, status and title come from its ``ProblemType``; the rest from where it is raised.
struct Problem: Error {
    var type: ProblemType
    var detail: String
    var fieldErrors: [ModalError.FieldError] = []
    /// Extra members (RFC 9457 extensions), e.g. the position of a conflicting presentation.
    var extensions: JSONObject = [:]
    var headers: HTTPHeaders = HTTPHeaders()

    init(
        _ type: ProblemType, detail: String, fieldErrors: [ModalError.FieldError] = [], extensions: JSONObject = [:],
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.type = type
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.extensions = extensions
        self.headers = headers
    }

    static let typePrefix = "/problems/"

    var response: HTTPResponse {
        var body: JSONObject = [
            "type": .string(Self.typePrefix + type.slug),
            "title": .string(type.title),
            "status": JSONValue(type.status),
            "detail": .string(detail),
        ]
        if !fieldErrors.isEmpty {
            body["errors"] = .array(
                fieldErrors.map { ["pointer": .string($0.pointer), "detail": .string($0.message)] })
        }
        for member in extensions.members where body[member.key] == nil {
            body[member.key] = member.value
        }
        var headers = headers
        headers.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: type.status, headers: headers, body: JSONValue.object(body).serialized())
    }
}

/// The problems raised from more than one place, with what they say.
extension Problem {
    static func malformedJSON(_ reason: String) -> Problem {
        Problem(.malformedJSON, detail: "the request body is not valid JSON: \(reason)")
    }

    static func invalidSessionID(_ id: String) -> Problem {
        Problem(
            .invalidSessionID,
            detail: Identifiers.isDotSegment(id)
                ? "a session id cannot be . or ..: clients remove those segments from a URL"
                : "a session id is 1-\(Identifiers.sessionIDMaxLength) characters of [A-Za-z0-9._~-]")
    }

    static func invalidParameter(_ name: String, _ problem: String) -> Problem {
        Problem(.invalidParameter, detail: "query parameter \(name) \(problem)")
    }

    static func invalidHeader(_ name: String, _ problem: String) -> Problem {
        Problem(.invalidHeader, detail: "\(name) \(problem)")
    }

    /// A stale `If-Match`: the session is not at the version the client based its change on.
    static func preconditionFailed(currentVersion: Int64?) -> Problem {
        var problem = Problem(
            .preconditionFailed,
            detail: currentVersion.map { "the session is at version \($0); nothing was changed" }
                ?? "the session does not exist; nothing was changed",
            extensions: ["currentVersion": currentVersion.map { JSONValue($0) } ?? .null])
        if let currentVersion { problem.headers.set("ETag", EntityTag.of(version: currentVersion)) }
        return problem
    }

    static func versionGone(_ version: Int64) -> Problem {
        Problem(
            .versionGone,
            detail: "version \(version) is older than the session's event log; read the session instead")
    }

    /// A version the session has not reached: it may exist later, so a 404 rather than a 400.
    static func versionNotFound(_ version: Int64, currentVersion: Int64) -> Problem {
        Problem(
            .versionNotFound, detail: "the session is at version \(currentVersion), not yet at version \(version)",
            extensions: ["currentVersion": JSONValue(currentVersion)])
    }

    static func preconditionRequired() -> Problem {
        Problem(
            .preconditionRequired,
            detail: "this server requires If-Match with the session's current ETag (not *) on every change")
    }

    static func idempotencyKeyInUse() -> Problem {
        Problem(
            .idempotencyKeyInUse,
            detail: "a request with this Idempotency-Key is still being processed; retry shortly",
            headers: ["Retry-After": "1"])
    }

    static func idempotencyKeyReused() -> Problem {
        Problem(
            .idempotencyKeyReused,
            detail: "this Idempotency-Key was used for a different request (method, path or body)")
    }

    static func unsupportedMediaType(_ contentType: String?) -> Problem {
        Problem(
            .unsupportedMediaType,
            detail: "send the body as application/json" + (contentType.map { ", not \($0)" } ?? ""))
    }

    static func bodyTooLarge(limit: Int) -> Problem {
        Problem(.bodyTooLarge, detail: "the request body is larger than \(limit) bytes")
    }

    static func routeNotFound(_ path: String) -> Problem {
        Problem(.notFound, detail: "no resource at \(path)")
    }

    /// A method the path does not have. A method that is not a standard one (RFC 9110 §9, RFC 5789)
    /// may be anything, of any length: it is not repeated back.
    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        let named = standardMethods.contains(method) ? method : "this method"
        return Problem(
            .methodNotAllowed,
            detail: "\(named) is not allowed here; allowed: \(allowed.joined(separator: ", "))",
            headers: ["Allow": allowed.joined(separator: ", ")])
    }

    private static let standardMethods: Set = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]

    static func unauthorized(keyGiven: Bool, tokensAccepted: Bool) -> Problem {
        let detail =
            keyGiven
            ? "the API key is not valid"
            : tokensAccepted
                ? "send an API key or a client token as Authorization: Bearer <credential>"
                : "send an API key as Authorization: Bearer <key>"
        return Problem(
            .unauthorized, detail: detail,
            headers: [
                "WWW-Authenticate": keyGiven
                    ? #"Bearer realm="modalstack", error="invalid_token""# : #"Bearer realm="modalstack""#
            ])
    }

    /// A credential that is not a valid token (RFC 6750 `invalid_token`).
    static func invalidToken(_ detail: String) -> Problem {
        Problem(
            .unauthorized, detail: detail,
            headers: ["WWW-Authenticate": #"Bearer realm="modalstack", error="invalid_token""#])
    }

    /// A valid token used beyond what it grants (RFC 6750 `insufficient_scope`).
    static func insufficientScope(_ detail: String) -> Problem {
        Problem(
            .forbidden, detail: detail,
            headers: ["WWW-Authenticate": #"Bearer realm="modalstack", error="insufficient_scope""#])
    }

    /// A credential sent in a way RFC 6750 does not allow (`invalid_request`).
    static func invalidAuthorizationRequest(_ detail: String) -> Problem {
        Problem(
            .invalidCredentialRequest, detail: detail,
            headers: ["WWW-Authenticate": #"Bearer realm="modalstack", error="invalid_request""#])
    }

    static func tokensNotConfigured() -> Problem {
        Problem(.tokensNotConfigured, detail: "the server mints tokens only when started with --token-secret")
    }

    static func sessionNotFound(_ id: String) -> Problem {
        Problem(.sessionNotFound, detail: "session \(id) does not exist")
    }

    static func serverStopping() -> Problem {
        Problem(.serverStopping, detail: "the server is shutting down; retry", headers: ["Retry-After": "1"])
    }

    /// What a failure nobody foresaw becomes: nothing of it is repeated to the client.
    static func internalError() -> Problem {
        Problem(.internalError, detail: "the server failed; nothing was changed")
    }
}
