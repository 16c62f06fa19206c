/// The ordered steps a client animates to go from one navigation to another, in the order that
/// avoids the races SwiftUI apps meet (a push into a sheet being dismissed, layers closing one by
/// one): the modals not kept are dismissed top-down (their paths go with them), the entries not
/// kept are popped from the levels that stay, top-most level first, then new entries are pushed
/// onto the levels that stay, root first, and the new modals are presented bottom-up, each
/// followed by the pushes of its path. Kept are the modals along the common bottom of the stack
/// and, in each level that stays, the entries along the common start of its path.
public struct TransitionPlan: Sendable, Hashable {
    public enum Step: Sendable, Hashable {
        case dismiss(presentationID: String)
        case present(presentationID: String)
        case pop(entryID: String, level: NavigationLevel)
        case push(entryID: String, level: NavigationLevel)
    }

    public var steps: [Step]

    public init(steps: [Step]) {
        self.steps = steps
    }

    /// The plan from the navigation `old` to the navigation `new`.
    public init(from old: NavigationShape, to new: NavigationShape) {
        let keptModals = Self.commonPrefix(old.stack.map(\.presentationID), new.stackIDs)
        // The levels that stay, root first: the root and the kept modals that have a path.
        let staying: [(level: NavigationLevel, old: [String], new: [String])] =
            [(.root, old.path, new.path)]
            + (0..<keptModals).compactMap { index in
                guard let oldPath = old.stack[index].path else { return nil }
                let id = old.stack[index].presentationID
                return (.presentation(id: id), oldPath, new.stack[index].path ?? [])
            }
        var steps: [Step] = old.stack[keptModals...].reversed().map { .dismiss(presentationID: $0.presentationID) }
        for level in staying.reversed() {
            let kept = Self.commonPrefix(level.old, level.new)
            steps += level.old[kept...].reversed().map { .pop(entryID: $0, level: level.level) }
        }
        for level in staying {
            let kept = Self.commonPrefix(level.old, level.new)
            steps += level.new[kept...].map { .push(entryID: $0, level: level.level) }
        }
        for modal in new.stack[keptModals...] {
            steps.append(.present(presentationID: modal.presentationID))
            let level = NavigationLevel.presentation(id: modal.presentationID)
            steps += (modal.path ?? []).map { .push(entryID: $0, level: level) }
        }
        self.steps = steps
    }

    private static func commonPrefix(_ old: [String], _ new: [String]) -> Int {
        zip(old, new).prefix { $0 == $1 }.count
    }

    /// Plays the plan on a navigation; `applied(to: old)` is `new` for the plan from old to new,
    /// but that a presented level comes out with a path (empty, or its pushes) whatever its
    /// style: steps do not say which presentations are alert-like.
    public func applied(to shape: NavigationShape) -> NavigationShape {
        var shape = shape
        for step in steps {
            switch step {
            case .dismiss(let id):
                if shape.stack.last?.presentationID == id { shape.stack.removeLast() }
            case .present(let id):
                shape.stack.append(.init(presentationID: id, path: []))
            case .pop(let id, .root):
                if shape.path.last == id { shape.path.removeLast() }
            case .push(let id, .root):
                shape.path.append(id)
            case .pop(let id, .presentation(let level)):
                if let index = shape.stack.firstIndex(where: { $0.presentationID == level }),
                    shape.stack[index].path?.last == id
                {
                    shape.stack[index].path?.removeLast()
                }
            case .push(let id, .presentation(let level)):
                if let index = shape.stack.firstIndex(where: { $0.presentationID == level }) {
                    shape.stack[index].path = (shape.stack[index].path ?? []) + [id]
                }
            }
        }
        return shape
    }

    /// `[{"dismiss": id}, {"pop": id, "level": l}, {"push": id, "level": l}, {"present": id}, …]`
    public var json: JSONValue {
        .array(
            steps.map { step in
                switch step {
                case .dismiss(let id): ["dismiss": .string(id)]
                case .present(let id): ["present": .string(id)]
                case .pop(let id, let level): ["pop": .string(id), "level": .string(level.name)]
                case .push(let id, let level): ["push": .string(id), "level": .string(level.name)]
                }
            })
    }
}
