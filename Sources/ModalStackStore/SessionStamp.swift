import ModalStackCore

/// What tells one stored state of a session from another without reading the state: its version,
/// and when it was made and last changed, as a session deleted and made again counts its versions
/// from 1 anew. An instance sharing a database shows what it holds only while the database's
/// stamp for the session is the same.
public struct SessionStamp: Hashable, Sendable {
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(version: Int64, createdAt: Timestamp, updatedAt: Timestamp) {
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public init(_ session: Session) {
        self.init(version: session.version, createdAt: session.createdAt, updatedAt: session.updatedAt)
    }
}

/// What a store holds of a session, against the stamp of the one the caller holds.
public enum StoredSession: Sendable, Equatable {
    /// The store holds the session at the caller's stamp.
    case unchanged
    /// The store holds another state: this one (nil: no session).
    case changed(Session?)
}
