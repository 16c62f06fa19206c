import ModalStackCore

/// One change to persist.
public enum SessionWrite: Sendable, Hashable {
    /// Write a new version of a session with everything that goes with it.
    case save(SessionUpdate)
    /// Remove the session and everything it owns: if it is at `expectedVersion` (nil: at any).
    case delete(sessionID: String, expectedVersion: Int64? = nil)
    /// Remove a session that expired at `version`, if it is still at that version. An engine
    /// shared by instances skips one another transaction holds (another instance's sweep or
    /// change), so that sweeps never wait for each other.
    case expire(sessionID: String, version: Int64)

    /// The session it writes.
    public var sessionID: String {
        switch self {
        case .save(let update): update.session.id
        case .delete(let id, _), .expire(let id, _): id
        }
    }
}

/// A new version of a session and what is committed with it, atomically.
public struct SessionUpdate: Sendable, Hashable {
    public let session: Session
    /// The session's JSON, whose stack and queue text the engines store as they are.
    public let document: SessionDocument
    /// Presentations that left the session in this change, kept readable.
    public var dismissed: [Presentation]
    /// The event-log record of this version.
    public var change: SessionChange
    /// The response to replay when the same idempotent request is retried.
    public var response: StoredResponse?

    /// `document` is the session's, when the caller rendered it already; made here otherwise.
    public init(
        session: Session, document: SessionDocument? = nil, dismissed: [Presentation], change: SessionChange,
        response: StoredResponse? = nil
    ) {
        self.session = session
        self.document = document ?? SessionDocument(session)
        self.dismissed = dismissed
        self.change = change
        self.response = response
    }
}
