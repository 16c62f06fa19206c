import Foundation

/// One bad field of a request body.
public struct FieldError: Codable, Sendable, Hashable {
    /// An RFC 6901 JSON pointer into the request body; `""` is the whole body.
    public var pointer: String
    /// What is wrong with that field, for people.
    public var detail: String

    /// The error of the field at `pointer`.
    public init(pointer: String, detail: String) {
        self.pointer = pointer
        self.detail = detail
    }
}

extension ModalStackError {
    /// An RFC 9457 problem (`application/problem+json`) as the server wrote it.
    public struct Problem: Sendable, Hashable {
        /// `/problems/<slug>`.
        public var type: String
        /// A short summary of the problem's type, for people.
        public var title: String
        /// The HTTP status of the answer, 400–599.
        public var status: Int
        /// What went wrong with this request, for people.
        public var detail: String
        /// Only with `validation-failed`.
        public var errors: [FieldError]?
        /// The other members (`currentVersion`, `presentationId`, `maxDepth`, …).
        public var extensions: JSONObject

        /// A problem with these members; `extensions` holds its slug's own ones.
        public init(
            type: String, title: String, status: Int, detail: String, errors: [FieldError]? = nil,
            extensions: JSONObject = [:]
        ) {
            self.type = type
            self.title = title
            self.status = status
            self.detail = detail
            self.errors = errors
            self.extensions = extensions
        }

        /// The stable part of `type`: what follows `/problems/`, else the whole `type`.
        public var slug: String {
            type.hasPrefix("/problems/") ? String(type.dropFirst("/problems/".count)) : type
        }

        fileprivate func integer(_ name: String) -> Int? {
            extensions[name]?.intValue
        }

        fileprivate func string(_ name: String) -> String? {
            extensions[name]?.stringValue
        }
    }
}

extension ModalStackError.Problem: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let members: Set<String> = ["type", "title", "status", "detail", "errors"]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        type = try container.decode(String.self, forKey: Key("type"))
        title = try container.decode(String.self, forKey: Key("title"))
        status = try container.decode(Int.self, forKey: Key("status"))
        detail = try container.decode(String.self, forKey: Key("detail"))
        errors = try container.decodeIfPresent([FieldError].self, forKey: Key("errors"))
        var extensions: JSONObject = [:]
        for key in container.allKeys where !Self.members.contains(key.stringValue) {
            extensions[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
        self.extensions = extensions
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(type, forKey: Key("type"))
        try container.encode(title, forKey: Key("title"))
        try container.encode(status, forKey: Key("status"))
        try container.encode(detail, forKey: Key("detail"))
        try container.encodeIfPresent(errors, forKey: Key("errors"))
        for (name, value) in extensions where !Self.members.contains(name) {
            try container.encode(value, forKey: Key(name))
        }
    }
}

/// A refusal from the server: a case per problem slug of the API, each carrying the ``Problem``
/// (its `status`, `detail`, `title`) and the slug's own members; ``other(slug:status:detail:problem:)``
/// for a slug this library does not know.
public enum ModalStackError: Error, Sendable, Hashable {
    case malformedJSON(Problem)
    case invalidSessionID(Problem)
    case invalidParameter(Problem)
    case invalidHeader(Problem)
    case notFound(Problem)
    case sessionNotFound(Problem)
    /// `presentationId`: the id asked for.
    case presentationNotFound(presentationId: String?, Problem)
    /// `presentationId`: the presentation asked for, which was dismissed (read it for its result).
    case presentationDismissed(presentationId: String?, Problem)
    /// `presentationId`: the presentation asked for, waiting in the queue at `position`.
    case presentationQueued(presentationId: String?, position: Int?, Problem)
    /// `ttl`: the ttl the existing session has, which a create asked to change.
    case sessionExists(ttl: Int?, Problem)
    case methodNotAllowed(Problem)
    /// A request line the server cannot read whole (a NUL byte in it).
    case invalidRequestLine(Problem)
    /// The key is held by `presentationId`, on the stack or in the queue (`state`), at `position`.
    case alreadyPresented(presentationId: String?, state: PresentationState?, position: Int?, Problem)
    /// `maxDepth`: the server's max depth.
    case stackFull(maxDepth: Int?, Problem)
    /// `presentationId`: the alert-like presentation on top.
    case alertOnTop(presentationId: String?, Problem)
    /// `queued`: how many presentations are waiting.
    case queueNotEmpty(queued: Int?, Problem)
    /// `queueSize`: the server's queue size.
    case queueFull(queueSize: Int?, Problem)
    /// `presentationId`: the locked presentation the request would remove.
    case locked(presentationId: String?, Problem)
    /// `depth`: how many presentations the stack holds (for `count` only).
    case nothingToDismiss(depth: Int?, Problem)
    case bodyTooLarge(Problem)
    case unsupportedMediaType(Problem)
    /// Every bad field of the request body.
    case validationFailed([FieldError], Problem)
    case internalError(Problem)
    case storageFailed(Problem)
    case storageUnavailable(Problem)
    case serverStopping(Problem)
    case storageFull(Problem)
    /// `currentVersion`: the session's version now, `nil` when it does not exist.
    case preconditionFailed(currentVersion: Int64?, Problem)
    case preconditionRequired(Problem)
    case idempotencyKeyInUse(Problem)
    case idempotencyKeyReused(Problem)
    case versionGone(Problem)
    /// `currentVersion`: the session's version now, which has not reached the version asked for.
    case versionNotFound(currentVersion: Int64?, Problem)
    case unauthorized(Problem)
    case uriTooLong(Problem)
    case headersTooLarge(Problem)
    case ambiguousBodyLength(Problem)
    case forbidden(Problem)
    case invalidCredentialRequest(Problem)
    case tokensNotConfigured(Problem)
    /// The key is taken in the level's path by `entryId`, at `position` (0 is the first pushed).
    case alreadyPushed(entryId: String?, level: NavigationLevel?, position: Int?, Problem)
    /// `maxPathDepth`: the server's most entries per path.
    case pathFull(maxPathDepth: Int?, Problem)
    /// `level`: the level whose path holds fewer entries than the pop asked for, or whose last
    /// entry is already its `to`.
    case nothingToPop(level: NavigationLevel?, Problem)
    /// `level`: the level asked for, which is no container on the stack (the detail says why).
    case levelNotFound(level: NavigationLevel?, Problem)
    /// `entryId`: the entry asked for, which is not in the level's path (or in no path).
    case entryNotFound(entryId: String?, Problem)
    /// `url`: the link no route of the catalog matches.
    case noRoute(url: String?, Problem)
    /// A slug this library does not know.
    case other(slug: String, status: Int, detail: String, problem: Problem)

    /// The typed error for `problem`.
    public init(_ problem: Problem) {
        let p = problem
        switch p.slug {
        case "malformed-json": self = .malformedJSON(p)
        case "invalid-session-id": self = .invalidSessionID(p)
        case "invalid-parameter": self = .invalidParameter(p)
        case "invalid-header": self = .invalidHeader(p)
        case "not-found": self = .notFound(p)
        case "session-not-found": self = .sessionNotFound(p)
        case "presentation-not-found": self = .presentationNotFound(presentationId: p.string("presentationId"), p)
        case "presentation-dismissed": self = .presentationDismissed(presentationId: p.string("presentationId"), p)
        case "presentation-queued":
            self = .presentationQueued(presentationId: p.string("presentationId"), position: p.integer("position"), p)
        case "session-exists": self = .sessionExists(ttl: p.integer("ttl"), p)
        case "method-not-allowed": self = .methodNotAllowed(p)
        case "invalid-request-line": self = .invalidRequestLine(p)
        case "already-presented":
            self = .alreadyPresented(
                presentationId: p.string("presentationId"), state: p.string("state").flatMap(PresentationState.init),
                position: p.integer("position"), p)
        case "stack-full": self = .stackFull(maxDepth: p.integer("maxDepth"), p)
        case "alert-on-top": self = .alertOnTop(presentationId: p.string("presentationId"), p)
        case "queue-not-empty": self = .queueNotEmpty(queued: p.integer("queued"), p)
        case "queue-full": self = .queueFull(queueSize: p.integer("queueSize"), p)
        case "locked": self = .locked(presentationId: p.string("presentationId"), p)
        case "nothing-to-dismiss": self = .nothingToDismiss(depth: p.integer("depth"), p)
        case "body-too-large": self = .bodyTooLarge(p)
        case "unsupported-media-type": self = .unsupportedMediaType(p)
        case "validation-failed": self = .validationFailed(p.errors ?? [], p)
        case "internal": self = .internalError(p)
        case "storage-failed": self = .storageFailed(p)
        case "storage-unavailable": self = .storageUnavailable(p)
        case "server-stopping": self = .serverStopping(p)
        case "storage-full": self = .storageFull(p)
        case "precondition-failed":
            self = .preconditionFailed(currentVersion: p.integer("currentVersion").map(Int64.init), p)
        case "precondition-required": self = .preconditionRequired(p)
        case "idempotency-key-in-use": self = .idempotencyKeyInUse(p)
        case "idempotency-key-reused": self = .idempotencyKeyReused(p)
        case "version-gone": self = .versionGone(p)
        case "version-not-found":
            self = .versionNotFound(currentVersion: p.integer("currentVersion").map(Int64.init), p)
        case "unauthorized": self = .unauthorized(p)
        case "uri-too-long": self = .uriTooLong(p)
        case "headers-too-large": self = .headersTooLarge(p)
        case "ambiguous-body-length": self = .ambiguousBodyLength(p)
        case "forbidden": self = .forbidden(p)
        case "invalid-credential-request": self = .invalidCredentialRequest(p)
        case "tokens-not-configured": self = .tokensNotConfigured(p)
        case "already-pushed":
            self = .alreadyPushed(
                entryId: p.string("entryId"), level: p.string("level").map(NavigationLevel.init),
                position: p.integer("position"), p)
        case "path-full": self = .pathFull(maxPathDepth: p.integer("maxPathDepth"), p)
        case "nothing-to-pop": self = .nothingToPop(level: p.string("level").map(NavigationLevel.init), p)
        case "level-not-found": self = .levelNotFound(level: p.string("level").map(NavigationLevel.init), p)
        case "entry-not-found": self = .entryNotFound(entryId: p.string("entryId"), p)
        case "no-route": self = .noRoute(url: p.string("url"), p)
        default: self = .other(slug: p.slug, status: p.status, detail: p.detail, problem: p)
        }
    }

    /// The problem as the server wrote it.
    public var problem: Problem {
        switch self {
        case .malformedJSON(let p), .invalidSessionID(let p), .invalidParameter(let p), .invalidHeader(let p),
            .notFound(let p), .sessionNotFound(let p), .presentationNotFound(_, let p), .sessionExists(_, let p),
            .presentationDismissed(_, let p), .presentationQueued(_, _, let p), .methodNotAllowed(let p),
            .invalidRequestLine(let p),
            .alreadyPresented(_, _, _, let p), .stackFull(_, let p), .alertOnTop(_, let p), .queueNotEmpty(_, let p),
            .queueFull(_, let p), .locked(_, let p), .nothingToDismiss(_, let p), .bodyTooLarge(let p),
            .unsupportedMediaType(let p), .validationFailed(_, let p), .internalError(let p), .storageFailed(let p),
            .storageUnavailable(let p), .serverStopping(let p), .storageFull(let p), .preconditionFailed(_, let p),
            .preconditionRequired(let p), .idempotencyKeyInUse(let p), .idempotencyKeyReused(let p),
            .versionGone(let p), .versionNotFound(_, let p), .unauthorized(let p), .uriTooLong(let p),
            .headersTooLarge(let p),
            .ambiguousBodyLength(let p), .forbidden(let p), .invalidCredentialRequest(let p),
            .tokensNotConfigured(let p), .alreadyPushed(_, _, _, let p), .pathFull(_, let p), .nothingToPop(_, let p),
            .levelNotFound(_, let p), .entryNotFound(_, let p), .noRoute(_, let p), .other(_, _, _, let p):
            p
        }
    }

    /// The problem's slug, e.g. `stack-full`.
    public var slug: String { problem.slug }
    /// The HTTP status.
    public var status: Int { problem.status }
    /// The problem's explanation, for people.
    public var detail: String { problem.detail }
}

extension ModalStackError: Decodable {
    /// Decodes a problem+json body.
    public init(from decoder: any Decoder) throws {
        self.init(try Problem(from: decoder))
    }
}

extension ModalStackError: LocalizedError {
    /// The problem's title, status and detail, for people.
    public var errorDescription: String? { "\(problem.title) (\(status)): \(detail)" }
}
