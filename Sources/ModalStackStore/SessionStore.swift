import ModalStackCore

/// Where sessions live between requests. Narrow on purpose: an engine implements these few
/// calls and nothing else changes. Engines keep what ``RetentionPolicy`` says and derive no rule
/// of their own.
public protocol SessionStore: Sendable {
    /// Whether other processes write to the same data (instances on one database). Then what this
    /// process holds in memory may be stale: it is checked against the store before it answers,
    /// and a commit can find a session superseded.
    var isShared: Bool { get }

    /// The session as last written, or nil if it was never written or was deleted.
    func session(id: String) throws(StoreError) -> Session?

    /// The session as last written, unless it is the one the caller holds at `stamp` (nil: the
    /// caller holds none): for a shared store, whether what this process holds is what the store
    /// holds, without transferring and parsing the whole session when it is.
    func session(id: String, unlessAt stamp: SessionStamp?) throws(StoreError) -> StoredSession

    /// ``session(id:unlessAt:)`` without holding the caller's thread while a database answers:
    /// `done` runs once, on the store's own thread, or before this returns for an embedded store.
    func session(
        id: String, unlessAt stamp: SessionStamp?,
        then done: @escaping @Sendable (Result<StoredSession, StoreError>) -> Void)

    /// A presentation that left the session (dismissed, cancelled, replaced away), if still kept.
    func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation?

    /// ``dismissedPresentation(id:sessionID:)`` without holding the caller's thread while a
    /// database answers: `done` runs once, on the store's own thread, or before this returns for
    /// an embedded store.
    func dismissedPresentation(
        id: String, sessionID: String, then done: @escaping @Sendable (Result<Presentation?, StoreError>) -> Void)

    /// The session's logged changes after `version`, oldest first: at least `limit` events' worth
    /// when there are that many, always whole changes.
    func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]

    /// ``changes(sessionID:after:eventLimit:)`` without holding the caller's thread while a
    /// database answers: `done` runs once, on the store's own thread, or before this returns for
    /// an embedded store.
    func changes(
        sessionID: String, after version: Int64, eventLimit: Int,
        then done: @escaping @Sendable (Result<[SessionChange], StoreError>) -> Void)

    /// What rebuilds the session at `version` (see ``session(id:at:)``): nil when the log no longer
    /// holds the change that made it, or the session is not at that version or later.
    func history(sessionID: String, through version: Int64) throws(StoreError) -> SessionHistory?

    /// ``history(sessionID:through:)`` without holding the caller's thread while a database
    /// answers: `done` runs once, on the store's own thread, or before this returns for an
    /// embedded store.
    func history(
        sessionID: String, through version: Int64,
        then done: @escaping @Sendable (Result<SessionHistory?, StoreError>) -> Void)

    /// Up to `limit` sessions not expired at `now`, the most recently changed first (by
    /// `updatedAt`, then by id, both descending), starting after `cursor`: the last session of the
    /// previous page. A session that does not change while a client pages is listed exactly once.
    func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError) -> [Session]

    /// ``recentSessions(after:limit:at:)`` without holding the caller's thread while a database
    /// answers: `done` runs once, on the store's own thread, or before this returns for an
    /// embedded store.
    func recentSessions(
        after cursor: SessionCursor?, limit: Int, at now: Timestamp,
        then done: @escaping @Sendable (Result<[Session], StoreError>) -> Void)

    /// How many sessions are stored (expired ones not yet swept included).
    func sessionCount() throws(StoreError) -> Int

    /// About how many sessions are stored, for a gauge read at every scrape: an engine whose count
    /// reads every row answers from its statistics instead, which trail the truth by a moment.
    func estimatedSessionCount() throws(StoreError) -> Int

    /// Up to `limit` sessions whose time to live ran out by `now`, for the expiry sweep.
    func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String]

    /// Removes up to `limit` stored responses no longer replayed at `now`; returns how many. The
    /// expiry sweep calls it, so that commits never wait on each other's pruning.
    func pruneIdempotentResponses(at now: Timestamp, limit: Int) throws(StoreError) -> Int

    /// The response stored for an idempotency key, if it is still kept.
    func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse?

    /// ``idempotentResponse(scope:key:)`` without holding the caller's thread while a database
    /// answers: `done` runs once, on the store's own thread, or before this returns for an embedded store.
    func idempotentResponse(
        scope: String, key: String, then done: @escaping @Sendable (Result<StoredResponse?, StoreError>) -> Void)

    /// Applies the writes in one atomic transaction; when this returns, all of it is committed
    /// but the writes of the sessions it returns. The caller passes many writes at once to
    /// commit them together (group commit).
    ///
    /// Each write says what it expects to find: a save of version `v` expects the session at
    /// `v - 1` (absent for version 1), a delete the version it names. When another writer got
    /// there first, none of that session's writes in this call is applied, and the session is
    /// returned as superseded: its changes must be decided again on what is stored now. A store
    /// that is not shared has no other writer and never returns one.
    @discardableResult
    func commit(_ writes: [SessionWrite]) throws(StoreError) -> Set<String>

    /// Calls `handler` with the id of each session another instance changed or deleted, soon after
    /// it committed, and with nil when some may have been missed (after a lost connection): then
    /// every watched session must be read again. One handler; a store that is not shared never calls it.
    func observeOtherWriters(_ handler: @escaping @Sendable (_ sessionID: String?) -> Void)

    /// Throws unless the store can be read and written right now (for readiness checks).
    func checkHealth() throws(StoreError)

    /// Finishes the store's own work (a checkpoint, say) and closes it; calls after this fail.
    func close()
}

extension SessionStore {
    /// By default from the whole session: only a shared store is asked, and it answers itself.
    public func session(id: String, unlessAt stamp: SessionStamp?) throws(StoreError) -> StoredSession {
        let stored = try session(id: id)
        return stamp != nil && stored.map(SessionStamp.init) == stamp ? .unchanged : .changed(stored)
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func session(
        id: String, unlessAt stamp: SessionStamp?,
        then done: @escaping @Sendable (Result<StoredSession, StoreError>) -> Void
    ) {
        done(Result { () throws(StoreError) in try session(id: id, unlessAt: stamp) })
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func changes(
        sessionID: String, after version: Int64, eventLimit: Int,
        then done: @escaping @Sendable (Result<[SessionChange], StoreError>) -> Void
    ) {
        done(
            Result { () throws(StoreError) in try changes(sessionID: sessionID, after: version, eventLimit: eventLimit)
            })
    }

    /// The logged change that made `version`, if the log still holds it: the first change after
    /// the version before, when it is that one.
    public func change(sessionID: String, version: Int64) throws(StoreError) -> SessionChange? {
        Self.change(version, in: try changes(sessionID: sessionID, after: version - 1, eventLimit: 1))
    }

    /// ``change(sessionID:version:)`` without holding the caller's thread while a database answers.
    public func change(
        sessionID: String, version: Int64, then done: @escaping @Sendable (Result<SessionChange?, StoreError>) -> Void
    ) {
        changes(sessionID: sessionID, after: version - 1, eventLimit: 1) { logged in
            done(logged.map { Self.change(version, in: $0) })
        }
    }

    private static func change(_ version: Int64, in logged: [SessionChange]) -> SessionChange? {
        logged.first { $0.version == version }
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func idempotentResponse(
        scope: String, key: String, then done: @escaping @Sendable (Result<StoredResponse?, StoreError>) -> Void
    ) {
        done(Result { () throws(StoreError) in try idempotentResponse(scope: scope, key: key) })
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func dismissedPresentation(
        id: String, sessionID: String, then done: @escaping @Sendable (Result<Presentation?, StoreError>) -> Void
    ) {
        done(Result { () throws(StoreError) in try dismissedPresentation(id: id, sessionID: sessionID) })
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func history(
        sessionID: String, through version: Int64,
        then done: @escaping @Sendable (Result<SessionHistory?, StoreError>) -> Void
    ) {
        done(Result { () throws(StoreError) in try history(sessionID: sessionID, through: version) })
    }

    /// By default on the caller's thread: an embedded store answers without waiting on a server.
    public func recentSessions(
        after cursor: SessionCursor?, limit: Int, at now: Timestamp,
        then done: @escaping @Sendable (Result<[Session], StoreError>) -> Void
    ) {
        done(Result { () throws(StoreError) in try recentSessions(after: cursor, limit: limit, at: now) })
    }

    /// By default the exact count: for an embedded engine, counting is a walk of its smallest
    /// index in the process, with no round trip.
    public func estimatedSessionCount() throws(StoreError) -> Int { try sessionCount() }
}

/// Where a page of ``SessionStore/recentSessions(after:limit:at:)`` ended: its last session's change time and id.
public struct SessionCursor: Sendable, Hashable {
    public var updatedAt: Timestamp
    public var id: String

    public init(updatedAt: Timestamp, id: String) {
        self.updatedAt = updatedAt
        self.id = id
    }
}
