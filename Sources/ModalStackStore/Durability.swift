/// What a commit survives before it is acknowledged; every engine offers both.
public enum Durability: String, Sendable, CaseIterable {
    /// Survives a crash of the process; the last commits may be lost on power loss.
    case normal
    /// Synced on every commit: survives power loss.
    case full
}
