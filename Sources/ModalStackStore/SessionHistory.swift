import ModalStackCore

/// What a store's log holds to rebuild one version of a session: a state at or before it and the
/// changes after that state, up to the version. Both engines answer
/// ``SessionStore/history(sessionID:through:)`` with one; the rebuilding is written once, here.
public struct SessionHistory: Sendable {
    /// The state the changes start from: a checkpoint, or the session before its first version.
    public var base: Session
    /// The changes after `base`, oldest first.
    public var changes: [SessionChange]

    public init(base: Session, changes: [SessionChange]) {
        self.base = base
        self.changes = changes
    }

    /// `base` with `changes` applied in order, by the core's one `apply`.
    public func replayed() throws(StoreError) -> Session {
        var session = base
        for change in changes {
            do {
                session = try session.applying(change)
            } catch {
                throw StoreError(.corrupt, "change \(change.version) of session \(session.id): \(error.description)")
            }
        }
        return session
    }
}

extension SessionStore {
    /// The session as it was at `version`, rebuilt from the log; nil when the log no longer holds
    /// that version (or never did).
    public func session(id: String, at version: Int64) throws(StoreError) -> Session? {
        try history(sessionID: id, through: version)?.replayed()
    }
}

extension SessionStore {
    /// From the session's first version, while the log still holds it. (Until the engines keep
    /// checkpoints of their own.)
    public func history(sessionID: String, through version: Int64) throws(StoreError) -> SessionHistory? {
        let logged = try changes(sessionID: sessionID, after: 0, eventLimit: Int(Int32.max))
        guard let first = logged.first, first.version == 1, version >= 1, version <= logged.count else { return nil }
        return SessionHistory(
            base: .unwritten(id: sessionID, at: first.at), changes: Array(logged.prefix(Int(version))))
    }
}
