/// What a client asks to show: `{destination, style?, payload?, key?}`.
public struct PresentRequest: Sendable, Hashable {
    /// The largest payload accepted, counted as compact JSON bytes.
    public static let maxPayloadBytes = 16 * 1024

    public var destination: String
    public var style: ModalStyle
    public var payload: JSONObject
    /// Identity on the stack; defaults to the destination name.
    public var key: String

    public init(destination: String, style: ModalStyle = .default, payload: JSONObject = [:], key: String? = nil) {
        self.destination = destination
        self.style = style
        self.payload = payload
        self.key = key ?? destination
    }

    /// Decodes and validates a request body (or one element of a stack replacement at `pointer`).
    public init(json: JSONValue, at pointer: String = "") throws(ModalError) {
        var reader = try FieldReader(json, at: pointer)
        let destination = reader.string("destination", required: true)
        if let destination, !Identifiers.isValidDestination(destination) {
            reader.fail(
                "destination",
                "must be 1-\(Identifiers.destinationMaxLength) characters matching ^[A-Za-z][A-Za-z0-9._-]*$")
        }
        var style = ModalStyle.default
        if let name = reader.string("style") {
            if let parsed = ModalStyle(rawValue: name) {
                style = parsed
            } else {
                let known = ModalStyle.allCases.map(\.rawValue).joined(separator: ", ")
                reader.fail("style", "unknown style \"\(name)\"; known styles: \(known)")
            }
        }
        let payload = reader.object("payload") ?? [:]
        let payloadBytes = JSONValue.object(payload).serialized().count
        if payloadBytes > Self.maxPayloadBytes {
            reader.fail("payload", "is \(payloadBytes) bytes; the limit is \(Self.maxPayloadBytes) bytes")
        }
        let key = reader.string("key")
        if let key, !Identifiers.isValidKey(key) {
            reader.fail("key", "must be 1-\(Identifiers.keyMaxLength) characters without control characters")
        }
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let destination else { throw .validation(reader.errors) }
        self.init(destination: destination, style: style, payload: payload, key: key)
    }
}
