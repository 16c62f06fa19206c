import ModalStackCore

/// Every kind of problem the API answers with, each defined once: its slug (the problem `type` is
/// `/problems/<slug>`), its status and its title. What differs from one answer to the next, the
/// detail, the extension members and the headers, comes from where the problem is raised (see
/// ``Problem``). openapi.yaml's `Problem` schema lists the same slugs; a test holds the two together.
enum ProblemType: CaseIterable, Sendable {
    // MARK: The request
    case malformedJSON
    case invalidSessionID
    case invalidParameter
    case invalidHeader
    case unsupportedMediaType
    case bodyTooLarge
    case uriTooLong
    case headersTooLarge
    case ambiguousBodyLength
    case invalidRequestLine
    case notFound
    case methodNotAllowed

    // MARK: Credentials
    case unauthorized
    case forbidden
    case invalidCredentialRequest
    case tokensNotConfigured

    // MARK: Conditions and retries
    case preconditionFailed
    case preconditionRequired
    case idempotencyKeyInUse
    case idempotencyKeyReused
    case versionGone
    case versionNotFound

    // MARK: The rules: one per ModalError.Kind
    case validationFailed
    case stackFull
    case alertOnTop
    case queueNotEmpty
    case queueFull
    case locked
    case alreadyPresented
    case nothingToDismiss
    case presentationNotFound
    case presentationDismissed
    case presentationQueued
    case sessionNotFound
    case sessionExists
    case alreadyPushed
    case pathFull
    case nothingToPop
    case levelNotFound
    case entryNotFound
    case noRoute

    // MARK: The server and its storage
    case internalError
    case serverStopping
    case storageFull
    case storageUnavailable
    case storageFailed

    /// The stable part of the problem `type`, e.g. `stack-full`.
    var slug: String { definition.slug }
    var status: Int { definition.status }
    /// The same for every problem of the type; the detail says what happened this time.
    var title: String { definition.title }

    /// Slug, status and title side by side, so that a type cannot have one without the others.
    private var definition: (slug: String, status: Int, title: String) {
        switch self {
        case .malformedJSON: ("malformed-json", 400, "Malformed JSON")
        case .invalidSessionID: ("invalid-session-id", 400, "Invalid session id")
        case .invalidParameter: ("invalid-parameter", 400, "Invalid query parameter")
        case .invalidHeader: ("invalid-header", 400, "Invalid header")
        case .unsupportedMediaType: ("unsupported-media-type", 415, "Unsupported media type")
        case .bodyTooLarge: ("body-too-large", 413, "Request body too large")
        case .uriTooLong: ("uri-too-long", 414, "URI too long")
        case .headersTooLarge: ("headers-too-large", 431, "Request header fields too large")
        case .ambiguousBodyLength: ("ambiguous-body-length", 400, "Ambiguous body length")
        case .invalidRequestLine: ("invalid-request-line", 400, "Invalid request line")
        case .notFound: ("not-found", 404, "Not found")
        case .methodNotAllowed: ("method-not-allowed", 405, "Method not allowed")

        case .unauthorized: ("unauthorized", 401, "Unauthorized")
        case .forbidden: ("forbidden", 403, "Forbidden")
        case .invalidCredentialRequest: ("invalid-credential-request", 400, "Invalid credential")
        case .tokensNotConfigured: ("tokens-not-configured", 409, "Tokens not configured")

        case .preconditionFailed: ("precondition-failed", 412, "Precondition failed")
        case .preconditionRequired: ("precondition-required", 428, "Precondition required")
        case .idempotencyKeyInUse: ("idempotency-key-in-use", 409, "Idempotency key in use")
        case .idempotencyKeyReused: ("idempotency-key-reused", 422, "Idempotency key reused")
        case .versionGone: ("version-gone", 410, "Version no longer in the log")
        case .versionNotFound: ("version-not-found", 404, "Version not found")

        case .validationFailed: ("validation-failed", 422, "Invalid request")
        case .stackFull: ("stack-full", 409, "Stack full")
        case .alertOnTop: ("alert-on-top", 409, "Alert on top")
        case .queueNotEmpty: ("queue-not-empty", 409, "Presentations are waiting")
        case .queueFull: ("queue-full", 409, "Queue full")
        case .locked: ("locked", 409, "Presentation locked")
        case .alreadyPresented: ("already-presented", 409, "Already presented")
        case .nothingToDismiss: ("nothing-to-dismiss", 409, "Nothing to dismiss")
        case .presentationNotFound: ("presentation-not-found", 404, "Presentation not found")
        case .presentationDismissed: ("presentation-dismissed", 409, "Presentation dismissed")
        case .presentationQueued: ("presentation-queued", 409, "Presentation queued")
        case .sessionNotFound: ("session-not-found", 404, "Session not found")
        case .sessionExists: ("session-exists", 409, "Session exists")
        case .alreadyPushed: ("already-pushed", 409, "Already pushed")
        case .pathFull: ("path-full", 409, "Path full")
        case .nothingToPop: ("nothing-to-pop", 409, "Nothing to pop")
        case .levelNotFound: ("level-not-found", 404, "Level not found")
        case .entryNotFound: ("entry-not-found", 404, "Path entry not found")
        case .noRoute: ("no-route", 404, "No route")

        case .internalError: ("internal", 500, "Internal error")
        case .serverStopping: ("server-stopping", 503, "Server stopping")
        case .storageFull: ("storage-full", 507, "Storage full")
        case .storageUnavailable: ("storage-unavailable", 503, "Storage unavailable")
        case .storageFailed: ("storage-failed", 500, "Storage failed")
        }
    }

    /// The type for a command the rules refused. No `default`: a new kind does not compile until
    /// it has its type here.
    init(_ kind: ModalError.Kind) {
        self =
            switch kind {
            case .validationFailed: .validationFailed
            case .stackFull: .stackFull
            case .alertOnTop: .alertOnTop
            case .queueNotEmpty: .queueNotEmpty
            case .queueFull: .queueFull
            case .locked: .locked
            case .alreadyPresented: .alreadyPresented
            case .nothingToDismiss: .nothingToDismiss
            case .presentationNotFound: .presentationNotFound
            case .presentationDismissed: .presentationDismissed
            case .presentationQueued: .presentationQueued
            case .sessionNotFound: .sessionNotFound
            case .sessionExists: .sessionExists
            case .alreadyPushed: .alreadyPushed
            case .pathFull: .pathFull
            case .nothingToPop: .nothingToPop
            case .levelNotFound: .levelNotFound
            case .entryNotFound: .entryNotFound
            case .noRoute: .noRoute
            }
    }
}
