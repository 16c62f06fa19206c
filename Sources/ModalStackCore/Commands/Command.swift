/// A change a client asks of a session.
public enum Command: Sendable, Hashable {
    /// Create the session, empty, unless it exists.
    case create(SessionOptions)
    case present(PresentRequest)
    case update(presentationID: String, UpdateRequest)
    case dismiss(DismissRequest)
    case replaceStack(ReplaceStackRequest)
    case push(PushRequest)
    case pop(PopRequest)
    case navigate(NavigationRequest)
    /// What a deep link resolved to (``Catalog/resolve(_:)``), applied to the session as it is.
    case openLink(ResolvedLink)

    public var isCreate: Bool {
        if case .create = self { return true }
        return false
    }
}

/// The result of a command that the rules allowed.
public struct CommandOutcome: Sendable, Hashable {
    public enum Effect: Sendable, Hashable {
        /// The session was created, empty.
        case created
        /// A new presentation was pushed on top.
        case presented(Presentation)
        /// The rules did not allow it yet: it waits in the queue at `position` (0 is next).
        case queued(Presentation, position: Int)
        /// A presentation was changed in place (same key presented again, or a PATCH).
        case updated(Presentation)
        /// These presentations were removed, top first (a cancelled queued entry alone).
        case dismissed([Presentation])
        /// The whole stack was replaced.
        case replaced
        /// A screen was pushed onto a level's path.
        case pushed(PathEntry, level: NavigationLevel)
        /// The last entry of a level's path was pushed again with another payload.
        case entryUpdated(PathEntry, level: NavigationLevel)
        /// These entries were popped from a level's path, top-most first.
        case popped([PathEntry], level: NavigationLevel)
        /// The whole navigation was set (`PUT …/navigation`, or a deep link).
        case navigated
    }

    /// The session after the command; its version moved only if `changed`.
    public var session: Session
    public var effect: Effect
    /// Queued presentations this change moved onto the stack, in order.
    public var promoted: [Presentation]
    /// Presentations that left the session (dismissed, cancelled, replaced away), in their final
    /// `dismissed` state with their results; the store keeps them readable.
    public var dismissed: [Presentation]
    /// The event-log record of this version; nil when the command asked for what already was
    /// (the same payload presented again, the same stack put again): nothing is written and the
    /// version stays.
    public var change: SessionChange?
    /// The steps from the navigation before the command to the navigation after it.
    public var transition: TransitionPlan

    public var changed: Bool { change != nil }
}
