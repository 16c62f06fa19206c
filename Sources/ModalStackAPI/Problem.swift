import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// An RFC 9457 problem: every error the API gives is one of these, as `application/problem+json`.
struct Problem: Error {
    /// The stable slug; the problem `type` is `/problems/<slug>`.
    var slug: String
    var status: Int
    var title: String
    var detail: String
    var fieldErrors: [ModalError.FieldError] = []
    /// Extra members (RFC 9457 extensions), e.g. the position of a conflicting presentation.
    var extensions: JSONObject = [:]
    var headers: HTTPHeaders = HTTPHeaders()

    static let typePrefix = "/problems/"

    var response: HTTPResponse {
        var body: JSONObject = [
            "type": .string(Self.typePrefix + slug),
            "title": .string(title),
            "status": JSONValue(status),
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
        return HTTPResponse(status: status, headers: headers, body: JSONValue.object(body).serialized())
    }
}

extension Problem {
    static func malformedJSON(_ reason: String) -> Problem {
        Problem(
            slug: "malformed-json", status: 400, title: "Malformed JSON",
            detail: "the request body is not valid JSON: \(reason)")
    }

    static func invalidSessionID(_ id: String) -> Problem {
        Problem(
            slug: "invalid-session-id", status: 400, title: "Invalid session id",
            detail: Identifiers.isDotSegment(id)
                ? "a session id cannot be . or ..: clients remove those segments from a URL"
                : "a session id is 1-\(Identifiers.sessionIDMaxLength) characters of [A-Za-z0-9._~-]")
    }

    static func invalidParameter(_ name: String, _ problem: String) -> Problem {
        Problem(
            slug: "invalid-parameter", status: 400, title: "Invalid query parameter",
            detail: "query parameter \(name) \(problem)")
    }

    static func invalidHeader(_ name: String, _ problem: String) -> Problem {
        Problem(slug: "invalid-header", status: 400, title: "Invalid header", detail: "\(name) \(problem)")
    }

    /// A stale `If-Match`: the session is not at the version the client based its change on.
    static func preconditionFailed(currentVersion: Int64?) -> Problem {
        var problem = Problem(
            slug: "precondition-failed", status: 412, title: "Precondition failed",
            detail: currentVersion.map { "the session is at version \($0); nothing was changed" }
                ?? "the session does not exist; nothing was changed")
        problem.extensions["currentVersion"] = currentVersion.map { JSONValue($0) } ?? .null
        if let currentVersion { problem.headers.set("ETag", EntityTag.of(version: currentVersion)) }
        return problem
    }

    static func versionGone(_ version: Int64) -> Problem {
        Problem(
            slug: "version-gone", status: 410, title: "Version no longer in the log",
            detail: "version \(version) is older than the session's event log; read the session instead")
    }

    static func preconditionRequired() -> Problem {
        Problem(
            slug: "precondition-required", status: 428, title: "Precondition required",
            detail: "this server requires If-Match with the session's current ETag (not *) on every change")
    }

    static func idempotencyKeyInUse() -> Problem {
        var problem = Problem(
            slug: "idempotency-key-in-use", status: 409, title: "Idempotency key in use",
            detail: "a request with this Idempotency-Key is still being processed; retry shortly")
        problem.headers.set("Retry-After", "1")
        return problem
    }

    static func idempotencyKeyReused() -> Problem {
        Problem(
            slug: "idempotency-key-reused", status: 422, title: "Idempotency key reused",
            detail: "this Idempotency-Key was used for a different request (method, path or body)")
    }

    static func unsupportedMediaType(_ contentType: String?) -> Problem {
        Problem(
            slug: "unsupported-media-type", status: 415, title: "Unsupported media type",
            detail: "send the body as application/json" + (contentType.map { ", not \($0)" } ?? ""))
    }

    static func bodyTooLarge(limit: Int) -> Problem {
        Problem(
            slug: "body-too-large", status: 413, title: "Request body too large",
            detail: "the request body is larger than \(limit) bytes")
    }

    static func routeNotFound(_ path: String) -> Problem {
        Problem(slug: "not-found", status: 404, title: "Not found", detail: "no resource at \(path)")
    }

    /// A method the path does not have. A method that is not a standard one (RFC 9110 §9, RFC 5789)
    /// may be anything, of any length: it is not repeated back.
    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        let named = standardMethods.contains(method) ? method : "this method"
        var problem = Problem(
            slug: "method-not-allowed", status: 405, title: "Method not allowed",
            detail: "\(named) is not allowed here; allowed: \(allowed.joined(separator: ", "))")
        problem.headers.set("Allow", allowed.joined(separator: ", "))
        return problem
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
        var problem = Problem(slug: "unauthorized", status: 401, title: "Unauthorized", detail: detail)
        problem.headers.set(
            "WWW-Authenticate",
            keyGiven ? #"Bearer realm="modalstack", error="invalid_token""# : #"Bearer realm="modalstack""#)
        return problem
    }

    /// A credential that is not a valid token (RFC 6750 `invalid_token`).
    static func invalidToken(_ detail: String) -> Problem {
        var problem = Problem(slug: "unauthorized", status: 401, title: "Unauthorized", detail: detail)
        problem.headers.set("WWW-Authenticate", #"Bearer realm="modalstack", error="invalid_token""#)
        return problem
    }

    /// A valid token used beyond what it grants (RFC 6750 `insufficient_scope`).
    static func insufficientScope(_ detail: String) -> Problem {
        var problem = Problem(slug: "forbidden", status: 403, title: "Forbidden", detail: detail)
        problem.headers.set("WWW-Authenticate", #"Bearer realm="modalstack", error="insufficient_scope""#)
        return problem
    }

    /// A credential sent in a way RFC 6750 does not allow (`invalid_request`).
    static func invalidAuthorizationRequest(_ detail: String) -> Problem {
        var problem = Problem(
            slug: "invalid-credential-request", status: 400, title: "Invalid credential", detail: detail)
        problem.headers.set("WWW-Authenticate", #"Bearer realm="modalstack", error="invalid_request""#)
        return problem
    }

    static func tokensNotConfigured() -> Problem {
        Problem(
            slug: "tokens-not-configured", status: 409, title: "Tokens not configured",
            detail: "the server mints tokens only when started with --token-secret")
    }

    static func sessionNotFound(_ id: String) -> Problem {
        Problem(
            slug: ModalError.Kind.sessionNotFound.slug, status: 404, title: "Session not found",
            detail: "session \(id) does not exist")
    }

    static func serverStopping() -> Problem {
        var problem = Problem(
            slug: "server-stopping", status: 503, title: "Server stopping", detail: "the server is shutting down; retry"
        )
        problem.headers.set("Retry-After", "1")
        return problem
    }

    /// The problem for a command the rules refused.
    init(_ error: ModalError) {
        let (status, title): (Int, String) =
            switch error.kind {
            case .validationFailed: (422, "Invalid request")
            case .stackFull: (409, "Stack full")
            case .alertOnTop: (409, "Alert on top")
            case .queueNotEmpty: (409, "Presentations are waiting")
            case .queueFull: (409, "Queue full")
            case .locked: (409, "Presentation locked")
            case .alreadyPresented: (409, "Already presented")
            case .nothingToDismiss: (409, "Nothing to dismiss")
            case .presentationNotFound: (404, "Presentation not found")
            case .presentationDismissed: (409, "Presentation dismissed")
            case .presentationQueued: (409, "Presentation queued")
            case .sessionNotFound: (404, "Session not found")
            case .sessionExists: (409, "Session exists")
            case .alreadyPushed: (409, "Already pushed")
            case .pathFull: (409, "Path full")
            case .nothingToPop: (409, "Nothing to pop")
            case .levelNotFound: (404, "Level not found")
            case .entryNotFound: (404, "Path entry not found")
            case .noRoute: (404, "No route")
            default: (409, "Conflict")
            }
        self.init(
            slug: error.kind.slug, status: status, title: title, detail: error.detail,
            fieldErrors: error.fieldErrors, extensions: error.context)
    }

    /// The problem for a storage failure; nothing was changed.
    init(_ error: StoreError) {
        switch error.kind {
        case .full:
            self.init(
                slug: "storage-full", status: 507, title: "Storage full",
                detail: "no space left to store the change; nothing was changed")
            headers.set("Retry-After", "30")
        case .unavailable:
            self.init(
                slug: "storage-unavailable", status: 503, title: "Storage unavailable",
                detail: "the database cannot be used right now; nothing was changed")
            headers.set("Retry-After", "5")
        case .corrupt, .failed:
            self.init(
                slug: "storage-failed", status: 500, title: "Storage failed",
                detail: "the database failed; nothing was changed")
        }
    }
}
