import Foundation

/// One thing that happened in a change; presentation events carry the presentation as it was after it.
public enum SessionEvent: Sendable, Hashable {
    /// The session's first change created it.
    case sessionCreated
    /// Pushed on top of the stack.
    case presented(Presentation)
    /// Joined the queue at `position` (0 is next).
    case queued(Presentation, position: Int)
    /// Moved from the queue onto the stack.
    case promoted(Presentation)
    /// Changed in place, on the stack or in the queue.
    case updated(Presentation)
    /// Left the session, in its final state with its `result`.
    case dismissed(Presentation)
    /// The stack was replaced; its presentation ids after the change, bottom first.
    case replaced(stack: [String])

    /// The event's `type` on the wire.
    public var type: String {
        switch self {
        case .sessionCreated: "sessionCreated"
        case .presented: "presented"
        case .queued: "queued"
        case .promoted: "promoted"
        case .updated: "updated"
        case .dismissed: "dismissed"
        case .replaced: "replaced"
        }
    }

    /// The presentation a presentation event is about.
    public var presentation: Presentation? {
        switch self {
        case .presented(let p), .queued(let p, _), .promoted(let p), .updated(let p), .dismissed(let p): p
        case .sessionCreated, .replaced: nil
        }
    }
}

extension SessionEvent: Codable {
    private enum CodingKeys: String, CodingKey { case type, presentationId, presentation, position, stack }

    /// Reads the event's members from the enclosing object; `presentationId` must match the presentation's id.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        func presentation() throws -> Presentation {
            let value = try container.decode(Presentation.self, forKey: .presentation)
            guard try container.decode(String.self, forKey: .presentationId) == value.id else {
                throw DecodingError.dataCorruptedError(
                    forKey: .presentationId, in: container, debugDescription: "presentationId is not presentation.id")
            }
            return value
        }
        switch type {
        case "sessionCreated": self = .sessionCreated
        case "presented": self = .presented(try presentation())
        case "queued": self = .queued(try presentation(), position: try container.decode(Int.self, forKey: .position))
        case "promoted": self = .promoted(try presentation())
        case "updated": self = .updated(try presentation())
        case "dismissed": self = .dismissed(try presentation())
        case "replaced": self = .replaced(stack: try container.decode([String].self, forKey: .stack))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "event \(type)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        if let presentation {
            try container.encode(presentation.id, forKey: .presentationId)
            try container.encode(presentation, forKey: .presentation)
        }
        switch self {
        case .queued(_, let position): try container.encode(position, forKey: .position)
        case .replaced(let stack): try container.encode(stack, forKey: .stack)
        default: break
        }
    }
}

/// One event as `GET …/events` lists it: its change's `version` and time, and the event.
public struct LoggedEvent: Sendable, Hashable {
    public var version: Int64
    public var at: Date
    public var event: SessionEvent

    public init(version: Int64, at: Date, event: SessionEvent) {
        self.version = version
        self.at = at
        self.event = event
    }
}

extension LoggedEvent: Codable {
    private enum CodingKeys: String, CodingKey { case version, at }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int64.self, forKey: .version)
        at = try container.decode(Date.self, forKey: .at)
        event = try SessionEvent(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(at, forKey: .at)
        try event.encode(to: encoder)
    }
}

/// One version of a session as the log keeps it, and the `data` of the stream's `change` events.
public struct SessionChange: Codable, Sendable, Hashable {
    /// The version the change made.
    public var version: Int64
    public var at: Date
    /// Its events in order.
    public var events: [SessionEvent]
    /// The stack it left, as presentation ids, bottom first.
    public var stack: [String]
}

/// A page of the event log, oldest first.
public struct EventsPage: Sendable, Hashable {
    public var events: [LoggedEvent]
    /// The session's current version.
    public var version: Int64
    /// The path of the next page; `nil` when this page reaches the current version.
    public var next: String?
}

extension EventsPage: Codable {
    private enum CodingKeys: String, CodingKey { case events, version, next }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        events = try container.decode([LoggedEvent].self, forKey: .events)
        version = try container.decode(Int64.self, forKey: .version)
        next = try container.decode(String?.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(events, forKey: .events)
        try container.encode(version, forKey: .version)
        try container.encode(next, forKey: .next)
    }
}

/// The `data` of the event stream's `sessionDeleted` and `tokenExpired` events; the stream ends after it.
public struct StreamNotice: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable {
        /// The session was deleted.
        case sessionDeleted
        /// The client token the stream was opened with reached its `exp`; reconnect with a new one.
        case tokenExpired
    }

    public var type: Kind
    public var sessionId: String
}
