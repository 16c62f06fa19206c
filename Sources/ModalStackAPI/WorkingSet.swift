import Locking
import ModalStackCore

/// The committed sessions most recently used, in memory, so that reads rarely touch SQLite and
/// a session's JSON is rendered once per version. Bounded: past `capacity` the least recently
/// used are dropped (misses read from the store). It holds only committed state, never a change
/// still waiting for its commit.
final class WorkingSet: Sendable {
    private struct Entry {
        /// Nil: known to be deleted (a tombstone, so that a slow read cannot bring it back).
        var session: Session?
        var rendered: [UInt8]?
        var lastUsed: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    let capacity: Int
    private let state = LockedValue(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    enum Lookup {
        case miss
        case deleted
        case session(Session, rendered: [UInt8]?)
    }

    func lookup(_ id: String) -> Lookup {
        state.withLock { state in
            guard var entry = state.entries[id] else { return .miss }
            state.clock += 1
            entry.lastUsed = state.clock
            state.entries[id] = entry
            guard let session = entry.session else { return .deleted }
            return .session(session, rendered: entry.rendered)
        }
    }

    /// What a commit decided: authoritative, replaces whatever is there.
    func committed(_ session: Session?, id: String) {
        insert(Entry(session: session, rendered: nil, lastUsed: 0), id: id, onlyIfNewer: false)
    }

    /// What a read found in the store: kept unless the entry already knows something newer.
    func loaded(_ session: Session) {
        insert(Entry(session: session, rendered: nil, lastUsed: 0), id: session.id, onlyIfNewer: true)
    }

    /// Keeps the JSON rendered for a session's version, if that version is still the one held.
    func rendered(_ body: [UInt8], for session: Session) {
        state.withLock { state in
            guard state.entries[session.id]?.session?.version == session.version else { return }
            state.entries[session.id]?.rendered = body
        }
    }

    private func insert(_ entry: Entry, id: String, onlyIfNewer: Bool) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if onlyIfNewer, let existing = state.entries[id] {
                guard let held = existing.session, held.version < (entry.session?.version ?? 0) else { return }
            }
            state.clock += 1
            var entry = entry
            entry.lastUsed = state.clock
            state.entries[id] = entry
            // Evict in bulk when 10% over, so that the sort is paid once per many inserts.
            if state.entries.count > capacity + max(capacity / 10, 1) {
                let oldest = state.entries.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(state.entries.count - capacity)
                for (id, _) in oldest {
                    state.entries[id] = nil
                }
            }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
