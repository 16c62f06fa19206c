import ModalStackCore

/// A command context with a fixed clock and predictable ids (`p1`, `p2`, …).
final class FixedContext {
    private var nextID = 0
    var now = Timestamp(millisecondsSinceEpoch: 1_790_000_000_000)
    var rules = SessionRules()
    var catalog: Catalog?

    var context: CommandContext {
        CommandContext(now: now, rules: rules, catalog: catalog) { [unowned self] in
            nextID += 1
            return "p\(nextID)"
        }
    }

    /// Applies commands in order, returning the final session.
    func apply(
        _ commands: [Command], to session: Session = .unwritten(id: "s", at: Timestamp(millisecondsSinceEpoch: 0))
    ) throws -> Session {
        var session = session
        for command in commands {
            session = try session.applying(command, in: context).session
        }
        return session
    }
}

func present(
    _ destination: String, content: ModalContent = .sheet(SheetOptions()), payload: JSONObject = [:],
    key: String? = nil,
    locked: Bool? = nil, whenBlocked: PresentRequest.WhenBlocked = .queue
) -> Command {
    .present(
        PresentRequest(
            destination: destination, content: content, payload: payload, key: key, locked: locked,
            whenBlocked: whenBlocked))
}

func dismiss(_ target: DismissTarget = .top, result: JSONValue? = nil, force: Bool = false) -> Command {
    .dismiss(DismissRequest(target, result: result, force: force))
}

func alert(
    _ title: String = "Delete?",
    buttons: [AlertButton] = [
        AlertButton(id: "delete", label: "Delete", role: .destructive),
        AlertButton(id: "cancel", label: "Cancel", role: .cancel),
    ]
) -> ModalContent {
    .alert(AlertContent(title: title, buttons: buttons))
}

/// The ids a dismiss removed, top first (empty for any other effect).
func dismissedIDs(_ outcome: CommandOutcome) -> [String] {
    guard case .dismissed(let removed) = outcome.effect else { return [] }
    return removed.map(\.id)
}
