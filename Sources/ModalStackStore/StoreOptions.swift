import Settings

/// What every engine is configured with: how durable a commit is, and how much of each session's
/// past it keeps.
public struct StoreOptions: Sendable, Equatable {
    public var durability = Durability.normal
    public var eventLogSize = RetentionPolicy.standard.eventLogSize
    public var idempotencyLifetimeSeconds = Int(RetentionPolicy.standard.idempotencyLifetimeMilliseconds / 1000)

    public init() {}

    /// What the store keeps of each session's past, and for how long.
    public var retention: RetentionPolicy {
        RetentionPolicy(
            eventLogSize: eventLogSize, dismissedPresentationsKept: RetentionPolicy.standard.dismissedPresentationsKept,
            idempotencyLifetimeMilliseconds: Int64(idempotencyLifetimeSeconds) * 1000)
    }

    public static let settings = SettingsTable<StoreOptions>([
        .choice(
            "durability", "MODE",
            "normal: a commit survives a crash of the process; full: it also survives power loss", \.durability),
        .integer(
            "event-log-size", "changes kept in each session's event log; older ones are pruned", 1...1_000_000,
            \.eventLogSize),
        .integer(
            "idempotency-ttl", "seconds an Idempotency-Key's response is kept for replay", 1...30 * 86_400,
            \.idempotencyLifetimeSeconds),
    ])
}
