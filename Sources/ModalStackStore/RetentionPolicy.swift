import ModalStackCore

/// How much of each session's past a store keeps, and for how long. Every engine applies the
/// same policy, through these methods.
public struct RetentionPolicy: Sendable, Hashable {
    /// How many changes each session's event log keeps; older ones are pruned.
    public var eventLogSize: Int
    /// How many presentations that left a session stay readable; older ones are pruned.
    public var dismissedPresentationsKept: Int
    /// How long stored idempotent responses are replayed.
    public var idempotencyLifetimeMilliseconds: Int64

    public init(eventLogSize: Int, dismissedPresentationsKept: Int, idempotencyLifetimeMilliseconds: Int64) {
        self.eventLogSize = eventLogSize
        self.dismissedPresentationsKept = dismissedPresentationsKept
        self.idempotencyLifetimeMilliseconds = idempotencyLifetimeMilliseconds
    }

    /// 1000 changes, 64 dismissed presentations, responses for 24 hours.
    public static let standard = RetentionPolicy(
        eventLogSize: 1000, dismissedPresentationsKept: 64, idempotencyLifetimeMilliseconds: 24 * 3600 * 1000)

    /// The oldest version a session's event log keeps once `version` is logged; nil while
    /// nothing is old enough (versions start at 1).
    public func oldestChangeKept(whenLogging version: Int64) -> Int64? {
        let oldest = version - Int64(eventLogSize) + 1
        return oldest > 1 ? oldest : nil
    }

    /// Responses stored before this time (in milliseconds since the epoch) are no longer replayed.
    public func oldestResponseKept(at now: Timestamp) -> Int64 {
        now.millisecondsSinceEpoch - idempotencyLifetimeMilliseconds
    }
}
