import ModalStackCore

/// Where sessions live between requests. Narrow on purpose: another engine (PostgreSQL, say)
/// implements these few calls and nothing else changes.
public protocol SessionStore: Sendable {
    /// The session as last written, or nil if it was never written or was deleted.
    func session(id: String) throws(StoreError) -> Session?

    /// Applies every write in one atomic transaction; when this returns, all of it is committed.
    /// The caller passes many writes at once to commit them together (group commit).
    func commit(_ writes: [SessionWrite]) throws(StoreError)

    /// Throws unless the store can be read and written right now (for readiness checks).
    func checkHealth() throws(StoreError)
}

/// One change to persist.
public enum SessionWrite: Sendable, Hashable {
    /// Insert the session or overwrite it with this version.
    case save(Session)
    /// Remove the session and everything it owns.
    case delete(sessionID: String)
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
