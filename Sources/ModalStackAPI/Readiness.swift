import Locking

/// Whether the server should receive traffic, apart from the database's health: not while it
/// starts, not while it drains on shutdown.
final class Readiness: Sendable {
    enum Phase: Sendable {
        case starting
        case serving
        case draining
    }

    private let phase = LockedValue(Phase.starting)

    func enter(_ next: Phase) {
        phase.withLock { $0 = next }
    }

    /// Nil when ready; otherwise why not.
    var notReadyReason: String? {
        switch phase.withLock({ $0 }) {
        case .starting: "starting"
        case .serving: nil
        case .draining: "shutting down"
        }
    }
}
