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

    /// The history of version `version` from what an engine read: the session's current version
    /// and its logged changes from the newest checkpoint at or before `version` (or from the
    /// first, when none is) up to `version`, oldest first. Nil when the log no longer shows that
    /// version, or the rows cannot rebuild it.
    public init?(
        sessionID: String, version: Int64, current: Int64, rows: [LoggedChange], retention: RetentionPolicy
    ) throws(StoreError) {
        guard version >= retention.oldestChangeShown(current: current), version <= current,
            let first = rows.first, rows.last?.version == version
        else { return nil }
        if let checkpoint = first.checkpoint {
            base = try RowCodec.decodeCheckpoint(checkpoint, sessionID: sessionID, version: first.version)
            changes = try rows.dropFirst().map { row throws(StoreError) in
                try RowCodec.decodeChange(row.record, sessionID: sessionID)
            }
        } else {
            guard first.version == 1 else { return nil }
            changes = try rows.map { row throws(StoreError) in
                try RowCodec.decodeChange(row.record, sessionID: sessionID)
            }
            base = .unwritten(id: sessionID, at: changes[0].at)
        }
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

    /// ``session(id:at:)`` without holding the caller's thread while a database answers.
    public func session(
        id: String, at version: Int64, then done: @escaping @Sendable (Result<Session?, StoreError>) -> Void
    ) {
        history(sessionID: id, through: version) { history in
            done(history.flatMap { history in Result { () throws(StoreError) in try history?.replayed() } })
        }
    }
}

/// A change as the engines store it: its record, and the checkpoint stored with it, if any.
public struct LoggedChange: Sendable {
    public var version: Int64
    public var record: String
    public var checkpoint: String?

    public init(version: Int64, record: String, checkpoint: String?) {
        self.version = version
        self.record = record
        self.checkpoint = checkpoint
    }
}
