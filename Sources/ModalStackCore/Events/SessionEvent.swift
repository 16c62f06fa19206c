/// Something that happened to a session, as the event log and the event stream tell it.
public struct SessionEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case sessionCreated
        case presented
        case queued
        case promoted
        case updated
        case dismissed
        case replaced
        case sessionDeleted

        /// Whether the event is about the session's presentations rather than its own life.
        public var isPresentationEvent: Bool {
            switch self {
            case .presented, .queued, .promoted, .updated, .dismissed, .replaced: true
            case .sessionCreated, .sessionDeleted: false
            }
        }

        /// Every presentation event, in declaration order.
        public static let presentationEvents = allCases.filter(\.isPresentationEvent)
    }

    public var kind: Kind
    /// The presentation it concerns, for the presentation events.
    public var presentation: Presentation?
    /// What else there is to say: the queue position of a queued entry, the new stack of a replace.
    public var details: JSONObject

    public init(_ kind: Kind, presentation: Presentation? = nil, details: JSONObject = [:]) {
        self.kind = kind
        self.presentation = presentation
        self.details = details
    }
}

/// One version of a session in the event log: what the change did and the stack it left, by id.
public struct SessionChange: Sendable, Hashable {
    public var sessionID: String
    public var version: Int64
    public var at: Timestamp
    public var events: [SessionEvent]
    /// The stack after the change, bottom first: what transition plans are computed from.
    public var stackIDs: [String]

    public init(sessionID: String, version: Int64, at: Timestamp, events: [SessionEvent], stackIDs: [String]) {
        self.sessionID = sessionID
        self.version = version
        self.at = at
        self.events = events
        self.stackIDs = stackIDs
    }
}
