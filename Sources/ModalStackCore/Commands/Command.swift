/// A change a client asks of a session.
public enum Command: Sendable, Hashable {
    case present(PresentRequest)
    case dismiss(DismissTarget)
    case replaceStack(ReplaceStackRequest)
}

/// The result of a command that the rules allowed.
public struct CommandOutcome: Sendable, Hashable {
    public enum Effect: Sendable, Hashable {
        /// A new presentation was pushed on top.
        case presented(Presentation)
        /// The top presentation had the same key: its payload was replaced in place.
        case updated(Presentation)
        /// These presentations were removed, top first.
        case dismissed([Presentation])
        /// The whole stack was replaced.
        case replaced
    }

    /// The session after the command; its version moved only if `changed`.
    public var session: Session
    public var effect: Effect
    /// False when the command asked for what already was (the same payload presented again, the
    /// same stack put again): nothing is written and the version stays.
    public var changed: Bool
}
