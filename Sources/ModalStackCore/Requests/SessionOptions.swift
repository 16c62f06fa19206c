/// The body of `PUT /v1/sessions/{id}` and `POST /v1/sessions`: `{"ttl"?: seconds}` (or no body
/// at all). The options apply when the session is created; an existing session with other ones is
/// refused.
public struct SessionOptions: Sendable, Hashable {
    /// The session's own time to live, within `SessionRules.sessionTTLRange`; nil for the server's.
    public var ttlSeconds: Int64?

    public init(ttlSeconds: Int64? = nil) {
        self.ttlSeconds = ttlSeconds
    }

    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let range = SessionRules.sessionTTLRange
        let ttl = reader.integer("ttl", in: Int(range.lowerBound)...Int(range.upperBound))
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
        self.init(ttlSeconds: ttl.map(Int64.init))
    }
}
