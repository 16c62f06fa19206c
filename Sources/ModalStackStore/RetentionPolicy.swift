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

    /// Of presentations that left a session, oldest first, those kept: one per presentation id (a
    /// later dismissal of an id replaces an earlier one), the newest ``dismissedPresentationsKept``,
    /// still oldest first.
    public func dismissedKept<Dismissed>(_ dismissed: [Dismissed], id: (Dismissed) -> String) -> [Dismissed] {
        var ids: Set<String> = []
        var kept: [Dismissed] = []
        for entry in dismissed.reversed() {
            guard kept.count < dismissedPresentationsKept else { break }
            if ids.insert(id(entry)).inserted { kept.append(entry) }
        }
        return kept.reversed()
    }

    /// Every this many versions, a change's record also holds the session after it: a checkpoint
    /// that any later version is rebuilt from (``SessionHistory``).
    public static let checkpointInterval: Int64 = 64

    /// The oldest change the event log shows while `current` is the session's version: the
    /// newest ``eventLogSize`` changes.
    public func oldestChangeShown(current: Int64) -> Int64 {
        max(current - Int64(eventLogSize) + 1, 1)
    }

    /// Whether the record of `version` holds the session after it.
    public static func isCheckpoint(_ version: Int64) -> Bool {
        version % checkpointInterval == 0
    }

    /// Changes below this version are deleted once `version` is logged; nil when none is newly
    /// old enough. Engines keep the newest checkpoint at or below the oldest change shown, so that
    /// every version shown can be rebuilt; they delete in steps of ``checkpointInterval``.
    public func changesDeleted(whenLogging version: Int64) -> Int64? {
        let oldestShown = oldestChangeShown(current: version)
        return Self.isCheckpoint(oldestShown) ? oldestShown : nil
    }

    /// Responses stored before this time (in milliseconds since the epoch) are no longer replayed.
    public func oldestResponseKept(at now: Timestamp) -> Int64 {
        now.millisecondsSinceEpoch - idempotencyLifetimeMilliseconds
    }
}
