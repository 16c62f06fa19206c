extension Session {
    /// The session's first version: created, with an empty stack.
    public static func created(id: String, at now: Timestamp) -> Session {
        Session(id: id, version: 1, createdAt: now, updatedAt: now, stack: [])
    }

    /// Applies a command under the rules, or explains why the rules refuse it. Pure: the same
    /// session, command and context always give the same outcome.
    public func applying(_ command: Command, in context: CommandContext) throws(ModalError) -> CommandOutcome {
        switch command {
        case .present(let request): try presenting(request, in: context)
        case .dismiss(let target): try dismissing(target, in: context)
        case .replaceStack(let request): try replacingStack(with: request.stack, in: context)
        }
    }

    private func presenting(_ request: PresentRequest, in context: CommandContext) throws(ModalError) -> CommandOutcome {
        if let position = stack.firstIndex(where: { $0.key == request.key }) {
            let existing = stack[position]
            let isTop = position == stack.count - 1
            guard isTop, existing.destination == request.destination, existing.style == request.style else {
                throw alreadyPresented(existing, at: position)
            }
            guard existing.payload != request.payload else {
                return CommandOutcome(session: self, effect: .updated(existing), changed: false)
            }
            var next = self
            next.stack[position].payload = request.payload
            return CommandOutcome(session: next.committed(at: context.now), effect: .updated(next.stack[position]), changed: true)
        }
        guard stack.count < context.rules.maxDepth else {
            throw ModalError(
                .stackFull, "the stack already holds \(stack.count) presentations, the maximum depth",
                context: ["maxDepth": JSONValue(context.rules.maxDepth)])
        }
        let presentation = makePresentation(request, in: context)
        var next = self
        next.stack.append(presentation)
        return CommandOutcome(session: next.committed(at: context.now), effect: .presented(presentation), changed: true)
    }

    private func dismissing(_ target: DismissTarget, in context: CommandContext) throws(ModalError) -> CommandOutcome {
        let firstRemoved = try firstIndexRemoved(by: target)
        var next = self
        let removed = Array(next.stack[firstRemoved...].reversed())
        next.stack.removeSubrange(firstRemoved...)
        return CommandOutcome(session: next.committed(at: context.now), effect: .dismissed(removed), changed: true)
    }

    /// The lowest stack index a dismiss removes; everything from there up goes.
    private func firstIndexRemoved(by target: DismissTarget) throws(ModalError) -> Int {
        switch target {
        case .top, .all:
            guard !stack.isEmpty else { throw ModalError(.nothingToDismiss, "the stack is empty") }
            return target == .all ? 0 : stack.count - 1
        case .count(let count):
            guard count <= stack.count else {
                throw ModalError(
                    .nothingToDismiss, "asked to dismiss \(count) presentations but the stack holds \(stack.count)",
                    context: ["depth": JSONValue(stack.count)])
            }
            return stack.count - count
        case .above(let id):
            guard let position = position(ofPresentation: id) else { throw .presentationNotFound(id) }
            guard position < stack.count - 1 else {
                throw ModalError(.nothingToDismiss, "presentation \(id) is already the top")
            }
            return position + 1
        case .presentation(let id):
            guard let position = position(ofPresentation: id) else { throw .presentationNotFound(id) }
            return position
        }
    }

    /// Replaces the stack in one step. Entries that match the old stack from the bottom up (same
    /// key, destination and style) keep their identity, as SwiftUI keeps a view whose id is unchanged.
    private func replacingStack(with requests: [PresentRequest], in context: CommandContext) throws(ModalError) -> CommandOutcome {
        guard requests.count <= context.rules.maxDepth else {
            throw ModalError(
                .stackFull, "the new stack has \(requests.count) presentations; the maximum depth is \(context.rules.maxDepth)",
                context: ["maxDepth": JSONValue(context.rules.maxDepth)])
        }
        var newStack: [Presentation] = []
        newStack.reserveCapacity(requests.count)
        var keepsIdentity = true
        for (index, request) in requests.enumerated() {
            if keepsIdentity, index < stack.count, stack[index].key == request.key,
                stack[index].destination == request.destination, stack[index].style == request.style
            {
                var kept = stack[index]
                kept.payload = request.payload
                newStack.append(kept)
            } else {
                keepsIdentity = false
                newStack.append(makePresentation(request, in: context))
            }
        }
        guard newStack != stack || version == 0 else {
            return CommandOutcome(session: self, effect: .replaced, changed: false)
        }
        var next = self
        next.stack = newStack
        return CommandOutcome(session: next.committed(at: context.now), effect: .replaced, changed: true)
    }

    private func makePresentation(_ request: PresentRequest, in context: CommandContext) -> Presentation {
        Presentation(
            id: context.makePresentationID(), destination: request.destination, style: request.style,
            key: request.key, payload: request.payload, presentedAt: context.now)
    }

    /// The next version of this session, stamped with the time of the change.
    private func committed(at now: Timestamp) -> Session {
        var next = self
        next.version += 1
        next.updatedAt = now
        if version == 0 { next.createdAt = now }
        return next
    }

    private func alreadyPresented(_ existing: Presentation, at position: Int) -> ModalError {
        ModalError(
            .alreadyPresented,
            "key \"\(existing.key)\" is already presented at position \(position) (0 is the bottom) as \(existing.id)",
            context: ["presentationId": .string(existing.id), "position": JSONValue(position)])
    }
}
