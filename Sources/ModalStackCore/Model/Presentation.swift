/// One modal on a session's stack: what to show (`destination`, `payload`), how (`style`), and
/// its identity (`key`), which like an enum's `id` names the case and ignores the associated value.
public struct Presentation: Sendable, Hashable {
    /// Server-made, unguessable and URL-safe.
    public var id: String
    public var destination: String
    public var style: ModalStyle
    public var key: String
    /// The data the destination needs, like an enum case's associated value.
    public var payload: JSONObject
    public var presentedAt: Timestamp

    public init(
        id: String, destination: String, style: ModalStyle, key: String, payload: JSONObject,
        presentedAt: Timestamp
    ) {
        self.id = id
        self.destination = destination
        self.style = style
        self.key = key
        self.payload = payload
        self.presentedAt = presentedAt
    }
}
