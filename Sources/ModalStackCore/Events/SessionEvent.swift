/// Something that happened to a session, as the event log and the event stream tell it. The
/// events of a change, applied in order to the version before it (``Session/applying(_:)``),
/// give the version after it.
public struct SessionEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case sessionCreated
        case presented
        case queued
        case promoted
        case updated
        case dismissed
        case replaced
        case pushed
        case popped
        case entryUpdated
        case navigated
        case sessionDeleted

        /// Whether the event is about the session's navigation rather than its own life.
        public var isPresentationEvent: Bool {
            switch self {
            case .presented, .queued, .promoted, .updated, .dismissed, .replaced, .pushed, .popped, .entryUpdated,
                .navigated:
                true
            case .sessionCreated, .sessionDeleted: false
            }
        }

        /// Every navigation event, in declaration order.
        public static let presentationEvents = allCases.filter(\.isPresentationEvent)
    }

    public var kind: Kind
    /// The presentation it concerns, for the presentation events, as it is once the event happened.
    public var presentation: Presentation?
    /// The path entry it concerns, for `pushed`, `popped` and `entryUpdated`.
    public var entry: PathEntry?
    /// The level whose path changed, for the path events.
    public var level: NavigationLevel?
    /// What else there is to say: the queue position of a queued entry, the new stack of a
    /// replace, the ttl of a new session, the result handed back by a pop.
    public var details: JSONObject

    public init(
        _ kind: Kind, presentation: Presentation? = nil, entry: PathEntry? = nil, level: NavigationLevel? = nil,
        details: JSONObject = [:]
    ) {
        self.kind = kind
        self.presentation = presentation
        self.entry = entry
        self.level = level
        self.details = details
    }
}

/// A session's navigation by ids alone: what transition plans are computed from.
public struct NavigationShape: Sendable, Hashable {
    /// One presentation on the stack and, for a container, the ids of its path.
    public struct Level: Sendable, Hashable {
        public var presentationID: String
        /// Nil for an alert-like presentation, which has no path.
        public var path: [String]?

        public init(presentationID: String, path: [String]?) {
            self.presentationID = presentationID
            self.path = path
        }
    }

    /// The root path's entry ids, first pushed first.
    public var path: [String]
    /// The stack, bottom first.
    public var stack: [Level]

    public init(path: [String] = [], stack: [Level] = []) {
        self.path = path
        self.stack = stack
    }

    public init(_ session: Session) {
        path = session.path.map(\.id)
        stack = session.stack.map {
            Level(presentationID: $0.id, path: $0.style.isAlertLike ? nil : $0.path.map(\.id))
        }
    }

    /// The stack's presentation ids, bottom first.
    public var stackIDs: [String] { stack.map(\.presentationID) }
}

/// One version of a session in the event log: what the change did and the navigation it left, by id.
public struct SessionChange: Sendable, Hashable {
    public var sessionID: String
    public var version: Int64
    public var at: Timestamp
    public var events: [SessionEvent]
    /// The navigation after the change: what transition plans from this version start at.
    public var shape: NavigationShape

    public init(sessionID: String, version: Int64, at: Timestamp, events: [SessionEvent], shape: NavigationShape) {
        self.sessionID = sessionID
        self.version = version
        self.at = at
        self.events = events
        self.shape = shape
    }

    /// The stack after the change, bottom first.
    public var stackIDs: [String] { shape.stackIDs }
}
