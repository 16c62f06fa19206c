import ModalStackCore
import ModalStackStore

/// Sessions, writes and dismissed presentations for the store tests of every engine.
public enum StoreFixtures {
    /// A session with `stackSize` presentations of varied content (payload numbers and text that
    /// must read back exactly) and, when the stack has more than one, a queued one.
    public static func session(_ id: String, version: Int64 = 1, stackSize: Int = 2) -> Session {
        let contents: [ModalContent] = [
            .sheet(SheetOptions(detents: [.medium], interactiveDismissDisabled: true)), .fullScreenCover,
            .alert(
                AlertContent(title: "Delete?", buttons: [AlertButton(id: "cancel", label: "Cancel", role: .cancel)])),
        ]
        let stack = (0..<stackSize).map { index in
            Presentation(
                id: "\(id)-p\(index)", destination: "dest\(index)", key: "key\(index)",
                content: contents[index % contents.count],
                payload: ["index": JSONValue(index), "big": .number("12345678901234567890"), "text": "héllo \"q\""],
                locked: index == 0, requestedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + Int64(index)))
        }
        let queued = Presentation(
            id: "\(id)-q", destination: "later", key: "later",
            content: .progress(ProgressContent(message: "Wait", total: 3)),
            state: .queued, requestedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_100))
        return Session(
            id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000),
            updatedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_500), stack: stack,
            queue: stackSize > 1 ? [queued] : [])
    }

    /// A write of `session` as a change of its version: one dismissed event per dismissed
    /// presentation, then an update.
    public static func save(_ session: Session, dismissed: [Presentation] = [], response: StoredResponse? = nil)
        -> SessionWrite
    {
        .save(
            SessionUpdate(
                session: session, dismissed: dismissed, change: change(of: session, dismissed: dismissed),
                response: response))
    }

    /// The change that ``save(_:dismissed:response:)`` logs for `session`.
    public static func change(of session: Session, dismissed: [Presentation] = []) -> SessionChange {
        SessionChange(
            sessionID: session.id, version: session.version, at: session.updatedAt,
            events: dismissed.map { SessionEvent(.dismissed, presentation: $0) } + [SessionEvent(.updated)],
            shape: NavigationShape(session))
    }

    /// `presentation` as it is kept once dismissed at `milliseconds`, with a result.
    public static func dismissed(_ presentation: Presentation, at milliseconds: Int64) -> Presentation {
        var dismissed = presentation
        dismissed.state = .dismissed
        dismissed.dismissedAt = Timestamp(millisecondsSinceEpoch: milliseconds)
        dismissed.result = ["buttonId": "cancel"]
        return dismissed
    }
}

/// A session changed by the core's commands, as the service changes it: each step returns the
/// write the service would commit, whose change record replays exactly onto the version before.
/// For the tests of what a store rebuilds from its log.
public struct ScriptedSession {
    public private(set) var session: Session
    private var milliseconds: Int64
    private var nextID = 0

    /// A session not written yet; ``create()`` makes its first version.
    public init(_ id: String, at milliseconds: Int64 = 1_790_000_000_000) {
        session = .unwritten(id: id, at: Timestamp(millisecondsSinceEpoch: milliseconds))
        self.milliseconds = milliseconds
    }

    /// Goes on from `session`, as stored.
    public init(continuing session: Session) {
        self.session = session
        milliseconds = session.updatedAt.millisecondsSinceEpoch
    }

    public mutating func create(ttlSeconds: Int64? = nil) throws -> SessionWrite {
        try run(.create(SessionOptions(ttlSeconds: ttlSeconds)))
    }

    public mutating func present(_ destination: String, content: ModalContent = .sheet(SheetOptions())) throws
        -> SessionWrite
    {
        try run(.present(PresentRequest(destination: destination, content: content, payload: ["n": JSONValue(nextID)])))
    }

    public mutating func dismiss(_ target: DismissTarget = .top) throws -> SessionWrite {
        try run(.dismiss(DismissRequest(target, result: ["buttonId": "ok"])))
    }

    /// The write of `command`'s change; throws if the command changes nothing.
    public mutating func run(_ command: Command) throws -> SessionWrite {
        milliseconds += 10
        let context = CommandContext(
            now: Timestamp(millisecondsSinceEpoch: milliseconds), rules: SessionRules(),
            makeID: { [id = session.id, count = nextID] in "\(id)-\(count)" })
        nextID += 1
        let outcome = try session.applying(command, in: context)
        guard let change = outcome.change else { throw ScriptError.unchanged }
        session = outcome.session
        return .save(SessionUpdate(session: session, dismissed: outcome.dismissed, change: change))
    }

    public enum ScriptError: Error { case unchanged }
}
