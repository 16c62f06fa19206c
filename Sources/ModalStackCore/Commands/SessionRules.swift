/// The server-wide rules every session follows.
public struct SessionRules: Sendable, Hashable {
    public static let defaultMaxDepth = 8
    public static let defaultQueueSize = 16
    public static let defaultMaxPathDepth = 16
    /// Seven days.
    public static let defaultSessionTTLSeconds: Int64 = 7 * 86_400
    /// What a session may ask for as its own time to live: a second to thirty days.
    public static let sessionTTLRange: ClosedRange<Int64> = 1...30 * 86_400

    /// The most presentations one stack holds.
    public var maxDepth: Int
    /// The most presentations one session's queue holds.
    public var queueSize: Int
    /// How long a session lives without a change, unless it asked for its own time.
    public var sessionTTLSeconds: Int64
    /// The most entries one level's push path holds.
    public var maxPathDepth: Int

    public init(
        maxDepth: Int = SessionRules.defaultMaxDepth, queueSize: Int = SessionRules.defaultQueueSize,
        sessionTTLSeconds: Int64 = SessionRules.defaultSessionTTLSeconds,
        maxPathDepth: Int = SessionRules.defaultMaxPathDepth
    ) {
        self.maxDepth = maxDepth
        self.queueSize = queueSize
        self.sessionTTLSeconds = sessionTTLSeconds
        self.maxPathDepth = maxPathDepth
    }
}

/// What a command needs from the outside world: the time, the rules, the catalog, and fresh ids
/// (for presentations and path entries).
/// The core reads no clock and no random source itself, so tests can fix both.
public struct CommandContext {
    public var now: Timestamp
    public var rules: SessionRules
    /// The declared destinations; nil runs open (any well-formed destination, any style).
    public var catalog: Catalog?
    public var makeID: () -> String

    public init(
        now: Timestamp, rules: SessionRules, catalog: Catalog? = nil, makeID: @escaping () -> String
    ) {
        self.now = now
        self.rules = rules
        self.catalog = catalog
        self.makeID = makeID
    }
}
