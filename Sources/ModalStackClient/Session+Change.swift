import Foundation

extension Session {
    /// The session after `change`, the `data` of a `change` event of the event stream, derived
    /// from this state without asking the server; `nil` when it cannot be derived exactly, and the
    /// caller should read the session instead.
    ///
    /// The change's events are applied in order: `dismissed` removes its presentation from the
    /// stack or the queue, `presented` pushes one, `queued` inserts one into the queue at its
    /// `position`, `promoted` moves one from the queue onto the stack, `updated` replaces the one
    /// with its id. `version`, `updatedAt`, `expiresAt` and `top` follow.
    ///
    /// It returns `nil` when:
    /// - `change.version` is not `version + 1` (a change was missed, or this one is old);
    /// - the change has `sessionCreated`: the session's first change, whose `ttl` the change does
    ///   not carry;
    /// - the change has `replaced` with a non-empty stack: the server keeps the bottom entries that
    ///   match the request (same key, destination and style) but gives them the request's payload
    ///   and style fields, and makes the other entries new presentations; the change carries only
    ///   their ids (a replacement with an empty stack is derived);
    /// - an event names a presentation the session does not have where it should be (or already has
    ///   one it adds), or the resulting stack's ids are not `change.stack`: the change does not
    ///   follow from this state.
    public func applying(_ change: SessionChange) -> Session? {
        guard change.version == version + 1 else { return nil }
        var next = self
        for event in change.events {
            guard next.apply(event) else { return nil }
        }
        guard next.stack.map(\.id) == change.stack else { return nil }
        next.version = change.version
        next.updatedAt = change.at
        next.top = next.stack.last
        // From whole milliseconds, as the decoder makes the server's `expiresAt`: `at + ttl` in
        // floating point can differ from it in the last bit.
        let milliseconds = Int64((change.at.timeIntervalSince1970 * 1000).rounded()) + ttl * 1000
        next.expiresAt = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return next
    }

    /// Applies one event to the stack and the queue; false when it does not follow from them.
    private mutating func apply(_ event: SessionEvent) -> Bool {
        switch event {
        case .sessionCreated:
            return false
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
        case .replaced(let ids):
            // The `dismissed` events before it removed what left the stack; an empty stack is all
            // that can be known exactly.
            guard ids.isEmpty, stack.isEmpty else { return false }
        }
        return true
    }

    private func holds(_ id: String) -> Bool {
        stack.contains { $0.id == id } || queue.contains { $0.id == id }
    }
}
