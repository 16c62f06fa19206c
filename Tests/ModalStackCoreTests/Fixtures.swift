import ModalStackCore

/// A command context with a fixed clock and predictable ids (`p1`, `p2`, …).
final class FixedContext {
    private var nextID = 0
    var now = Timestamp(millisecondsSinceEpoch: 1_790_000_000_000)
    var rules = SessionRules()

    var context: CommandContext {
        CommandContext(now: now, rules: rules) { [unowned self] in
            nextID += 1
            return "p\(nextID)"
        }
    }

    /// Applies commands in order, returning the final session.
    func apply(_ commands: [Command], to session: Session = .unwritten(id: "s", at: Timestamp(millisecondsSinceEpoch: 0))) throws -> Session {
        var session = session
        for command in commands {
            session = try session.applying(command, in: context).session
        }
        return session
    }
}

func present(_ destination: String, style: ModalStyle = .sheet, payload: JSONObject = [:], key: String? = nil) -> Command {
    .present(PresentRequest(destination: destination, style: style, payload: payload, key: key))
}
