import Foundation

/// One thing that happened in a change; presentation events carry the presentation as it was
/// after it, path events the entry and the level whose path changed.
public enum SessionEvent: Sendable, Hashable {
    /// The session's first change created it, living `ttl` seconds after each change.
    case sessionCreated(ttl: Int64)
    /// Pushed on top of the stack.
    case presented(Presentation)
    /// Joined the queue at `position` (0 is next).
    case queued(Presentation, position: Int)
    /// Moved from the queue onto the stack.
    case promoted(Presentation)
    /// Changed in place, on the stack or in the queue (its path included).
    case updated(Presentation)
    /// Left the session, in its final state with its `result` (and its path, which went with it).
    case dismissed(Presentation)
    /// The stack was replaced; its presentation ids after the change, bottom first. The events
    /// before it say what each kept, new or removed presentation became.
    case replaced(stack: [String])
    /// Pushed on top of `level`'s path.
    case pushed(PathEntry, level: NavigationLevel)
    /// Left `level`'s path; `result` is what the pop handed back, on the top-most entry it popped.
    case popped(PathEntry, level: NavigationLevel, result: JSONValue?)
    /// Changed in place in `level`'s path (its payload).
    case entryUpdated(PathEntry, level: NavigationLevel)
    /// Ends a whole navigation (`PUT …/navigation`) or a link; for a link, the `url` opened and the
    /// `route` pattern it matched.
    case navigated(url: String?, route: String?)

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
        case .pushed: "pushed"
        case .popped: "popped"
        case .entryUpdated: "entryUpdated"
        case .navigated: "navigated"
        }
    }

    /// The presentation a presentation event is about.
    public var presentation: Presentation? {
        switch self {
        case .presented(let p), .queued(let p, _), .promoted(let p), .updated(let p), .dismissed(let p): p
        case .sessionCreated, .replaced, .pushed, .popped, .entryUpdated, .navigated: nil
        }
    }

    /// The entry a path event is about.
    public var entry: PathEntry? {
        switch self {
        case .pushed(let entry, _), .popped(let entry, _, _), .entryUpdated(let entry, _): entry
        case .sessionCreated, .presented, .queued, .promoted, .updated, .dismissed, .replaced, .navigated: nil
        }
    }

    /// The level whose path a path event changed.
    public var level: NavigationLevel? {
        switch self {
        case .pushed(_, let level), .popped(_, let level, _), .entryUpdated(_, let level): level
        case .sessionCreated, .presented, .queued, .promoted, .updated, .dismissed, .replaced, .navigated: nil
        }
    }
}

extension SessionEvent: Codable {
    private enum CodingKeys: String, CodingKey {
        case type, presentationId, presentation, position, stack, ttl, entryId, entry, level, result, url, route
    }

    /// Reads the event's members from the enclosing object; `presentationId` must match the
    /// presentation's id, `entryId` the entry's.
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
        func entry() throws -> PathEntry {
            let value = try container.decode(PathEntry.self, forKey: .entry)
            guard try container.decode(String.self, forKey: .entryId) == value.id else {
                throw DecodingError.dataCorruptedError(
                    forKey: .entryId, in: container, debugDescription: "entryId is not entry.id")
            }
            return value
        }
        func level() throws -> NavigationLevel { try container.decode(NavigationLevel.self, forKey: .level) }
        switch type {
        case "sessionCreated": self = .sessionCreated(ttl: try container.decode(Int64.self, forKey: .ttl))
        case "presented": self = .presented(try presentation())
        case "queued": self = .queued(try presentation(), position: try container.decode(Int.self, forKey: .position))
        case "promoted": self = .promoted(try presentation())
        case "updated": self = .updated(try presentation())
        case "dismissed": self = .dismissed(try presentation())
        case "replaced": self = .replaced(stack: try container.decode([String].self, forKey: .stack))
        case "pushed": self = .pushed(try entry(), level: try level())
        case "popped":
            // Absent when the pop gave none; `null` when it gave `null`.
            let result = container.contains(.result) ? try container.decode(JSONValue.self, forKey: .result) : nil
            self = .popped(try entry(), level: try level(), result: result)
        case "entryUpdated": self = .entryUpdated(try entry(), level: try level())
        case "navigated":
            self = .navigated(
                url: try container.decodeIfPresent(String.self, forKey: .url),
                route: try container.decodeIfPresent(String.self, forKey: .route))
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
        if let entry {
            try container.encode(entry.id, forKey: .entryId)
            try container.encode(entry, forKey: .entry)
        }
        try container.encodeIfPresent(level, forKey: .level)
        switch self {
        case .sessionCreated(let ttl): try container.encode(ttl, forKey: .ttl)
        case .queued(_, let position): try container.encode(position, forKey: .position)
        case .replaced(let stack): try container.encode(stack, forKey: .stack)
        case .popped(_, _, let result): try container.encodeIfPresent(result, forKey: .result)
        case .navigated(let url, let route):
            try container.encodeIfPresent(url, forKey: .url)
            try container.encodeIfPresent(route, forKey: .route)
        case .presented, .promoted, .updated, .dismissed, .pushed, .entryUpdated: break
        }
    }
}

/// One event as `GET …/events` lists it: its change's `version` and time, and the event.
public struct LoggedEvent: Sendable, Hashable {
    /// The version the event's change made.
    public var version: Int64
    /// When the change was made (the session's `updatedAt` after it).
    public var at: Date
    /// The event; its members sit beside `version` and `at` in one object.
    public var event: SessionEvent

    /// An event of the change that made `version` at `at`.
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

/// One version of a session as the log keeps it, and the `data` of the stream's `change` events:
/// its events, and the navigation it left by ids, to check a derivation (``Session/applying(_:)``) against.
public struct SessionChange: Codable, Sendable, Hashable {
    /// The version the change made.
    public var version: Int64
    /// When the change was made (the session's `updatedAt` after it).
    public var at: Date
    /// Its events in order.
    public var events: [SessionEvent]
    /// The stack it left, as presentation ids, bottom first.
    public var stack: [String]
    /// The root path it left, as entry ids, the first pushed first.
    public var path: [String]
    /// The path of every container presentation on the stack it left, as entry ids, by presentation id.
    public var paths: [String: [String]]

    /// A change with its events and the ids it left; `path` and `paths` default to empty.
    public init(
        version: Int64, at: Date, events: [SessionEvent], stack: [String], path: [String] = [],
        paths: [String: [String]] = [:]
    ) {
        self.version = version
        self.at = at
        self.events = events
        self.stack = stack
        self.path = path
        self.paths = paths
    }
}

/// A page of the event log, oldest first.
public struct EventsPage: Sendable, Hashable {
    /// What one change of the page left, by ids; its events are in ``EventsPage/events``.
    public struct Change: Codable, Sendable, Hashable {
        /// The version the change made.
        public var version: Int64
        /// When the change was made (the session's `updatedAt` after it).
        public var at: Date
        /// The stack it left, as presentation ids, bottom first.
        public var stack: [String]
        /// The root path it left, as entry ids.
        public var path: [String]
        /// The path of every container presentation on the stack it left, by presentation id.
        public var paths: [String: [String]]
    }

    /// The version the page starts after: the `after` asked for; asked from the start (`0`) when
    /// the log no longer holds version 1, the last version it no longer holds.
    public var after: Int64
    /// The events of the page's changes, flat, in order.
    public var events: [LoggedEvent]
    /// The page's changes, oldest first, one per version its events have.
    public var changes: [Change]
    /// The session's current version.
    public var version: Int64
    /// The path of the next page; `nil` when this page reaches the current version.
    public var next: String?

    /// The page's changes with their events, as the event stream sends them: each one applies
    /// (``Session/applying(_:)``) to the session at the version before it.
    public var sessionChanges: [SessionChange] {
        changes.map { change in
            SessionChange(
                version: change.version, at: change.at,
                events: events.filter { $0.version == change.version }.map(\.event), stack: change.stack,
                path: change.path, paths: change.paths)
        }
    }
}

extension EventsPage: Codable {
    private enum CodingKeys: String, CodingKey { case after, events, changes, version, next }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Older servers leave it out.
        after = try container.decodeIfPresent(Int64.self, forKey: .after) ?? 0
        events = try container.decode([LoggedEvent].self, forKey: .events)
        changes = try container.decode([Change].self, forKey: .changes)
        version = try container.decode(Int64.self, forKey: .version)
        next = try container.decode(String?.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(after, forKey: .after)
        try container.encode(events, forKey: .events)
        try container.encode(changes, forKey: .changes)
        try container.encode(version, forKey: .version)
        try container.encode(next, forKey: .next)
    }
}

/// The `data` of the event stream's `sessionDeleted` and `tokenExpired` events; the stream ends after it.
public struct StreamNotice: Codable, Sendable, Hashable {
    /// Which notice it is: the stream's event name, and `type` in its data.
    public enum Kind: String, Codable, Sendable, Hashable {
        /// The session was deleted.
        case sessionDeleted
        /// The client token the stream was opened with reached its `exp`; reconnect with a new one.
        case tokenExpired
    }

    /// Why a session left, on `sessionDeleted`.
    public enum Reason: String, Codable, Sendable, Hashable {
        /// `DELETE` of the session.
        case deleted
        /// Its `ttl` passed without a change.
        case expired
    }

    /// Whether the session left or the stream's token expired.
    public var type: Kind
    /// The id of the session the stream followed.
    public var sessionId: String
    /// Why the session left (`sessionDeleted` only).
    public var reason: Reason?
}
