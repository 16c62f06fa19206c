import ModalStackCore

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
