/// Why a change could not be applied to a session: it does not follow from it.
public struct ChangeMismatch: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
}

extension Session {
    /// The session after `change`, derived from this state alone: the change's events applied in
    /// order (see the README's "Staying in sync" for each). This is how a change record is read
    /// everywhere; the server's tests hold every record it writes to it.
    ///
    /// Throws when the change is not the next version, or an event names what is not where it says.
    public func applying(_ change: SessionChange) throws(ChangeMismatch) -> Session {
        guard change.version == version + 1 else {
            throw ChangeMismatch(description: "change \(change.version) does not follow version \(version)")
        }
        var next = self
        for event in change.events {
            try next.apply(event, at: change.at)
        }
        next.version = change.version
        next.updatedAt = change.at
        guard NavigationShape(next) == change.shape else {
            throw ChangeMismatch(description: "change \(change.version) leaves another navigation than it records")
        }
        return next
    }

    private mutating func apply(_ event: SessionEvent, at time: Timestamp) throws(ChangeMismatch) {
        func missing(_ what: String) -> ChangeMismatch {
            ChangeMismatch(description: "\(event.kind.rawValue): the session has no \(what)")
        }
        switch event.kind {
        case .sessionCreated:
            createdAt = time
            if let ttl = event.details["ttl"]?.intValue { ttlSeconds = Int64(ttl) }
        case .presented, .promoted, .queued, .updated, .dismissed:
            guard let presentation = event.presentation else { throw missing("presentation in the event") }
            try apply(event.kind, presentation, position: event.details["position"]?.intValue)
        case .pushed, .popped, .entryUpdated:
            guard let entry = event.entry, let level = event.level else { throw missing("entry in the event") }
            var entries = path(of: level)
            let index = entries.firstIndex { $0.id == entry.id }
            switch (event.kind, index) {
            case (.pushed, nil): entries.append(entry)
            case (.popped, let index?): entries.remove(at: index)
            case (.entryUpdated, let index?): entries[index] = entry
            default: throw missing("place for entry \(entry.id) in \(level.pathName)")
            }
            guard setPath(entries, of: level) else { throw missing("level \(level)") }
        case .replaced, .navigated, .sessionDeleted:
            break
        }
    }

    private mutating func apply(_ kind: SessionEvent.Kind, _ presentation: Presentation, position: Int?)
        throws(ChangeMismatch)
    {
        let id = presentation.id
        let onStack = stack.firstIndex { $0.id == id }
        let inQueue = queue.firstIndex { $0.id == id }
        switch (kind, onStack, inQueue) {
        case (.presented, nil, nil):
            stack.append(presentation)
        case (.queued, nil, nil):
            queue.insert(presentation, at: min(max(position ?? queue.count, 0), queue.count))
        case (.promoted, nil, let index?):
            queue.remove(at: index)
            stack.append(presentation)
        case (.updated, let index?, _):
            stack[index] = presentation
        case (.updated, nil, let index?):
            queue[index] = presentation
        case (.dismissed, let index?, _):
            stack.remove(at: index)
        case (.dismissed, nil, let index?):
            queue.remove(at: index)
        default:
            throw ChangeMismatch(description: "\(kind.rawValue): presentation \(id) is not where the event needs it")
        }
    }
}
