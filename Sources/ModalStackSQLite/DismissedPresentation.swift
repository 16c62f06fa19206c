import ModalStackCore
import ModalStackStore

/// A presentation that left a session, with where it sorts among the session's dismissed ones.
struct DismissedPresentation: Sendable {
    var sequence: Int64
    var presentation: Presentation

    /// What the change to `version` dismissed, ordered by that version, then by their order in the change.
    static func list(_ presentations: [Presentation], dismissedBy version: Int64) -> [DismissedPresentation] {
        presentations.enumerated().map { offset, presentation in
            DismissedPresentation(
                sequence: RowCodec.dismissedSequence(version: version, offset: offset), presentation: presentation)
        }
    }

    /// What `change` dismissed: the presentations of its `dismissed` events, in their order.
    static func list(dismissedBy change: SessionChange) -> [DismissedPresentation] {
        list(change.events.compactMap { $0.kind == .dismissed ? $0.presentation : nil }, dismissedBy: change.version)
    }
}
