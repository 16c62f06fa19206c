import ModalStackCore
import Timekeeping

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

    /// Removes up to `limit` stored responses no longer replayed at `now`; returns how many. The
    /// expiry sweep calls it, so that commits never wait on each other's pruning.
    func pruneIdempotentResponses(at now: Timestamp, limit: Int) throws(StoreError) -> Int

    /// The response stored for an idempotency key, if it is still kept.
    func idempotentResponse(scope: String, key: String) throws(StoreError) -> StoredResponse?

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

/// How much of each session's past a store keeps, and for how long. Every engine applies the
/// same policy, through these methods.
public struct RetentionPolicy: Sendable, Hashable {
    /// How many changes each session's event log keeps; older ones are pruned.
    public var eventLogSize: Int
    /// How many presentations that left a session stay readable; older ones are pruned.
    public var dismissedPresentationsKept: Int
    /// How long stored idempotent responses are replayed.
    public var idempotencyLifetimeMilliseconds: Int64

    public init(eventLogSize: Int, dismissedPresentationsKept: Int, idempotencyLifetimeMilliseconds: Int64) {
        self.eventLogSize = eventLogSize
        self.dismissedPresentationsKept = dismissedPresentationsKept
        self.idempotencyLifetimeMilliseconds = idempotencyLifetimeMilliseconds
    }

    /// 1000 changes, 64 dismissed presentations, responses for 24 hours.
    public static let standard = RetentionPolicy(
        eventLogSize: 1000, dismissedPresentationsKept: 64, idempotencyLifetimeMilliseconds: 24 * 3600 * 1000)

    /// The oldest version a session's event log keeps once `version` is logged; nil while
    /// nothing is old enough (versions start at 1).
    public func oldestChangeKept(whenLogging version: Int64) -> Int64? {
        let oldest = version - Int64(eventLogSize) + 1
        return oldest > 1 ? oldest : nil
    }

    /// Responses stored before this time (in milliseconds since the epoch) are no longer replayed.
    public func oldestResponseKept(at now: Timestamp) -> Int64 {
        now.millisecondsSinceEpoch - idempotencyLifetimeMilliseconds
    }
}

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

extension TimeSource {
    /// The wall clock, in the core's terms.
    public func now() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: wallMilliseconds())
    }
}
