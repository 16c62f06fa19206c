/// The body of `PATCH …/presentations/{id}`: changes made in place, without moving the entry.
/// `payload` applies to every style; `message`, `total` and `completed` to progress dialogs.
public struct UpdateRequest: Sendable, Hashable {
    public var payload: JSONObject?
    public var message: String?
    public var total: Double?
    public var completed: Double?

    public init(payload: JSONObject? = nil, message: String? = nil, total: Double? = nil, completed: Double? = nil) {
        self.payload = payload
        self.message = message
        self.total = total
        self.completed = completed
    }

    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let payload = reader.object("payload")
        if let payload, let size = PresentRequest.oversize(.object(payload)) {
            reader.fail("payload", "is \(size) bytes; the limit is \(PresentRequest.maxPayloadBytes) bytes")
        }
        let message = reader.text("message", maxLength: AlertContent.maxMessageLength, allowsLineBreaks: true)
        let total = reader.number("total", in: 0...ModalContent.maxProgressTotal, excludingLowerBound: true)
        let completed = reader.number("completed", in: 0...ModalContent.maxProgressTotal)
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
        self.init(payload: payload, message: message, total: total, completed: completed)
    }

    var changesProgress: Bool { message != nil || total != nil || completed != nil }
}
