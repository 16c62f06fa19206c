import Foundation

/// One step of a transition plan; every `dismiss` comes before every `present`.
public enum TransitionStep: Sendable, Hashable {
    /// Animate this presentation (the top at that point) away.
    case dismiss(String)
    /// Animate this presentation in, on top.
    case present(String)
}

extension TransitionStep: Codable {
    private enum CodingKeys: String, CodingKey { case dismiss, present }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch (
            try container.decodeIfPresent(String.self, forKey: .dismiss),
            try container.decodeIfPresent(String.self, forKey: .present)
        )
        {
        case (let id?, nil): self = .dismiss(id)
        case (nil, let id?): self = .present(id)
        default:
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath, debugDescription: "a step is {\"dismiss\": id} or {\"present\": id}"
                ))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .dismiss(let id): try container.encode(id, forKey: .dismiss)
        case .present(let id): try container.encode(id, forKey: .present)
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
    public var session: Session
}

/// A present the rules blocked, queued (`202`) at `position` (0 is next).
public struct QueuedResponse: Codable, Sendable, Hashable {
    public var presentation: Presentation
    public var position: Int
    public var promoted: [Presentation]
    /// Always `[]`: the stack did not change.
    public var transition: [TransitionStep]
    public var session: Session
}

/// A presentation updated in place by `PATCH`, on the stack or in the queue.
public struct UpdateResponse: Codable, Sendable, Hashable {
    public var presentation: Presentation
    public var promoted: [Presentation]
    public var transition: [TransitionStep]
    public var session: Session
}

/// What a dismiss (or a stack replacement) removed, top first, what it promoted, the steps and the session.
public struct DismissResponse: Codable, Sendable, Hashable {
    /// The presentations removed, top first, in their final `dismissed` state.
    public var dismissed: [Presentation]
    public var promoted: [Presentation]
    public var transition: [TransitionStep]
    public var session: Session
}

/// The answer of `PUT …/stack` has the same members as a dismiss's.
public typealias ReplaceStackResponse = DismissResponse

/// The plan from the stack at version `from` (`0`: an empty stack) to the current one, `to`.
public struct TransitionResponse: Codable, Sendable, Hashable {
    public var from: Int64
    public var to: Int64
    public var transition: [TransitionStep]
}

/// A client token for one session.
public struct TokenResponse: Codable, Sendable, Hashable {
    /// A compact JWS; send it as `Authorization: Bearer <token>`.
    public var token: String
    public var expiresAt: Date
    public var scope: TokenScope
}

/// The answer of `/livez` and `/readyz`.
public struct Health: Codable, Sendable, Hashable {
    public enum Status: String, Codable, Sendable, Hashable {
        case alive, ready
        case notReady = "not ready"
    }

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
public struct CatalogDestination: Codable, Sendable, Hashable {
    public var name: String
    /// The styles it may be presented with.
    public var styles: [ModalStyle.Kind]
    /// Its payload schema (a subset of JSON Schema) as written; `nil` when any payload is accepted.
    public var payload: JSONValue?
    /// A sentence for people.
    public var summary: String?
}

/// One session as `GET /v1/sessions` lists it.
public struct SessionSummary: Codable, Sendable, Hashable, Identifiable {
    /// The top of a listed session's stack.
    public struct Top: Codable, Sendable, Hashable {
        public var presentationId: String
        public var destination: String
        public var style: ModalStyle.Kind
    }

    public var id: String
    public var version: Int64
    public var updatedAt: Date
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

    /// The `cursor` of the next page, for ``ModalStackClient/sessions(limit:after:)``.
    public var nextCursor: String? {
        next.flatMap { URLComponents(string: $0)?.queryItems?.first { $0.name == "cursor" }?.value }
    }
}
