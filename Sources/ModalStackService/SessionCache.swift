import Locking
import ModalStackCore
import ModalStackStore

/// The committed sessions most recently used, in memory, so that reads rarely touch the store and
/// a session's JSON is rendered once per version. It holds only committed state, never a change
/// still waiting for its commit.
///
/// Bounded to `capacity` entries (`--cache-size`) by the CLOCK approximation of
/// least-recently-used: a lookup marks its entry used; a new entry, once full, takes the slot of
/// the first entry the hand finds unmarked, the hand clearing marks as it passes. Each call does constant work under the lock
/// (a full LRU order, or a sort when over capacity, would cost more on every read or stall them all).
final class SessionCache: Sendable {
    private struct Entry {
        let id: String
        /// Nil: known to be deleted (a tombstone, so that a slow read cannot bring it back).
        var session: Session?
        var rendered: [UInt8]?
        /// Looked up since the hand last passed.
        var used = false
        /// False once another instance changed it: a lookup misses until this process learns it again.
        var isCurrent = true
        /// When the store last showed this state current (``SessionCache/clock``): its commit,
        /// its read, or a check of its stamp.
        var confirmedAt: Int64 = 0
    }

    private struct State {
        var slots: [String: Int] = [:]
        var entries: [Entry] = []
        /// The next slot to consider for eviction.
        var hand = 0

        /// The slot of `session`'s very state, if it is held and current: the same version of
        /// the same session, not of one deleted and made again.
        func slot(holding session: Session) -> Int? {
            guard let slot = slots[session.id], entries[slot].isCurrent,
                entries[slot].session.map(SessionStamp.init) == SessionStamp(session)
            else { return nil }
            return slot
        }
    }

    let capacity: Int
    /// Monotonic nanoseconds, for when an entry was last confirmed.
    let clock: @Sendable () -> Int64
    private let state = LockedValue(State())

    init(capacity: Int, clock: @escaping @Sendable () -> Int64 = { 0 }) {
        self.capacity = capacity
        self.clock = clock
    }

    enum Lookup {
        case miss
        case deleted
        case session(Session, rendered: [UInt8]?, confirmedAt: Int64)
    }

    func lookup(_ id: String) -> Lookup {
        state.withLock { state in
            guard let slot = state.slots[id], state.entries[slot].isCurrent else { return .miss }
            state.entries[slot].used = true
            guard let session = state.entries[slot].session else { return .deleted }
            return .session(
                session, rendered: state.entries[slot].rendered, confirmedAt: state.entries[slot].confirmedAt)
        }
    }

    /// The store showed `session`'s very state to be current just now.
    func confirmed(_ session: Session) {
        let now = clock()
        state.withLock { state in
            if let slot = state.slot(holding: session) { state.entries[slot].confirmedAt = now }
        }
    }

    /// What a commit decided: authoritative, replaces whatever is there.
    func committed(_ session: Session?, id: String) {
        insert(session, id: id, onlyIfNewer: false)
    }

    /// What a read found in the store: kept unless the entry already knows something newer.
    func loaded(_ session: Session) {
        insert(session, id: session.id, onlyIfNewer: true)
    }

    /// Drops what is held of the session (another instance changed it): the next read goes to the store.
    func forget(_ id: String) {
        state.withLock { state in
            guard let slot = state.slots[id] else { return }
            state.entries[slot].isCurrent = false
            state.entries[slot].rendered = nil
        }
    }

    /// The JSON rendered for the session's version, if the cache holds that version rendered.
    func rendering(of session: Session) -> [UInt8]? {
        state.withLock { state in state.slot(holding: session).flatMap { state.entries[$0].rendered } }
    }

    /// Keeps the JSON rendered for a session's version, if that version is still the one held.
    func rendered(_ body: [UInt8], for session: Session) {
        state.withLock { state in
            if let slot = state.slot(holding: session) { state.entries[slot].rendered = body }
        }
    }

    private func insert(_ session: Session?, id: String, onlyIfNewer: Bool) {
        guard capacity > 0 else { return }
        let now = clock()
        state.withLock { state in
            if let slot = state.slots[id] {
                if onlyIfNewer && state.entries[slot].isCurrent {
                    guard let held = state.entries[slot].session, held.version < (session?.version ?? 0) else { return }
                }
                state.entries[slot].session = session
                state.entries[slot].rendered = nil
                state.entries[slot].used = true
                state.entries[slot].isCurrent = true
                state.entries[slot].confirmedAt = now
                return
            }
            let entry = Entry(id: id, session: session, confirmedAt: now)
            guard state.entries.count == capacity else {
                state.slots[id] = state.entries.count
                state.entries.append(entry)
                return
            }
            while state.entries[state.hand].used {
                state.entries[state.hand].used = false
                state.hand = (state.hand + 1) % capacity
            }
            state.slots[state.entries[state.hand].id] = nil
            state.entries[state.hand] = entry
            state.slots[id] = state.hand
            state.hand = (state.hand + 1) % capacity
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
