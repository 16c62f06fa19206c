import Foundation

extension Session {
    /// The state before a session's first change (version 0, nothing shown): its first change, which
    /// has `sessionCreated`, applies to it, and so does every later one in turn.
    public static func unwritten(_ id: String) -> Session {
        let origin = Date(timeIntervalSince1970: 0)
        return Session(
            id: id, version: 0, createdAt: origin, updatedAt: origin, stack: [], queue: [], ttl: 0, expiresAt: origin)
    }

    /// The session after `change` (the `data` of a `change` event of the event stream, or one of
    /// ``EventsPage/sessionChanges``), derived from this state without asking the server; `nil`
    /// when the change does not follow from this state.
    ///
    /// The server's change records are complete: applying a change's events in order to the
    /// version before it gives exactly the version after it, and this does so:
    /// - `sessionCreated`: `createdAt` is the change's time, `ttl` the event's;
    /// - `presented` appends the presentation to the stack, `queued` inserts it into the queue at
    ///   its `position`, `promoted` moves it from the queue onto the stack, `updated` replaces the
    ///   stack's or the queue's presentation with its id (its path included), `dismissed` removes it
    ///   from the stack or the queue (its path goes with it);
    /// - `pushed` appends the entry to its level's path (the session's for `root`, else the stack
    ///   presentation's), `popped` removes it, `entryUpdated` replaces the entry with its id;
    /// - `replaced` and `navigated` change nothing: the events before them did;
    /// - then `version` and `updatedAt` are the change's, `top` the last of the stack, and
    ///   `expiresAt` is `updatedAt + ttl`.
    ///
    /// It returns `nil` when:
    /// - `change.version` is not `version + 1` (a change was missed, or this one is old);
    /// - an event names a presentation, level or entry this state does not have where it should
    ///   be (or adds one it already has);
    /// - the resulting stack's ids are not `change.stack`, the root path's not `change.path`, or
    ///   the containers' paths not `change.paths`.
    public func applying(_ change: SessionChange) -> Session? {
        guard change.version == version + 1 else { return nil }
        var next = self
        for event in change.events {
            guard next.apply(event, at: change.at) else { return nil }
        }
        guard next.stack.map(\.id) == change.stack, next.path.map(\.id) == change.path,
            next.containerPaths == change.paths
        else { return nil }
        next.version = change.version
        next.updatedAt = change.at
        next.top = next.stack.last
        // From whole milliseconds, as the decoder makes the server's `expiresAt`: `at + ttl` in
        // floating point can differ from it in the last bit.
        let milliseconds = Int64((change.at.timeIntervalSince1970 * 1000).rounded()) + next.ttl * 1000
        next.expiresAt = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return next
    }

    /// The entry ids of every container's path on the stack, by presentation id: a change's `paths`.
    private var containerPaths: [String: [String]] {
        var paths: [String: [String]] = [:]
        for presentation in stack where !presentation.style.kind.isAlertLike {
            paths[presentation.id] = presentation.path.map(\.id)
        }
        return paths
    }

    /// Applies one event of a change made at `at`; false when it does not follow from this state.
    private mutating func apply(_ event: SessionEvent, at: Date) -> Bool {
        switch event {
        case .sessionCreated(let ttl):
            createdAt = at
            self.ttl = ttl
        case .dismissed(let presentation):
            if let index = stack.firstIndex(where: { $0.id == presentation.id }) {
                stack.remove(at: index)
            } else if let index = queue.firstIndex(where: { $0.id == presentation.id }) {
                queue.remove(at: index)
            } else {
                return false
            }
        case .presented(let presentation):
            guard !holds(presentation.id) else { return false }
            stack.append(presentation)
        case .queued(let presentation, let position):
            guard !holds(presentation.id), (0...queue.count).contains(position) else { return false }
            queue.insert(presentation, at: position)
        case .promoted(let presentation):
            guard let index = queue.firstIndex(where: { $0.id == presentation.id }) else { return false }
            queue.remove(at: index)
            stack.append(presentation)
        case .updated(let presentation):
            if let index = stack.firstIndex(where: { $0.id == presentation.id }) {
                stack[index] = presentation
            } else if let index = queue.firstIndex(where: { $0.id == presentation.id }) {
                queue[index] = presentation
            } else {
                return false
            }
        case .pushed(let entry, let level):
            return editPath(of: level) { path in
                guard !path.contains(where: { $0.id == entry.id }) else { return false }
                path.append(entry)
                return true
            }
        case .popped(let entry, let level, _):
            return editPath(of: level) { path in
                guard let index = path.firstIndex(where: { $0.id == entry.id }) else { return false }
                path.remove(at: index)
                return true
            }
        case .entryUpdated(let entry, let level):
            return editPath(of: level) { path in
                guard let index = path.firstIndex(where: { $0.id == entry.id }) else { return false }
                path[index] = entry
                return true
            }
        case .replaced, .navigated:
            break
        }
        return true
    }

    private func holds(_ id: String) -> Bool {
        stack.contains { $0.id == id } || queue.contains { $0.id == id }
    }
}
