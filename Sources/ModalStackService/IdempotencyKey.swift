import ModalStackCore
import ModalStackStore

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
