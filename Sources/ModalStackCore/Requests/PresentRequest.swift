/// What a client asks to show: `{destination, style?, payload?, key?, locked?, whenBlocked?}`
/// plus the fields of its style (detents; title, message, buttons; total, completed).
public struct PresentRequest: Sendable, Hashable {
    /// What to do when the stacking rules do not allow the present right now.
    public enum WhenBlocked: String, Sendable, Hashable {
        /// Wait in the session's queue until a dismiss makes room (202).
        case queue
        /// Refuse with a 409 naming the rule.
        case reject
    }

    /// The largest payload (or result) accepted, counted as compact JSON bytes.
    public static let maxPayloadBytes = 16 * 1024

    public var destination: String
    public var content: ModalContent
    public var payload: JSONObject
    /// Identity on the stack; defaults to the destination name.
    public var key: String
    /// Whether it is locked; nil says nothing: a new presentation is unlocked, and one updated in
    /// place or kept by a navigation keeps its lock.
    public var locked: Bool?
    public var whenBlocked: WhenBlocked

    public init(
        destination: String, content: ModalContent = .sheet(SheetOptions()), payload: JSONObject = [:],
        key: String? = nil, locked: Bool? = nil, whenBlocked: WhenBlocked = .queue
    ) {
        self.destination = destination
        self.content = content
        self.payload = payload
        self.key = key ?? destination
        self.locked = locked
        self.whenBlocked = whenBlocked
    }

    public var style: ModalStyle { content.style }

    /// Decodes and validates a request body (or one element of a stack replacement at `pointer`).
    public init(json: JSONValue, at pointer: String = "") throws(ModalError) {
        var reader = try FieldReader(json, at: pointer)
        let destination = reader.destination()
        var style: ModalStyle? = ModalStyle.default
        if let name = reader.string("style") {
            style = ModalStyle(rawValue: name)
            if style == nil {
                let known = ModalStyle.allCases.map(\.rawValue).joined(separator: ", ")
                reader.fail("style", "unknown style \"\(name)\"; known styles: \(known)")
            }
        }
        let content = style.flatMap { ModalContent.decode(style: $0, from: &reader) }
        let payload = reader.payload()
        let key = reader.text("key", maxLength: Identifiers.keyMaxLength)
        let locked = reader.bool("locked")
        var whenBlocked = WhenBlocked.queue
        if let name = reader.string("whenBlocked") {
            if let parsed = WhenBlocked(rawValue: name) {
                whenBlocked = parsed
            } else {
                reader.fail("whenBlocked", "must be queue or reject")
            }
        }
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let destination, let content else { throw .validation(reader.errors) }
        self.init(
            destination: destination, content: content, payload: payload, key: key, locked: locked,
            whenBlocked: whenBlocked)
    }

    /// The encoded size of `value` when it is over the payload limit, else nil.
    static func oversize(_ value: JSONValue) -> Int? {
        let size = value.serialized().count
        return size > maxPayloadBytes ? size : nil
    }
}
