import ModalStackCore

/// Where sessions live between requests. Narrow on purpose: another engine (PostgreSQL, say)
/// implements these few calls and nothing else changes.
public protocol SessionStore: Sendable {
    /// The session as last written, or nil if it was never written or was deleted.
    func session(id: String) throws(StoreError) -> Session?

    /// A presentation that left the session (dismissed, cancelled, replaced away), if still kept.
    func dismissedPresentation(id: String, sessionID: String) throws(StoreError) -> Presentation?

    /// The session's logged changes after `version`, oldest first: at least `limit` events' worth
    /// when there are that many, always whole changes.
    func changes(sessionID: String, after version: Int64, eventLimit: Int) throws(StoreError) -> [SessionChange]

    /// The logged change that made `version`, if the log still holds it.
    func change(sessionID: String, version: Int64) throws(StoreError) -> SessionChange?

    /// Up to `limit` sessions not expired at `now`, the most recently changed first (by
    /// `updatedAt`, then by id, both descending), starting after `cursor`: the last session of the
    /// previous page. A session that does not change while a client pages is listed exactly once.
    func recentSessions(after cursor: SessionCursor?, limit: Int, at now: Timestamp) throws(StoreError) -> [Session]

    /// How many sessions are stored (expired ones not yet swept included).
    func sessionCount() throws(StoreError) -> Int

    /// Up to `limit` sessions whose time to live ran out by `now`, for the expiry sweep.
    func expiredSessionIDs(at now: Timestamp, limit: Int) throws(StoreError) -> [String]

    /// The response stored for an idempotency key, if it is still kept.
    func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse?

    /// Applies every write in one atomic transaction; when this returns, all of it is committed.
    /// The caller passes many writes at once to commit them together (group commit).
    func commit(_ writes: [SessionWrite]) throws(StoreError)

    /// Throws unless the store can be read and written right now (for readiness checks).
    func checkHealth() throws(StoreError)

    /// Finishes the store's own work (a checkpoint, say) and closes it; calls after this fail.
    func close()
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

/// What a commit survives before it is acknowledged; every engine offers both.
public enum Durability: String, Sendable, CaseIterable {
    /// Survives a crash of the process; the last commits may be lost on power loss.
    case normal
    /// Synced on every commit: survives power loss.
    case full
}

/// The defaults every engine starts from.
public enum StoreDefaults {
    /// How many changes each session's event log keeps; older ones are pruned.
    public static let eventLogSize = 1000
    /// How long stored idempotent responses are kept: 24 hours.
    public static let idempotencyLifetimeMilliseconds: Int64 = 24 * 3600 * 1000
}

/// One change to persist.
public enum SessionWrite: Sendable, Hashable {
    /// Write a new version of a session with everything that goes with it.
    case save(SessionUpdate)
    /// Remove the session and everything it owns.
    case delete(sessionID: String)
}

/// A new version of a session and what is committed with it, atomically.
public struct SessionUpdate: Sendable, Hashable {
    public var session: Session
    /// Presentations that left the session in this change, kept readable.
    public var retired: [Presentation]
    /// The event-log record of this version.
    public var change: SessionChange
    /// The response to replay when the same idempotent request is retried.
    public var response: StoredResponse?

    public init(session: Session, retired: [Presentation], change: SessionChange, response: StoredResponse? = nil) {
        self.session = session
        self.retired = retired
        self.change = change
        self.response = response
    }
}

/// A response kept for an `Idempotency-Key`, replayed byte for byte on a retry.
public struct StoredResponse: Sendable, Hashable {
    /// Where the key is unique: a session id, or "" for requests outside any session.
    public var scope: String
    public var key: String
    /// What identifies the request (method, path and body): a retry must match it exactly.
    public var fingerprint: [UInt8]
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    public var createdAt: Timestamp

    public init(
        scope: String, key: String, fingerprint: [UInt8], status: Int, headers: [String: String], body: [UInt8],
        createdAt: Timestamp
    ) {
        self.scope = scope
        self.key = key
        self.fingerprint = fingerprint
        self.status = status
        self.headers = headers
        self.body = body
        self.createdAt = createdAt
    }
}

/// Why the store could not do what was asked, by what a client can do about it.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No space left for the database to grow: writes fail, reads still work.
        case full
        /// The database is busy, locked, read-only or its file vanished: try again later.
        case unavailable
        /// The file is not a ModalStack database or is damaged.
        case corrupt
        /// Anything else.
        case failed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
