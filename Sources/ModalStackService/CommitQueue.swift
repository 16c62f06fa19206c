import ModalStackStore

/// The changes waiting for the committer, in the order they were decided: a value-type state
/// machine in the `ReplyStateMachine` style. Each event returns what the caller must do; the
/// caller holds the write path's lock around it and does it after.
///
/// A change takes its place when it is decided (``reserve(_:)``) and becomes committable once its
/// answer is rendered, outside the lock (``ready(_:writes:)``). The committer takes the ready
/// changes at the head (``nextBatch(limit:)``) and stops at one still rendering, which starts it
/// again when it is ready: answers keep the order of decisions.
struct CommitQueue {
    /// A place in the queue.
    struct Ticket: Hashable {
        fileprivate let number: UInt64
    }

    /// What the caller must do after an event.
    enum Action: Equatable {
        case none
        /// Start the committer: it was idle and the head is ready.
        case startCommitter
    }

    private struct Entry {
        let ticket: Ticket
        var commit: PendingCommit
        var isReady: Bool
    }

    private var entries: [Entry] = []
    private var head = 0
    private var nextNumber: UInt64 = 0
    /// Whether the committer runs: between a ``Action/startCommitter`` and the ``nextBatch(limit:)``
    /// that returns nil.
    private(set) var isCommitting = false

    var isEmpty: Bool { head == entries.count }

    /// Takes a place for a change decided now, not committable until ``ready(_:writes:)``.
    mutating func reserve(_ commit: PendingCommit) -> Ticket {
        append(commit, isReady: false)
    }

    /// A change committable at once (a deletion, an expiry, a request that waits for those ahead).
    mutating func enqueue(_ commit: PendingCommit) -> Action {
        _ = append(commit, isReady: true)
        return startIfIdle()
    }

    /// The reserved change is rendered: its writes (with the stored answer) replace the reserved
    /// ones. A change no longer queued (taken out by ``removeCommits(of:)`` or ``removeAll()``,
    /// whose callers finished it) is ignored.
    mutating func ready(_ ticket: Ticket, writes: [SessionWrite]) -> Action {
        guard let index = index(of: ticket) else { return .none }
        entries[index].commit.writes = writes
        entries[index].isReady = true
        return startIfIdle()
    }

    /// The committer's next batch: the ready changes at the head, at most `limit`. Nil when the
    /// head is empty or still rendering: the committer stops, and is started again by the event
    /// that makes the head ready.
    mutating func nextBatch(limit: Int) -> [PendingCommit]? {
        var batch: [PendingCommit] = []
        while head < entries.count, entries[head].isReady, batch.count < limit {
            batch.append(entries[head].commit)
            head += 1
        }
        compact()
        if batch.isEmpty { isCommitting = false }
        return batch.isEmpty ? nil : batch
    }

    /// Takes out the queued changes of these sessions (they build on a change another instance
    /// superseded), in order, for the caller to finish.
    mutating func removeCommits(of sessionIDs: Set<String>) -> [PendingCommit] {
        let removed = entries[head...].filter { sessionIDs.contains($0.commit.sessionID) }.map(\.commit)
        entries.removeSubrange(..<head)
        head = 0
        entries.removeAll { sessionIDs.contains($0.commit.sessionID) }
        return removed
    }

    /// Takes out every queued change (a failed commit: they may build on it), for the caller to finish.
    mutating func removeAll() -> [PendingCommit] {
        let removed = entries[head...].map(\.commit)
        entries.removeAll()
        head = 0
        return removed
    }

    private mutating func append(_ commit: PendingCommit, isReady: Bool) -> Ticket {
        let ticket = Ticket(number: nextNumber)
        nextNumber += 1
        entries.append(Entry(ticket: ticket, commit: commit, isReady: isReady))
        return ticket
    }

    private mutating func startIfIdle() -> Action {
        guard !isCommitting, head < entries.count, entries[head].isReady else { return .none }
        isCommitting = true
        return .startCommitter
    }

    /// Tickets grow along the queue: a binary search finds one.
    private func index(of ticket: Ticket) -> Int? {
        var low = head
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].ticket.number < ticket.number { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].ticket == ticket ? low : nil
    }

    private mutating func compact() {
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024, head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
