/// One modal of a session: what to show (`destination`, `payload`), how (`content`, which carries
/// the style and the fields only that style has), and its identity (`key`), which like an enum's
/// `id` names the case and ignores the associated value.
public struct Presentation: Sendable, Hashable {
    /// Where a presentation is in its life: waiting in the queue, on the stack, or gone.
    public enum State: String, Sendable, Hashable {
        case queued
        case presented
        case dismissed
    }

    /// Server-made, unguessable and URL-safe.
    public var id: String
    public var destination: String
    public var key: String
    public var content: ModalContent
    /// The data the destination needs, like an enum case's associated value.
    public var payload: JSONObject
    /// A locked presentation (a payment flow, a forced update) is only dismissed with `force`.
    public var locked: Bool
    public var state: State
    /// When the present was asked for; the same as `presentedAt` unless it waited in the queue.
    public var requestedAt: Timestamp
    public var presentedAt: Timestamp?
    public var dismissedAt: Timestamp?
    /// What the user answered, handed back to whoever presented it (for an alert: the button).
    public var result: JSONValue?
    /// The screens pushed inside it, first pushed first; always empty for alert-like styles.
    public var path: [PathEntry]

    public init(
        id: String, destination: String, key: String, content: ModalContent, payload: JSONObject = [:],
        locked: Bool = false, state: State = .presented, requestedAt: Timestamp, presentedAt: Timestamp? = nil,
        dismissedAt: Timestamp? = nil, result: JSONValue? = nil, path: [PathEntry] = []
    ) {
        self.id = id
        self.destination = destination
        self.key = key
        self.content = content
        self.payload = payload
        self.locked = locked
        self.state = state
        self.requestedAt = requestedAt
        self.presentedAt = presentedAt ?? (state == .queued ? nil : requestedAt)
        self.dismissedAt = dismissedAt
        self.result = result
        self.path = path
    }

    public var style: ModalStyle { content.style }
}
