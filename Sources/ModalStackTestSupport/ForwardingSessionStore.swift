import ModalStackCore
import ModalStackStore

/// A store that wraps another: every call it does not implement itself goes to `base`. For a
/// test's store that counts, holds or fails some calls, or keeps something alive with the store.
public protocol ForwardingSessionStore: SessionStore {
    var base: any SessionStore { get }
}

extension ForwardingSessionStore {
    public func session(id: String) throws(StoreError) -> Session? { try base.session(id: id) }

    public func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation? {
        try base.dismissedPresentation(id: id, sessionID: sessionID)
    }

    public func dismissedPresentation(
        id: String, sessionID: String, then done: @escaping @Sendable (Result<Presentation?, StoreError>) -> Void
    ) {
        base.dismissedPresentation(id: id, sessionID: sessionID, then: done)
    }

    public func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError)
        -> [SessionChange]
    {
        try base.changes(sessionID: sessionID, after: version, eventLimit: eventLimit)
    }

    public func changes(
        sessionID: String, after version: Int64, eventLimit: Int,
        then done: @escaping @Sendable (Result<[SessionChange], StoreError>) -> Void
    ) {
        base.changes(sessionID: sessionID, after: version, eventLimit: eventLimit, then: done)
    }

    public func history(sessionID: String, through version: Int64) throws(StoreError) -> SessionHistory? {
        try base.history(sessionID: sessionID, through: version)
    }

    public func history(
        sessionID: String, through version: Int64,
        then done: @escaping @Sendable (Result<SessionHistory?, StoreError>) -> Void
    ) {
        base.history(sessionID: sessionID, through: version, then: done)
    }

    public func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError)
        -> [Session]
    {
        try base.recentSessions(after: cursor, limit: limit, at: now)
    }

    public func recentSessions(
        after cursor: SessionCursor?, limit: Int, at now: Timestamp,
        then done: @escaping @Sendable (Result<[Session], StoreError>) -> Void
    ) {
        base.recentSessions(after: cursor, limit: limit, at: now, then: done)
    }

    public func sessionCount() throws(StoreError) -> Int { try base.sessionCount() }

    public func session(id: String, unlessAt stamp: SessionStamp?) throws(StoreError) -> StoredSession {
        try base.session(id: id, unlessAt: stamp)
    }

    public func idempotentResponse(
        scope: String, key: String, then done: @escaping @Sendable (Result<StoredResponse?, StoreError>) -> Void
    ) {
        base.idempotentResponse(scope: scope, key: key, then: done)
    }

    public func session(
        id: String, unlessAt stamp: SessionStamp?,
        then done: @escaping @Sendable (Result<StoredSession, StoreError>) -> Void
    ) {
        base.session(id: id, unlessAt: stamp, then: done)
    }

    public func estimatedSessionCount() throws(StoreError) -> Int { try base.estimatedSessionCount() }

    public func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String] {
        try base.expiredSessionIDs(at: now, limit: limit)
    }

    public func pruneIdempotentResponses(at now: Timestamp, limit: Int) throws(StoreError) -> Int {
        try base.pruneIdempotentResponses(at: now, limit: limit)
    }

    public func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse? {
        try base.idempotentResponse(scope: scope, key: key)
    }

    public var isShared: Bool { base.isShared }

    @discardableResult
    public func commit(_ writes: [SessionWrite]) throws(StoreError) -> Set<String> { try base.commit(writes) }

    public func observeOtherWriters(_ handler: @escaping @Sendable (String?) -> Void) {
        base.observeOtherWriters(handler)
    }

    public func checkHealth() throws(StoreError) { try base.checkHealth() }

    public func close() { base.close() }
}
