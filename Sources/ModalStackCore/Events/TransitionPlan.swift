/// The ordered steps a client animates to go from one stack to another: the longest common
/// prefix stays, the rest of the old stack is dismissed top-down, then the new entries are
/// presented bottom-up. A deep link while a sheet is open becomes a clear list of steps.
public struct TransitionPlan: Sendable, Hashable {
    public enum Step: Sendable, Hashable {
        case dismiss(presentationID: String)
        case present(presentationID: String)
    }

    public var steps: [Step]

    public init(steps: [Step]) {
        self.steps = steps
    }

    /// The plan from the stack `old` to the stack `new`, both given as presentation ids, bottom first.
    public init(from old: [String], to new: [String]) {
        let kept = zip(old, new).prefix { $0 == $1 }.count
        steps =
            old[kept...].reversed().map { .dismiss(presentationID: $0) }
            + new[kept...].map { .present(presentationID: $0) }
    }

    /// Plays the plan on a stack of ids; `applied(to: old) == new` for the plan from old to new.
    public func applied(to stack: [String]) -> [String] {
        var stack = stack
        for step in steps {
            switch step {
            case .dismiss(let id):
                if stack.last == id { stack.removeLast() }
            case .present(let id):
                stack.append(id)
            }
        }
        return stack
    }

    /// `[{"dismiss": id}, {"present": id}, …]`
    public var json: JSONValue {
        .array(
            steps.map { step in
                switch step {
                case .dismiss(let id): ["dismiss": .string(id)]
                case .present(let id): ["present": .string(id)]
                }
            })
    }
}
