extension Session {
    /// Applies a command under the rules, or explains why the rules refuse it. Pure: the same
    /// session, command and context always give the same outcome.
    public func applying(_ command: Command, in context: CommandContext) throws(ModalError) -> CommandOutcome {
        var edit = SessionEdit(self, context)
        let effect: CommandOutcome.Effect
        switch command {
        case .create(let options): effect = try edit.create(options)
        case .present(let request): effect = try edit.present(request)
        case .update(let id, let request): effect = try edit.update(id, request)
        case .dismiss(let request): effect = try edit.dismiss(request)
        case .replaceStack(let request):
            try edit.navigate(to: request.navigation)
            edit.mark(.replaced, details: ["stack": .array(edit.session.stack.map { .string($0.id) })])
            effect = .replaced
        case .push(let request): effect = try edit.push(request)
        case .pop(let request): effect = try edit.pop(request)
        case .navigate(let request):
            try edit.navigate(to: request)
            edit.mark(.navigated)
            effect = .navigated
        case .openLink(let link):
            try edit.open(link)
            edit.mark(.navigated, details: ["url": .string(link.url), "route": .string(link.route.url)])
            effect = .navigated
        }
        return edit.finish(effect)
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

/// One command's work on a copy of the session. Every rule is applied here, once. Each change
/// to the copy is recorded as the event that says it, as it happens, so that the events of a
/// change, applied in order to the session before it, give the session after it.
private struct SessionEdit {
    var session: Session
    let original: Session
    let context: CommandContext
    var dismissed: [Presentation] = []
    /// What the command did, in order; the creation and the promotions are added by `finish`.
    var events: [SessionEvent] = []

    init(_ session: Session, _ context: CommandContext) {
        self.session = session
        self.original = session
        self.context = context
    }

    var now: Timestamp { context.now }

    private mutating func record(
        _ kind: SessionEvent.Kind, presentation: Presentation? = nil, entry: PathEntry? = nil,
        level: NavigationLevel? = nil, details: JSONObject = [:]
    ) {
        events.append(SessionEvent(kind, presentation: presentation, entry: entry, level: level, details: details))
    }

    /// Ends a whole-navigation change with an event naming it, if it changed anything.
    mutating func mark(_ kind: SessionEvent.Kind, details: JSONObject = [:]) {
        guard !events.isEmpty || original.version == 0 else { return }
        record(kind, details: details)
    }

    // MARK: Create

    /// A session's ttl is set when it is created: asking an existing one for another is refused,
    /// not ignored (the same ttl, as a retried create sends, is fine).
    mutating func create(_ options: SessionOptions) throws(ModalError) -> CommandOutcome.Effect {
        guard let ttlSeconds = options.ttlSeconds else { return .created }
        if original.version == 0 {
            session.ttlSeconds = ttlSeconds
        } else if ttlSeconds != session.ttlSeconds {
            throw ModalError(
                .sessionExists,
                "session \(session.id) exists with ttl \(session.ttlSeconds); a ttl is given only when a session is created",
                context: ["ttl": JSONValue(session.ttlSeconds)])
        }
        return .created
    }

    // MARK: Present

    mutating func present(_ request: PresentRequest) throws(ModalError) -> CommandOutcome.Effect {
        try checkCatalog(request, at: "")
        if let existing = presentation(withKey: request.key) {
            guard existing.state == .presented, existing.id == session.top?.id,
                existing.destination == request.destination, existing.style == request.style
            else { throw alreadyPresented(existing) }
            var updated = existing
            updated.payload = request.payload
            updated.content = request.content
            updated.locked = request.locked ?? existing.locked
            return replaceActive(updated)
        }
        var presentation = Presentation(
            id: context.makeID(), destination: request.destination, key: request.key, content: request.content,
            payload: request.payload, locked: request.locked ?? false, requestedAt: now)
        let queueRule =
            session.queue.isEmpty
            ? nil
            : ModalError(
                .queueNotEmpty, "presentations are waiting (\(session.queue.count)); a new one waits behind them",
                context: ["queued": JSONValue(session.queue.count)])
        guard let rule = session.blockingRule(maxDepth: context.rules.maxDepth) ?? queueRule else {
            session.stack.append(presentation)
            record(.presented, presentation: presentation)
            return .presented(presentation)
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
        let position = session.queue.count - 1
        record(.queued, presentation: presentation, details: ["position": JSONValue(position)])
        return .queued(presentation, position: position)
    }

    // MARK: Update

    mutating func update(_ id: String, _ request: UpdateRequest) throws(ModalError) -> CommandOutcome.Effect {
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
        return replaceActive(presentation)
    }

    /// Puts a changed copy of an active presentation back where it was.
    private mutating func replaceActive(_ presentation: Presentation) -> CommandOutcome.Effect {
        guard presentation != session.activePresentation(id: presentation.id) else { return .updated(presentation) }
        if let index = session.stack.firstIndex(where: { $0.id == presentation.id }) {
            session.stack[index] = presentation
        } else if let index = session.queue.firstIndex(where: { $0.id == presentation.id }) {
            session.queue[index] = presentation
        }
        record(.updated, presentation: presentation)
        return .updated(presentation)
    }

    // MARK: Dismiss

    mutating func dismiss(_ request: DismissRequest) throws(ModalError) -> CommandOutcome.Effect {
        if case .presentation(let id) = request.target, let index = session.queue.firstIndex(where: { $0.id == id }) {
            let cancelled = session.queue[index]
            try checkUnlocked([cancelled], force: request.force)
            let dismissedEntry = try dismiss(cancelled, answer: request.result)
            session.queue.remove(at: index)
            return .dismissed([dismissedEntry])
        }
        let firstRemoved = try firstIndexRemoved(by: request.target)
        let removed = Array(session.stack[firstRemoved...].reversed())
        try checkUnlocked(removed, force: request.force)
        let answered: String? =
            if case .presentation(let id) = request.target { id } else { removed.first?.id }
        var dismissedNow: [Presentation] = []
        for presentation in removed {
            dismissedNow.append(try dismiss(presentation, answer: presentation.id == answered ? request.result : nil))
        }
        session.stack.removeSubrange(firstRemoved...)
        return .dismissed(dismissedNow)
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
            if let queued = session.queue.firstIndex(where: { $0.id == id }) {
                throw ModalError(
                    .presentationQueued,
                    "presentation \(id) is queued at position \(queued); a dismiss keeps only a presentation on the stack",
                    context: [
                        "presentationId": .string(id), "state": .string(Presentation.State.queued.rawValue),
                        "position": JSONValue(queued),
                    ])
            }
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

    /// The presentation in its final state, with the user's answer, recorded as dismissed (with
    /// the path it had: its screens go with it). An alert or confirmation dialog's answer must
    /// name one of its buttons; without one it records its cancel button.
    private mutating func dismiss(_ presentation: Presentation, answer: JSONValue?) throws(ModalError) -> Presentation {
        var dismissedEntry = presentation
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
        dismissedEntry.result = answer ?? cancelAnswer
        dismissedEntry.state = .dismissed
        dismissedEntry.dismissedAt = now
        dismissed.append(dismissedEntry)
        record(.dismissed, presentation: dismissedEntry)
        return dismissedEntry
    }

    // MARK: Push and pop

    mutating func push(_ request: PushRequest) throws(ModalError) -> CommandOutcome.Effect {
        let level = try level(named: request.level)
        try checkCatalog(destination: request.destination, style: nil, payload: request.payload, at: "")
        var path = session.path(of: level)
        if let index = path.firstIndex(where: { $0.key == request.key }) {
            // Pushing the last entry's key again updates it, as `.sheet(item:)` does for modals.
            guard index == path.count - 1, path[index].destination == request.destination else {
                throw ModalError(
                    .alreadyPushed,
                    "key \"\(request.key)\" is already at position \(index) of \(level.pathName) as \(path[index].id)",
                    context: [
                        "entryId": .string(path[index].id), "level": .string(level.name), "position": JSONValue(index),
                    ])
            }
            guard path[index].payload != request.payload else { return .entryUpdated(path[index], level: level) }
            path[index].payload = request.payload
            session.setPath(path, of: level)
            record(.entryUpdated, entry: path[index], level: level)
            return .entryUpdated(path[index], level: level)
        }
        try checkPathDepth(path.count + 1, at: "")
        let entry = PathEntry(
            id: context.makeID(), destination: request.destination, key: request.key, payload: request.payload,
            pushedAt: now)
        path.append(entry)
        session.setPath(path, of: level)
        record(.pushed, entry: entry, level: level)
        return .pushed(entry, level: level)
    }

    mutating func pop(_ request: PopRequest) throws(ModalError) -> CommandOutcome.Effect {
        let level = try level(named: request.level)
        let path = session.path(of: level)
        let levelContext: JSONObject = ["level": .string(level.name)]
        guard !path.isEmpty else {
            throw ModalError(.nothingToPop, "\(level.pathName) is empty", context: levelContext)
        }
        let firstPopped: Int
        switch request.target {
        case .top: firstPopped = path.count - 1
        case .all: firstPopped = 0
        case .count(let count):
            guard count <= path.count else {
                throw ModalError(
                    .nothingToPop, "asked to pop \(count) entries but \(level.pathName) holds \(path.count)",
                    context: levelContext)
            }
            firstPopped = path.count - count
        case .above(let id):
            guard let index = path.firstIndex(where: { $0.id == id }) else {
                throw ModalError(
                    .entryNotFound, "\(level.pathName) has no entry \(id)",
                    context: ["entryId": .string(id), "level": .string(level.name)])
            }
            guard index < path.count - 1 else {
                throw ModalError(
                    .nothingToPop, "entry \(id) is already the last of \(level.pathName)", context: levelContext)
            }
            firstPopped = index + 1
        }
        let popped = Array(path[firstPopped...].reversed())
        for entry in popped {
            let result = entry.id == popped.first?.id ? request.result : nil
            record(.popped, entry: entry, level: level, details: result.map { ["result": $0] } ?? [:])
        }
        session.setPath(Array(path[..<firstPopped]), of: level)
        return .popped(popped, level: level)
    }

    /// The level a push or pop acts on: the one named, else the top-most container (beneath an
    /// alert-like top), else the root.
    private func level(named name: NavigationLevel?) throws(ModalError) -> NavigationLevel {
        guard let name else { return session.topLevel }
        guard case .presentation(let id) = name else { return .root }
        let reason: String
        if let presentation = session.stack.first(where: { $0.id == id }) {
            guard presentation.style.isAlertLike else { return name }
            reason = "presentation \(id) is \(presentation.style.rawValue): alert-like presentations have no path"
        } else if session.queue.contains(where: { $0.id == id }) {
            reason = "presentation \(id) is queued: it has a path once it is presented"
        } else {
            reason = "the stack has no presentation \(id): a level is root or a container presentation on the stack"
        }
        throw ModalError(.levelNotFound, reason, context: ["level": .string(id)])
    }

    private func checkPathDepth(_ count: Int, at pointer: String) throws(ModalError) {
        guard count > context.rules.maxPathDepth else { return }
        throw ModalError(
            .pathFull,
            "\(pointer.isEmpty ? "the path" : pointer) would hold \(count) entries; the maximum path depth is \(context.rules.maxPathDepth)",
            context: ["maxPathDepth": JSONValue(context.rules.maxPathDepth)])
    }

    // MARK: Navigate

    /// Goes to the navigation the request describes in one change. Modals that match the stack
    /// from the bottom up (same key, destination and style) keep their identity, and within each
    /// level kept, so do the entries that match its path from the start (same key and
    /// destination), as SwiftUI keeps a view whose id is unchanged. It is played in the order of
    /// the transition plan: what leaves, top-down; then the levels that stay; then what is new,
    /// bottom-up.
    mutating func navigate(to request: NavigationRequest) throws(ModalError) {
        try checkNavigation(request)
        let old = session.stack
        var target: [Presentation] = []
        var keepsIdentity = true
        for (index, modal) in request.stack.enumerated() {
            let wanted = modal.present
            keepsIdentity =
                keepsIdentity && index < old.count && old[index].key == wanted.key
                && old[index].destination == wanted.destination && old[index].style == wanted.style
            if keepsIdentity {
                var kept = old[index]
                kept.payload = wanted.payload
                kept.content = wanted.content
                kept.locked = wanted.locked ?? kept.locked
                kept.path = modal.path.map { reconcile(kept.path, with: $0) } ?? kept.path
                target.append(kept)
            } else {
                target.append(
                    Presentation(
                        id: context.makeID(), destination: wanted.destination, key: wanted.key,
                        content: wanted.content, payload: wanted.payload, locked: wanted.locked ?? false,
                        requestedAt: now,
                        path: reconcile([], with: modal.path ?? [])))
            }
        }
        let targetRoot = request.path.map { reconcile(session.path, with: $0) } ?? session.path
        let keptCount = zip(old, target).prefix { $0.id == $1.id }.count
        try checkUnlocked(old[keptCount...].reversed(), force: request.force)

        for presentation in old[keptCount...].reversed() {
            _ = try dismiss(presentation, answer: nil)
        }
        session.stack.removeSubrange(keptCount...)
        let staying = session.levels
        func targetPath(of level: NavigationLevel) -> [PathEntry] {
            level == .root ? targetRoot : target.first { NavigationLevel.presentation(id: $0.id) == level }?.path ?? []
        }
        for level in staying.reversed() {
            popAll(of: level, notKeptIn: targetPath(of: level))
        }
        reconcileEntries(of: .root, with: targetRoot)
        for index in 0..<keptCount {
            var current = session.stack[index]
            let wanted = target[index]
            if current.payload != wanted.payload || current.content != wanted.content || current.locked != wanted.locked
            {
                current.payload = wanted.payload
                current.content = wanted.content
                current.locked = wanted.locked
                session.stack[index] = current
                record(.updated, presentation: current)
            }
            if !wanted.style.isAlertLike {
                reconcileEntries(of: .presentation(id: wanted.id), with: wanted.path)
            }
        }
        for presentation in target[keptCount...] {
            var shown = presentation
            shown.path = []
            session.stack.append(shown)
            record(.presented, presentation: shown)
            reconcileEntries(of: .presentation(id: shown.id), with: presentation.path)
        }
    }

    /// Refuses a navigation the rules do not allow, before anything is decided.
    private func checkNavigation(_ request: NavigationRequest) throws(ModalError) {
        guard request.stack.count <= context.rules.maxDepth else {
            throw ModalError(
                .stackFull,
                "the new stack has \(request.stack.count) presentations; the maximum depth is \(context.rules.maxDepth)",
                context: ["maxDepth": JSONValue(context.rules.maxDepth)])
        }
        if let path = request.path {
            try checkPathDepth(path.count, at: "/path")
            for (index, entry) in path.enumerated() {
                try checkCatalog(
                    destination: entry.destination, style: nil, payload: entry.payload, at: "/path/\(index)")
            }
        }
        for (index, modal) in request.stack.enumerated() {
            let pointer = "/stack/\(index)"
            try checkCatalog(modal.present, at: pointer)
            if let queued = session.queue.first(where: { $0.key == modal.present.key }) {
                throw alreadyPresented(queued)
            }
            guard let path = modal.path else { continue }
            try checkPathDepth(path.count, at: pointer + "/path")
            for (entryIndex, entry) in path.enumerated() {
                try checkCatalog(
                    destination: entry.destination, style: nil, payload: entry.payload,
                    at: "\(pointer)/path/\(entryIndex)")
            }
        }
    }

    /// The path `requests` ask for, given the path a level has: entries matching it from the
    /// start (same key and destination) keep their id and push time and take the new payload.
    private func reconcile(_ path: [PathEntry], with requests: [PushRequest]) -> [PathEntry] {
        var keepsIdentity = true
        return requests.enumerated().map { index, request in
            keepsIdentity =
                keepsIdentity && index < path.count && path[index].key == request.key
                && path[index].destination == request.destination
            guard !keepsIdentity else {
                var kept = path[index]
                kept.payload = request.payload
                return kept
            }
            return PathEntry(
                id: context.makeID(), destination: request.destination, key: request.key, payload: request.payload,
                pushedAt: now)
        }
    }

    /// Pops, top-most first, the entries of a level that `target` does not keep.
    private mutating func popAll(of level: NavigationLevel, notKeptIn target: [PathEntry]) {
        let path = session.path(of: level)
        let kept = zip(path, target).prefix { $0.id == $1.id }.count
        for entry in path[kept...].reversed() {
            record(.popped, entry: entry, level: level)
        }
        session.setPath(Array(path[..<kept]), of: level)
    }

    /// Brings a level's path, whose entries `target` starts with, to `target`: kept entries take
    /// their new payloads, then the new ones are pushed.
    private mutating func reconcileEntries(of level: NavigationLevel, with target: [PathEntry]) {
        let path = session.path(of: level)
        for (current, wanted) in zip(path, target) where current != wanted {
            record(.entryUpdated, entry: wanted, level: level)
        }
        for entry in target[path.count...] {
            record(.pushed, entry: entry, level: level)
        }
        session.setPath(target, of: level)
    }

    // MARK: Links

    /// Applies what a deep link resolved to, on the session as it is now.
    mutating func open(_ link: ResolvedLink) throws(ModalError) {
        switch link.action {
        case .navigate(let request):
            try navigate(to: request)
        case .push(let request, clear: false):
            _ = try push(request)
        case .push(let request, clear: true):
            try navigate(to: NavigationRequest(path: [request], stack: []))
        case .present(let request, clear: false):
            _ = try present(request)
        case .present(let request, clear: true):
            try navigate(to: NavigationRequest(path: [], stack: [.init(request, path: [])]))
        case .replacePath(let entries):
            // Everything stays but the top level's path.
            var request = NavigationRequest(
                path: nil, stack: session.stack.map { .init(PresentRequest(keeping: $0), path: nil) })
            switch session.topLevel {
            case .root: request.path = entries
            case .presentation(let id):
                if let index = session.stack.firstIndex(where: { $0.id == id }) { request.stack[index].path = entries }
            }
            try navigate(to: request)
        }
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

    /// With a catalog, the destination, its style (nil: a push) and its payload as it declares them.
    private func checkCatalog(destination: String, style: ModalStyle?, payload: JSONObject, at pointer: String)
        throws(ModalError)
    {
        guard let catalog = context.catalog else { return }
        let errors = catalog.check(destination: destination, style: style, payload: payload, at: pointer)
        guard errors.isEmpty else { throw .validation(errors) }
    }

    /// Promotes what the rules now allow from the queue, in order, then stamps the next version;
    /// a command that recorded nothing changed nothing, and the session keeps its version.
    mutating func finish(_ effect: CommandOutcome.Effect) -> CommandOutcome {
        guard !events.isEmpty || original.version == 0 else {
            return CommandOutcome(
                session: original, effect: effect, promoted: [], dismissed: [], change: nil,
                transition: TransitionPlan(steps: []))
        }
        var promoted: [Presentation] = []
        while var next = session.queue.first, session.blockingRule(maxDepth: context.rules.maxDepth) == nil {
            session.queue.removeFirst()
            next.state = .presented
            next.presentedAt = now
            session.stack.append(next)
            promoted.append(next)
            record(.promoted, presentation: next)
        }
        if original.version == 0 {
            session.createdAt = now
            events.insert(SessionEvent(.sessionCreated, details: ["ttl": JSONValue(session.ttlSeconds)]), at: 0)
        }
        session.version += 1
        session.updatedAt = now
        let shape = NavigationShape(session)
        let change = SessionChange(
            sessionID: session.id, version: session.version, at: now, events: events, shape: shape)
        let transition = TransitionPlan(from: NavigationShape(original), to: shape)
        return CommandOutcome(
            session: session, effect: effect, promoted: promoted, dismissed: dismissed, change: change,
            transition: transition)
    }
}

extension PresentRequest {
    /// The request that presents `presentation` as it is: what a navigation that keeps it asks for.
    init(keeping presentation: Presentation) {
        self.init(
            destination: presentation.destination, content: presentation.content, payload: presentation.payload,
            key: presentation.key, locked: presentation.locked)
    }
}
