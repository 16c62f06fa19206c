/// Why a command was refused. `kind` is stable (it becomes the problem `type`); `detail` is for
/// people; `fieldErrors` point at each bad field of the request with a JSON pointer.
public struct ModalError: Error, Sendable, Equatable {
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The stable slug, e.g. `stack-full`.
        public let slug: String

        private init(_ slug: String) { self.slug = slug }

        public var description: String { slug }

        /// The request is well-formed JSON but its fields are wrong (types, ranges, patterns).
        public static let validationFailed = Kind("validation-failed")
        /// The stack is at the maximum depth.
        public static let stackFull = Kind("stack-full")
        /// An alert-like presentation is on top; nothing goes over it until it is dismissed.
        public static let alertOnTop = Kind("alert-on-top")
        /// Presentations are already waiting; a new one would have to wait behind them.
        public static let queueNotEmpty = Kind("queue-not-empty")
        /// The queue holds as many presentations as it may.
        public static let queueFull = Kind("queue-full")
        /// The dismiss would remove a locked presentation and does not say `force`.
        public static let locked = Kind("locked")
        /// A presentation with this key is already on the stack below the top.
        public static let alreadyPresented = Kind("already-presented")
        /// The stack holds fewer presentations than the dismiss asked for.
        public static let nothingToDismiss = Kind("nothing-to-dismiss")
        /// The presentation named is not on the session's stack.
        public static let presentationNotFound = Kind("presentation-not-found")
        /// The presentation named has left the session: it can be read, not changed or dismissed.
        public static let presentationDismissed = Kind("presentation-dismissed")
        /// The presentation named waits in the queue, where the request cannot use it.
        public static let presentationQueued = Kind("presentation-queued")
        /// The session has never been written (or was deleted).
        public static let sessionNotFound = Kind("session-not-found")
        /// The session exists with other settings than a create asked for (its ttl).
        public static let sessionExists = Kind("session-exists")
        /// An entry with this key is already in the path, below its last entry.
        public static let alreadyPushed = Kind("already-pushed")
        /// The path is at the maximum path depth.
        public static let pathFull = Kind("path-full")
        /// The path holds fewer entries than the pop asked for.
        public static let nothingToPop = Kind("nothing-to-pop")
        /// The level named is neither the root nor a container on the stack.
        public static let levelNotFound = Kind("level-not-found")
        /// The path entry named is not in the path.
        public static let entryNotFound = Kind("entry-not-found")
        /// No route of the catalog matches the link.
        public static let noRoute = Kind("no-route")
    }

    /// One bad field: where it is (RFC 6901 JSON pointer into the request body) and what is wrong.
    public struct FieldError: Sendable, Hashable {
        public var pointer: String
        public var message: String

        public init(pointer: String, message: String) {
            self.pointer = pointer
            self.message = message
        }
    }

    public var kind: Kind
    public var detail: String
    public var fieldErrors: [FieldError]
    /// Extra facts for the client, e.g. the position of the entry that already has a key.
    public var context: JSONObject

    public init(_ kind: Kind, _ detail: String, fieldErrors: [FieldError] = [], context: JSONObject = [:]) {
        self.kind = kind
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.context = context
    }

    public static func presentationNotFound(_ id: String) -> ModalError {
        ModalError(
            .presentationNotFound, "the session has no presentation \(id)", context: ["presentationId": .string(id)])
    }

    /// A request for a presentation that was dismissed (its record is still kept).
    public static func presentationDismissed(_ presentation: Presentation) -> ModalError {
        let when = presentation.dismissedAt.map { " at \($0.rfc3339)" } ?? ""
        return ModalError(
            .presentationDismissed,
            "presentation \(presentation.id) (\(presentation.destination)) was dismissed\(when); it can be read, not changed",
            context: [
                "presentationId": .string(presentation.id), "state": .string(Presentation.State.dismissed.rawValue),
            ])
    }

    public static func validation(_ fieldErrors: [FieldError]) -> ModalError {
        let detail =
            fieldErrors.count == 1
            ? "\(fieldErrors[0].pointer.isEmpty ? "the body" : fieldErrors[0].pointer): \(fieldErrors[0].message)"
            : "\(fieldErrors.count) fields are invalid"
        return ModalError(.validationFailed, detail, fieldErrors: fieldErrors)
    }
}
