/// Why a command was refused. `kind` is stable (the API answers each kind with a problem type of
/// its own); `detail` is for people; `fieldErrors` point at each bad field of the request with a
/// JSON pointer.
public struct ModalError: Error, Sendable, Equatable {
    /// An enum, not a struct of static members: whoever maps kinds (the API's problem types)
    /// switches over them exhaustively, so a new kind does not compile until it is mapped.
    public enum Kind: Sendable, Hashable, CaseIterable {
        /// The request is well-formed JSON but its fields are wrong (types, ranges, patterns).
        case validationFailed
        /// The stack is at the maximum depth.
        case stackFull
        /// An alert-like presentation is on top; nothing goes over it until it is dismissed.
        case alertOnTop
        /// Presentations are already waiting; a new one would have to wait behind them.
        case queueNotEmpty
        /// The queue holds as many presentations as it may.
        case queueFull
        /// The dismiss would remove a locked presentation and does not say `force`.
        case locked
        /// A presentation with this key is already on the stack below the top.
        case alreadyPresented
        /// The stack holds fewer presentations than the dismiss asked for.
        case nothingToDismiss
        /// The presentation named is not on the session's stack.
        case presentationNotFound
        /// The presentation named has left the session: it can be read, not changed or dismissed.
        case presentationDismissed
        /// The presentation named waits in the queue, where the request cannot use it.
        case presentationQueued
        /// The session has never been written (or was deleted).
        case sessionNotFound
        /// The session exists with other settings than a create asked for (its ttl).
        case sessionExists
        /// An entry with this key is already in the path, below its last entry.
        case alreadyPushed
        /// The path is at the maximum path depth.
        case pathFull
        /// The path holds fewer entries than the pop asked for.
        case nothingToPop
        /// The level named is neither the root nor a container on the stack.
        case levelNotFound
        /// The path entry named is not in the path.
        case entryNotFound
        /// No route of the catalog matches the link.
        case noRoute
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
