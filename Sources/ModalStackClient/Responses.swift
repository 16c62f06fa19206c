import Foundation

/// One step of a transition plan, to be played in order: modals that leave are dismissed top-down
/// (their paths go with them), then entries that leave the levels that stay are popped, then new
/// entries of those levels are pushed, then new modals are presented bottom-up, each followed by the
/// pushes of its path.
public enum TransitionStep: Sendable, Hashable {
    /// Animate this presentation (the top at that point) away.
    case dismiss(String)
    /// Animate this presentation in, on top.
    case present(String)
    /// Animate this entry (the last of `level`'s path at that point) away.
    case pop(String, level: NavigationLevel)
    /// Animate this entry in, on top of `level`'s path.
    case push(String, level: NavigationLevel)
}

extension TransitionStep: Codable {
    private enum CodingKeys: String, CodingKey { case dismiss, present, pop, push, level }

    /// `{"dismiss": id}`, `{"present": id}`, `{"pop": id, "level": L}` or `{"push": id, "level": L}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let steps: [CodingKeys] = [.dismiss, .present, .pop, .push].filter(container.contains)
        guard steps.count == 1, let step = steps.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a step has one of dismiss, present, pop, push")
            )
        }
        let id = try container.decode(String.self, forKey: step)
        switch step {
        case .dismiss, .present:
            guard !container.contains(.level) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .level, in: container, debugDescription: "a modal's step has no level")
            }
            self = step == .dismiss ? .dismiss(id) : .present(id)
        default:
            let level = try container.decode(NavigationLevel.self, forKey: .level)
            self = step == .pop ? .pop(id, level: level) : .push(id, level: level)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .dismiss(let id): try container.encode(id, forKey: .dismiss)
        case .present(let id): try container.encode(id, forKey: .present)
        case .pop(let id, let level):
            try container.encode(id, forKey: .pop)
            try container.encode(level, forKey: .level)
        case .push(let id, let level):
            try container.encode(id, forKey: .push)
            try container.encode(level, forKey: .level)
        }
    }
}

/// A present pushed on top (`201`) or updated in place (`200`).
public struct PresentResponse: Codable, Sendable, Hashable {
    /// The presentation presented or updated (the top of the stack).
    public var presentation: Presentation
    /// Queued presentations this change moved onto the stack.
    public var promoted: [Presentation]
    /// The steps from the stack before to the stack after.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// A present the rules blocked, queued (`202`) at `position` (0 is next).
public struct QueuedResponse: Codable, Sendable, Hashable {
    /// The presentation as queued: `state` `queued`, `presentedAt` `nil`.
    public var presentation: Presentation
    /// Its place in the queue, 0 to 1023; 0 is the next to be promoted.
    public var position: Int
    /// Queued presentations this change moved onto the stack; empty unless the queue was already free to move.
    public var promoted: [Presentation]
    /// Always `[]`: the stack did not change.
    public var transition: [TransitionStep]
    /// The session after the change, the presentation in its `queue`.
    public var session: Session
}

/// A presentation updated in place by `PATCH`, on the stack or in the queue.
public struct UpdateResponse: Codable, Sendable, Hashable {
    /// The presentation as updated, on the stack or in the queue, where it was.
    public var presentation: Presentation
    /// Queued presentations this change moved onto the stack; empty unless the queue was already free to move.
    public var promoted: [Presentation]
    /// Always `[]`: an update moves nothing.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// What a dismiss (or a stack replacement) removed, top first, what it promoted, the steps and the session.
public struct DismissResponse: Codable, Sendable, Hashable {
    /// The presentations removed, top first, in their final `dismissed` state.
    public var dismissed: [Presentation]
    /// Queued presentations moved onto the stack into the room the change made, in order.
    public var promoted: [Presentation]
    /// The steps from the navigation before to the one after; `[]` when a queued presentation was only cancelled.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// The answer of `PUT …/stack` has the same members as a dismiss's.
public typealias ReplaceStackResponse = DismissResponse

/// The answer of `PUT …/navigation`: the modals that left (top first, with their paths), what was
/// promoted, the plan and the session.
public typealias NavigationResponse = DismissResponse

/// A push onto a level's path, new (`201`) or updating the level's last entry in place (`200`).
public struct PushResponse: Codable, Sendable, Hashable {
    /// The entry pushed or updated (the last of its level's path).
    public var entry: PathEntry
    /// The level it was pushed onto.
    public var level: NavigationLevel
    /// The steps from the navigation before to the one after.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// What a pop removed from a level's path.
public struct PopResponse: Codable, Sendable, Hashable {
    /// The entries popped, the top-most first.
    public var popped: [PathEntry]
    /// The level they were popped from.
    public var level: NavigationLevel
    /// A `pop` step for each entry popped, the top-most first.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// Where an entry is (`GET …/path/{entryId}`).
public struct PathEntryPlace: Codable, Sendable, Hashable {
    /// The level whose path holds the entry: the root, or a container presentation on the stack.
    public var level: NavigationLevel
    /// Its index in the level's path: 0 is the first pushed.
    public var position: Int
    /// The entry as it is now.
    public var entry: PathEntry
}

/// A route of the catalog, as declared.
public struct LinkRoute: Codable, Sendable, Hashable {
    /// Its name, when it has one.
    public var name: String?
    /// Its URL pattern, such as `/downloads/{itemId}`.
    public var url: String

    /// A route with the URL pattern `url`, and its `name` when it has one.
    public init(name: String? = nil, url: String) {
        self.name = name
        self.url = url
    }
}

/// What a route does with a link.
public enum LinkAction: String, Codable, Sendable, Hashable, CaseIterable {
    /// Goes to a whole navigation (`PUT …/navigation`).
    case navigate
    /// Pushes onto the top level.
    case push
    /// Presents a modal.
    case present
    /// Replaces the top level's path.
    case replacePath
}

/// A link opened in a session (`POST …/links`): the route that matched, what it did, and the
/// answer of the change it made.
public struct LinkResponse: Codable, Sendable, Hashable {
    /// The catalog route that matched the URL, as declared.
    public var route: LinkRoute
    /// What the route did.
    public var action: LinkAction
    /// The modals that left, top first.
    public var dismissed: [Presentation]
    /// Queued presentations the change moved onto the stack, in order; often empty.
    public var promoted: [Presentation]
    /// The steps from the navigation before to the one after.
    public var transition: [TransitionStep]
    /// The session after the change.
    public var session: Session
}

/// What a link would do (`GET /v1/links/resolve`), without a session: the route that matched and
/// the request it would apply.
public struct LinkResolution: Sendable, Hashable {
    /// The request a route makes of a link, by its action.
    public enum Request: Sendable, Hashable {
        /// A whole navigation: the body of `PUT …/navigation`.
        case navigate(NavigationRequest)
        /// A push onto the top level.
        case push(PushRequest)
        /// A present.
        case present(PresentRequest)
        /// The top level's new path.
        case replacePath([PathEntryRequest])

        /// The action that makes this request.
        public var action: LinkAction {
            switch self {
            case .navigate: .navigate
            case .push: .push
            case .present: .present
            case .replacePath: .replacePath
            }
        }
    }

    /// The catalog route that matched the URL, as declared.
    public var route: LinkRoute
    /// Whether everything is cleared first (a push or a present only).
    public var clear: Bool
    /// The request the link would apply, of the route's action.
    public var request: Request
    /// What the route does.
    public var action: LinkAction { request.action }
}

extension LinkResolution: Codable {
    private enum CodingKeys: String, CodingKey { case route, action, clear, request }

    /// The body `{path: [...]}` of a `replacePath` request.
    private struct ReplacePathBody: Codable {
        var path: [PathEntryRequest]
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        route = try container.decode(LinkRoute.self, forKey: .route)
        clear = try container.decode(Bool.self, forKey: .clear)
        switch try container.decode(LinkAction.self, forKey: .action) {
        case .navigate: request = .navigate(try container.decode(NavigationRequest.self, forKey: .request))
        case .push: request = .push(try container.decode(PushRequest.self, forKey: .request))
        case .present: request = .present(try container.decode(PresentRequest.self, forKey: .request))
        case .replacePath:
            request = .replacePath(try container.decode(ReplacePathBody.self, forKey: .request).path)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(route, forKey: .route)
        try container.encode(action, forKey: .action)
        try container.encode(clear, forKey: .clear)
        switch request {
        case .navigate(let body): try container.encode(body, forKey: .request)
        case .push(let body): try container.encode(body, forKey: .request)
        case .present(let body): try container.encode(body, forKey: .request)
        case .replacePath(let path): try container.encode(ReplacePathBody(path: path), forKey: .request)
        }
    }
}

/// The plan from the stack at version `from` (`0`: an empty stack) to the current one, `to`.
public struct TransitionResponse: Codable, Sendable, Hashable {
    /// The version asked for; `0` stands for an empty stack.
    public var from: Int64
    /// The session's current version (also in the `ETag`).
    public var to: Int64
    /// The steps from the navigation at `from` to the one at `to`; `[]` when both hold the same ids.
    public var transition: [TransitionStep]
}

/// A client token for one session.
public struct TokenResponse: Codable, Sendable, Hashable {
    /// A compact JWS; send it as `Authorization: Bearer <token>`.
    public var token: String
    /// When the token expires: its `exp` claim, in whole seconds.
    public var expiresAt: Date
    /// What the token lets its holder do, in its canonical form.
    public var scope: TokenScope
}

/// The answer of `/livez` and `/readyz`.
public struct Health: Codable, Sendable, Hashable {
    /// `alive` from `/livez`; `ready` or `not ready` (a `503`) from `/readyz`.
    public enum Status: String, Codable, Sendable, Hashable {
        case alive, ready
        case notReady = "not ready"
    }

    /// Whether the server is alive, or ready to receive traffic.
    public var status: Status
    /// Only when not ready.
    public var reason: String?
}

/// The destination catalog in effect, or the open mode.
public enum Destinations: Sendable, Hashable {
    /// No catalog: any well-formed destination in any style.
    case open
    /// The declared destinations, sorted by name.
    case catalog([CatalogDestination])
}

extension Destinations: Codable {
    private enum CodingKeys: String, CodingKey { case mode, destinations }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .mode) {
        case "open":
            guard try container.decode([CatalogDestination].self, forKey: .destinations).isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: .destinations, in: container, debugDescription: "the open mode lists no destinations")
            }
            self = .open
        case "catalog":
            self = .catalog(try container.decode([CatalogDestination].self, forKey: .destinations))
        case let mode:
            throw DecodingError.dataCorruptedError(forKey: .mode, in: container, debugDescription: "mode \(mode)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .open:
            try container.encode("open", forKey: .mode)
            try container.encode([CatalogDestination](), forKey: .destinations)
        case .catalog(let destinations):
            try container.encode("catalog", forKey: .mode)
            try container.encode(destinations, forKey: .destinations)
        }
    }
}

/// One declared destination (a case of the app's navigation enum).
public struct CatalogDestination: Sendable, Hashable {
    /// The destination's name, as presents and pushes give it.
    public var name: String
    /// The styles it may be presented with.
    public var styles: [ModalStyle.Kind]
    /// Whether it may be pushed onto a path (the style `push` in the catalog).
    public var allowsPush: Bool
    /// Its payload schema (a subset of JSON Schema) as written; `nil` when any payload is accepted.
    public var payload: JSONValue?
    /// A sentence for people.
    public var summary: String?
}

extension CatalogDestination: Codable {
    private enum CodingKeys: String, CodingKey { case name, styles, payload, summary }

    /// `styles` lists modal styles and `push`, in the catalog's order.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        let names = try container.decode([String].self, forKey: .styles)
        styles = try names.filter { $0 != "push" }.map { name in
            guard let kind = ModalStyle.Kind(rawValue: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .styles, in: container, debugDescription: "unknown style \(name)")
            }
            return kind
        }
        allowsPush = names.contains("push")
        payload = try container.decodeIfPresent(JSONValue.self, forKey: .payload)
        summary = try container.decodeIfPresent(String.self, forKey: .summary)
    }

    /// Writes `push` after the modal styles.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(styles.map(\.rawValue) + (allowsPush ? ["push"] : []), forKey: .styles)
        try container.encodeIfPresent(payload, forKey: .payload)
        try container.encodeIfPresent(summary, forKey: .summary)
    }
}

/// One session as `GET /v1/sessions` lists it.
public struct SessionSummary: Codable, Sendable, Hashable, Identifiable {
    /// The top of a listed session's stack.
    public struct Top: Codable, Sendable, Hashable {
        /// The id of the presentation on top, made by the server.
        public var presentationId: String
        /// Its destination, the screen name the app maps to a view.
        public var destination: String
        /// The name of its style.
        public var style: ModalStyle.Kind
    }

    /// The session's id, chosen by its client: 1–128 characters of `[A-Za-z0-9._~-]`.
    public var id: String
    /// The session's version: 1 when first written, +1 on every change.
    public var version: Int64
    /// The time of the session's last change.
    public var updatedAt: Date
    /// When the session expires unless it changes again (`updatedAt` + its `ttl`).
    public var expiresAt: Date
    /// How many presentations the stack holds.
    public var depth: Int
    /// How many wait in the queue.
    public var queueLength: Int
    /// `nil` when the stack is empty.
    public var top: Top?

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        expiresAt = try container.decode(Date.self, forKey: .expiresAt)
        depth = try container.decode(Int.self, forKey: .depth)
        queueLength = try container.decode(Int.self, forKey: .queueLength)
        top = try container.decode(Top?.self, forKey: .top)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(depth, forKey: .depth)
        try container.encode(queueLength, forKey: .queueLength)
        try container.encode(top, forKey: .top)
    }

    private enum CodingKeys: String, CodingKey { case id, version, updatedAt, expiresAt, depth, queueLength, top }
}

/// A page of `GET /v1/sessions`, the most recently changed first.
public struct SessionsPage: Sendable, Hashable {
    /// The page's sessions, the most recently changed first; at most 100.
    public var sessions: [SessionSummary]
    /// The path of the next page; `nil` on the last one.
    public var next: String?
}

extension SessionsPage: Codable {
    private enum CodingKeys: String, CodingKey { case sessions, next }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sessions = try container.decode([SessionSummary].self, forKey: .sessions)
        next = try container.decode(String?.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(next, forKey: .next)
    }

}
