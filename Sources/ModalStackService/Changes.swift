import ModalStackCore
import ModalStackStore
import Timekeeping

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

/// A client's key for retrying a change safely: a retry of the same request gets the first
/// answer again instead of applying the change twice.
public struct IdempotencyKey: Sendable, Hashable {
    /// Where the key is unique: a session id, or "" for requests outside any session.
    public let scope: String
    public let key: String
    /// What identifies the request: a retry must match it exactly.
    public let fingerprint: [UInt8]

    public init(scope: String, key: String, fingerprint: [UInt8]) {
        self.scope = scope
        self.key = key
        self.fingerprint = fingerprint
    }

    struct Name: Hashable {
        let scope: String
        let key: String
    }

    var name: Name { Name(scope: scope, key: key) }

    func storing(_ answer: some ReplayableAnswer, at now: Timestamp) -> StoredResponse {
        let recorded = answer.recorded
        return StoredResponse(
            scope: scope, key: key, fingerprint: fingerprint, status: recorded.status, headers: recorded.headers,
            body: recorded.body, createdAt: now)
    }
}

/// An answer to a change that is kept with the change for replays: what a retry is told.
public protocol ReplayableAnswer: Sendable {
    var recorded: (status: Int, headers: [String: String], body: [UInt8]) { get }
}

/// How a change ended.
public enum ChangeResult<Answer: Sendable>: Sendable {
    /// Applied and committed, or changing nothing: the answer rendered from its outcome.
    case answered(Answer)
    /// A retry of a change already made with this idempotency key: the answer stored then.
    case replayed(StoredResponse)
    case refused(ChangeRefusal)
}

/// Why a change was not made. Nothing was changed.
public enum ChangeRefusal: Error, Sendable {
    case sessionNotFound(String)
    /// The session is not at the expected version; nil: it does not exist.
    case versionMismatch(current: Int64?)
    /// A request with the same idempotency key is still running.
    case idempotencyKeyInUse
    /// The idempotency key was used before for another request.
    case idempotencyKeyReused
    /// The core's rules refused the command.
    case rejected(ModalError)
    case storeFailed(StoreError)
}
