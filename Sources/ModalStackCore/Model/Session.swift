/// The modal navigation state of one app session: its stack of presentations, bottom first.
public struct Session: Sendable, Hashable {
    public var id: String
    /// +1 on every change; a session that exists has version 1 or more.
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// Bottom first: the last element is what the user sees.
    public var stack: [Presentation]

    public init(id: String, version: Int64, createdAt: Timestamp, updatedAt: Timestamp, stack: [Presentation]) {
        self.id = id
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.stack = stack
    }

    /// A session that has not been written yet (version 0); its first change makes it version 1.
    public static func unwritten(id: String, at now: Timestamp) -> Session {
        Session(id: id, version: 0, createdAt: now, updatedAt: now, stack: [])
    }

    /// The presentation the user sees, if any.
    public var top: Presentation? { stack.last }

    /// Where a presentation sits on the stack, bottom being 0.
    public func position(ofPresentation id: String) -> Int? {
        stack.firstIndex { $0.id == id }
    }
}
