/// The server-wide rules every session follows.
public struct SessionRules: Sendable, Hashable {
    /// The default maximum number of presentations on one stack.
    public static let defaultMaxDepth = 8

    public var maxDepth: Int

    public init(maxDepth: Int = SessionRules.defaultMaxDepth) {
        self.maxDepth = maxDepth
    }
}

/// What a command needs from the outside world: the time, the rules, and fresh ids.
/// The core reads no clock and no random source itself, so tests can fix both.
public struct CommandContext {
    public var now: Timestamp
    public var rules: SessionRules
    public var makePresentationID: () -> String

    public init(now: Timestamp, rules: SessionRules, makePresentationID: @escaping () -> String) {
        self.now = now
        self.rules = rules
        self.makePresentationID = makePresentationID
    }
}
