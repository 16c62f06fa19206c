import ModalStackCore

/// A change to one session, as a client asked for it.
public struct ChangeRequest: Sendable {
    public var sessionID: String
    public var command: Command
    /// Whether a first write creates the session instead of being refused as not found.
    public var createsSession: Bool
    /// The versions the client expects the session to be at; nil: any state, none included.
    public var expectedVersion: ExpectedVersion?
    public var idempotencyKey: IdempotencyKey?

    public init(
        sessionID: String, command: Command, createsSession: Bool, expectedVersion: ExpectedVersion? = nil,
        idempotencyKey: IdempotencyKey? = nil
    ) {
        self.sessionID = sessionID
        self.command = command
        self.createsSession = createsSession
        self.expectedVersion = expectedVersion
        self.idempotencyKey = idempotencyKey
    }
}

/// The state a change expects its session to be in (HTTP's `If-Match`).
public enum ExpectedVersion: Sendable, Hashable {
    /// The session exists, at any version.
    case any
    /// The session is at one of these versions.
    case oneOf(Set<Int64>)

    /// Whether a session at `version` (nil: it does not exist) is as expected.
    public func matches(_ version: Int64?) -> Bool {
        guard let version else { return false }
        switch self {
        case .any: return true
        case .oneOf(let versions): return versions.contains(version)
        }
    }
}
