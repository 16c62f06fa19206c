extension Session {
    /// Applies a command under the rules, or explains why the rules refuse it. Pure: the same
    /// session, command and context always give the same outcome.
    public func applying(_ command: Command, in context: CommandContext) throws(ModalError) -> CommandOutcome {
        var edit = SessionEdit(self, context)
        switch command {
        case .create(let options): return edit.create(options)
        case .present(let request): return try edit.present(request)
        case .update(let id, let request): return try edit.update(id, request)
        case .dismiss(let request): return try edit.dismiss(request)
        case .replaceStack(let request): return try edit.replaceStack(request)
        }
    }

    /// The rule that keeps any new presentation off the stack right now, if any: whatever its
    /// style, nothing goes over an alert-like modal, and nothing past the maximum depth.
    func blockingRule(maxDepth: Int) -> ModalError? {
        if let top, top.style.isAlertLike {
            return ModalError(
                .alertOnTop, "\(top.style.rawValue) \(top.id) is on top; nothing goes over it until it is dismissed",
                context: ["presentationId": .string(top.id)])
        }
        if stack.count >= maxDepth {
            return ModalError(
                .stackFull, "the stack already holds \(stack.count) presentations, the maximum depth",
                context: ["maxDepth": JSONValue(maxDepth)])
        }
        return nil
    }
}

/// One command's work on a copy of the session. Every rule is applied here, once.
private struct SessionEdit {
    var session: Session
    let original: Session
    let context: CommandContext
    var retired: [Presentation] = []

    init(_ session: Session, _ context: CommandContext) {
        self.session = session
        self.original = session
        self.context = context
    }

    var now: Timestamp { context.now }

    // MARK: Create

    mutating func create(_ options: SessionOptions) -> CommandOutcome {
        guard original.version == 0 else { return unchanged(.created) }
        if let ttlSeconds = options.ttlSeconds { session.ttlSeconds = ttlSeconds }
        return finish(.created)
    }

    // MARK: Present

    mutating func present(_ request: PresentRequest) throws(ModalError) -> CommandOutcome {
        try checkCatalog(request, at: "")
        if let existing = presentation(withKey: request.key) {
            guard existing.state == .presented, existing.id == session.top?.id,
                existing.destination == request.destination, existing.style == request.style
            else { throw alreadyPresented(existing) }
            var updated = existing
            updated.payload = request.payload
            updated.content = request.content
            return try replaceActive(updated)
        }
        var presentation = Presentation(
            id: context.makePresentationID(), destination: request.destination, key: request.key,
            content: request.content, payload: request.payload, locked: request.locked, requestedAt: now)
        let queueRule =
            session.queue.isEmpty
            ? nil
            : ModalError(
                .queueNotEmpty, "presentations are waiting (\(session.queue.count)); a new one waits behind them",
                context: ["queued": JSONValue(session.queue.count)])
        guard let rule = session.blockingRule(maxDepth: context.rules.maxDepth) ?? queueRule else {
            session.stack.append(presentation)
            return finish(.presented(presentation))
        }
        guard request.whenBlocked == .queue else { throw rule }
        guard session.queue.count < context.rules.queueSize else {
            throw ModalError(
                .queueFull, "the queue already holds \(session.queue.count) presentations, its limit (\(rule.detail))",
                context: ["queueSize": JSONValue(context.rules.queueSize)])
        }
        presentation.state = .queued
        presentation.presentedAt = nil
        session.queue.append(presentation)
        return finish(.queued(presentation, position: session.queue.count - 1))
    }

    // MARK: Update

    mutating func update(_ id: String, _ request: UpdateRequest) throws(ModalError) -> CommandOutcome {
        guard var presentation = session.activePresentation(id: id) else { throw .presentationNotFound(id) }
        if let payload = request.payload {
            try checkCatalog(destination: presentation.destination, style: presentation.style, payload: payload, at: "")
            presentation.payload = payload
        }
        if request.changesProgress {
            guard case .progress(var progress) = presentation.content else {
                let fields = [
                    ("message", request.message != nil), ("total", request.total != nil),
                    ("completed", request.completed != nil),
                ]
                throw .validation(
                    fields.filter(\.1).map {
                        .init(pointer: "/\($0.0)", message: "applies only to progress presentations")
                    })
            }
            progress.message = request.message ?? progress.message
            progress.total = request.total ?? progress.total
            progress.completed = request.completed ?? progress.completed
            guard progress.completed <= progress.total else {
                throw .validation([
                    .init(
                        pointer: request.completed != nil ? "/completed" : "/total",
                        message: "completed must be between 0 and total (\(JSONValue(progress.total).jsonText))")
                ])
            }
            presentation.content = .progress(progress)
        }
        return try replaceActive(presentation)
    }

    /// Puts a changed copy of an active presentation back where it was.
    private mutating func replaceActive(_ presentation: Presentation) throws(ModalError) -> CommandOutcome {
        guard presentation != session.activePresentation(id: presentation.id) else {
            return unchanged(.updated(presentation))
        }
        if let index = session.stack.firstIndex(where: { $0.id == presentation.id }) {
            session.stack[index] = presentation
        } else if let index = session.queue.firstIndex(where: { $0.id == presentation.id }) {
            session.queue[index] = presentation
        }
        return finish(.updated(presentation))
    }

    // MARK: Dismiss

    mutating func dismiss(_ request: DismissRequest) throws(ModalError) -> CommandOutcome {
        if case .presentation(let id) = request.target, let index = session.queue.firstIndex(where: { $0.id == id }) {
            let cancelled = session.queue[index]
            try checkUnlocked([cancelled], force: request.force)
            session.queue.remove(at: index)
            let retiredEntry = try retire(cancelled, answer: request.result)
            return finish(.dismissed([retiredEntry]))
        }
        let firstRemoved = try firstIndexRemoved(by: request.target)
        let removed = Array(session.stack[firstRemoved...].reversed())
        try checkUnlocked(removed, force: request.force)
        let answered: String? =
            if case .presentation(let id) = request.target { id } else { removed.first?.id }
        var dismissed: [Presentation] = []
        for presentation in removed {
            dismissed.append(try retire(presentation, answer: presentation.id == answered ? request.result : nil))
        }
        session.stack.removeSubrange(firstRemoved...)
        return finish(.dismissed(dismissed))
    }

    /// The lowest stack index a dismiss removes; everything from there up goes.
    private func firstIndexRemoved(by target: DismissTarget) throws(ModalError) -> Int {
        let stack = session.stack
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
            guard let position = session.position(ofPresentation: id) else { throw .presentationNotFound(id) }
            guard position < stack.count - 1 else {
                throw ModalError(.nothingToDismiss, "presentation \(id) is already the top")
            }
            return position + 1
        case .presentation(let id):
            guard let position = session.position(ofPresentation: id) else { throw .presentationNotFound(id) }
            return position
        }
    }

    private func checkUnlocked(_ removed: [Presentation], force: Bool) throws(ModalError) {
        guard !force, let locked = removed.first(where: \.locked) else { return }
        throw ModalError(
            .locked, "presentation \(locked.id) (\(locked.destination)) is locked; dismiss it with force",
            context: ["presentationId": .string(locked.id)])
    }

    /// The presentation in its final state, with the user's answer. An alert or confirmation
    /// dialog's answer must name one of its buttons; without one it records its cancel button.
    private mutating func retire(_ presentation: Presentation, answer: JSONValue?) throws(ModalError) -> Presentation {
        var retiredEntry = presentation
        let buttons = presentation.content.buttons
        if let answer, !buttons.isEmpty {
            let buttonID = answer["buttonId"]?.stringValue
            guard let buttonID, buttons.contains(where: { $0.id == buttonID }) else {
                let ids = buttons.map(\.id).joined(separator: ", ")
                throw .validation([
                    .init(pointer: "/result/buttonId", message: "must be one of the buttons' ids: \(ids)")
                ])
            }
        }
        let cancelAnswer = buttons.first { $0.role == .cancel }.map { ["buttonId": .string($0.id)] as JSONValue }
        retiredEntry.result = answer ?? cancelAnswer
        retiredEntry.state = .dismissed
        retiredEntry.dismissedAt = now
        retired.append(retiredEntry)
        return retiredEntry
    }

    // MARK: Replace

    /// Replaces the stack in one step. Entries that match the old stack from the bottom up (same
    /// key, destination and style) keep their identity, as SwiftUI keeps a view whose id is unchanged.
    mutating func replaceStack(_ request: ReplaceStackRequest) throws(ModalError) -> CommandOutcome {
        let requests = request.stack
        guard requests.count <= context.rules.maxDepth else {
            throw ModalError(
                .stackFull,
                "the new stack has \(requests.count) presentations; the maximum depth is \(context.rules.maxDepth)",
                context: ["maxDepth": JSONValue(context.rules.maxDepth)])
        }
        for (index, entry) in requests.enumerated() {
            try checkCatalog(entry, at: "/stack/\(index)")
            if let queued = session.queue.first(where: { $0.key == entry.key }) { throw alreadyPresented(queued) }
        }
        let old = session.stack
        var newStack: [Presentation] = []
        newStack.reserveCapacity(requests.count)
        var keepsIdentity = true
        for (index, entry) in requests.enumerated() {
            keepsIdentity =
                keepsIdentity && index < old.count && old[index].key == entry.key
                && old[index].destination == entry.destination && old[index].style == entry.style
            if keepsIdentity {
                var kept = old[index]
                kept.payload = entry.payload
                kept.content = entry.content
                newStack.append(kept)
            } else {
                newStack.append(
                    Presentation(
                        id: context.makePresentationID(), destination: entry.destination, key: entry.key,
                        content: entry.content, payload: entry.payload, locked: entry.locked, requestedAt: now))
            }
        }
        let keptCount = zip(old, newStack).prefix { $0.id == $1.id }.count
        let removed = Array(old[keptCount...].reversed())
        try checkUnlocked(removed, force: request.force)
        guard newStack != old || session.version == 0 else { return unchanged(.replaced) }
        for presentation in removed {
            _ = try retire(presentation, answer: nil)
        }
        session.stack = newStack
        return finish(.replaced)
    }

    // MARK: Shared

    private func presentation(withKey key: String) -> Presentation? {
        session.stack.first { $0.key == key } ?? session.queue.first { $0.key == key }
    }

    private func alreadyPresented(_ existing: Presentation) -> ModalError {
        let position =
            session.position(ofPresentation: existing.id) ?? session.queue.firstIndex { $0.id == existing.id } ?? 0
        let place =
            existing.state == .queued
            ? "queued at position \(position)" : "presented at position \(position) (0 is the bottom)"
        return ModalError(
            .alreadyPresented, "key \"\(existing.key)\" is already \(place) as \(existing.id)",
            context: [
                "presentationId": .string(existing.id), "state": .string(existing.state.rawValue),
                "position": JSONValue(position),
            ])
    }

    private func checkCatalog(_ request: PresentRequest, at pointer: String) throws(ModalError) {
        try checkCatalog(destination: request.destination, style: request.style, payload: request.payload, at: pointer)
    }

    private func checkCatalog(destination: String, style: ModalStyle, payload: JSONObject, at pointer: String)
        throws(ModalError)
    {
        guard let catalog = context.catalog else { return }
        let errors = catalog.check(destination: destination, style: style, payload: payload, at: pointer)
        guard errors.isEmpty else { throw .validation(errors) }
    }

    func unchanged(_ effect: CommandOutcome.Effect) -> CommandOutcome {
        CommandOutcome(
            session: original, effect: effect, promoted: [], retired: [], change: nil,
            transition: TransitionPlan(steps: []))
    }

    /// Promotes what the rules now allow from the queue, in order, then stamps the next version.
    mutating func finish(_ effect: CommandOutcome.Effect) -> CommandOutcome {
        let stackBeforePromotion = session.stack.map(\.id)
        var promoted: [Presentation] = []
        while var next = session.queue.first, session.blockingRule(maxDepth: context.rules.maxDepth) == nil {
            session.queue.removeFirst()
            next.state = .presented
            next.presentedAt = now
            session.stack.append(next)
            promoted.append(next)
        }
        session.version += 1
        session.updatedAt = now
        if original.version == 0 { session.createdAt = now }
        let change = SessionChange(
            sessionID: session.id, version: session.version, at: now,
            events: events(effect, stack: stackBeforePromotion, promoted: promoted),
            stackIDs: session.stack.map(\.id))
        let transition = TransitionPlan(from: original.stack.map(\.id), to: session.stack.map(\.id))
        return CommandOutcome(
            session: session, effect: effect, promoted: promoted, retired: retired, change: change,
            transition: transition)
    }

    /// What the change did, in order: the session's creation, what left, what the command did
    /// (`stack` is the stack it left, before promotions), then what was promoted.
    private func events(_ effect: CommandOutcome.Effect, stack: [String], promoted: [Presentation]) -> [SessionEvent] {
        var events: [SessionEvent] = original.version == 0 ? [SessionEvent(.sessionCreated)] : []
        events += retired.map { SessionEvent(.dismissed, presentation: $0) }
        switch effect {
        case .presented(let presentation): events.append(SessionEvent(.presented, presentation: presentation))
        case .queued(let presentation, let position):
            events.append(SessionEvent(.queued, presentation: presentation, details: ["position": JSONValue(position)]))
        case .updated(let presentation): events.append(SessionEvent(.updated, presentation: presentation))
        case .replaced: events.append(SessionEvent(.replaced, details: ["stack": .array(stack.map { .string($0) })]))
        case .dismissed, .created: break
        }
        events += promoted.map { SessionEvent(.promoted, presentation: $0) }
        return events
    }
}
