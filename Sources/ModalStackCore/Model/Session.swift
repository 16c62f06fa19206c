/// The navigation state of one app session: the root level's push path, its stack of
/// presentations, bottom first (each container with a push path of its own), and the queue of
/// presentations waiting until the rules let them on.
public struct Session: Sendable, Hashable {
    public var id: String
    /// +1 on every change; a session that exists has version 1 or more.
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// The screens pushed on the root level, first pushed first.
    public var path: [PathEntry]
    /// Bottom first: the last element is what the user sees.
    public var stack: [Presentation]
    /// First in, first promoted.
    public var queue: [Presentation]
    /// How long the session lives without a change, in seconds; then it expires.
    public var ttlSeconds: Int64

    public init(
        id: String, version: Int64, createdAt: Timestamp, updatedAt: Timestamp, stack: [Presentation],
        queue: [Presentation] = [], ttlSeconds: Int64 = SessionRules.defaultSessionTTLSeconds, path: [PathEntry] = []
    ) {
        self.id = id
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.path = path
        self.stack = stack
        self.queue = queue
        self.ttlSeconds = ttlSeconds
    }

    /// A session that has not been written yet (version 0); its first change makes it version 1.
    public static func unwritten(
        id: String, at now: Timestamp, ttlSeconds: Int64 = SessionRules.defaultSessionTTLSeconds
    ) -> Session {
        Session(id: id, version: 0, createdAt: now, updatedAt: now, stack: [], ttlSeconds: ttlSeconds)
    }

    /// When the session expires unless it changes before.
    public var expiresAt: Timestamp {
        Timestamp(millisecondsSinceEpoch: updatedAt.millisecondsSinceEpoch + ttlSeconds * 1000)
    }

    /// An expired session reads as if it had never been written.
    public func isExpired(at now: Timestamp) -> Bool {
        expiresAt <= now
    }

    /// The presentation the user sees, if any.
    public var top: Presentation? { stack.last }

    /// Where a presentation sits on the stack, bottom being 0.
    public func position(ofPresentation id: String) -> Int? {
        stack.firstIndex { $0.id == id }
    }

    /// A presentation on the stack or in the queue.
    public func activePresentation(id: String) -> Presentation? {
        stack.first { $0.id == id } ?? queue.first { $0.id == id }
    }
}
