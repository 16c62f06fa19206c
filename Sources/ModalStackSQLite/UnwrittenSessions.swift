import ModalStackCore

/// The sessions whose newest changes are committed in the `changes` table but not yet in their
/// row, held in memory: the store answers for them from here until their row is written back.
/// Changes are numbered by their rowid, given in commit order; a session is written back once its
/// oldest unwritten change is ``SQLiteSessionStore/writeBackAge`` rowids old, before the log
/// would delete any of its unwritten changes, and when the store closes. Every change at or
/// below ``writtenThrough`` is in its session's row (or the session is gone): recovery replays
/// only the changes above it.
struct UnwrittenSessions: Sendable {
    struct Entry: Sendable {
        /// The newest committed version.
        var session: Session
        /// The version of the session's row.
        var rowVersion: Int64
        /// What left the session since its row was written, oldest first; at most the number the
        /// retention policy keeps, since older ones would be pruned on write-back anyway.
        var dismissed: [DismissedPresentation]
        /// The rowid of its oldest unwritten change.
        var since: Int64
    }

    /// One record per entry, in order of `since`. A record whose entry was written back or
    /// deleted since (its `since` no longer matches) is skipped.
    struct Record: Sendable {
        var since: Int64
        var sessionID: String
    }

    private(set) var entries: [String: Entry] = [:]
    private var order: [Record] = []
    private var head = 0
    /// The rowid the next change gets: above every rowid the table ever held, so that rowids only grow.
    private(set) var nextRowID: Int64
    /// As stored in `log_state`.
    private(set) var writtenThrough: Int64

    init(nextRowID: Int64, writtenThrough: Int64) {
        self.nextRowID = nextRowID
        self.writtenThrough = writtenThrough
    }

    func isCurrent(_ record: Record, in batch: Batch) -> Bool {
        batch.entry(record.sessionID, in: self)?.since == record.since
    }

    /// The records whose change is at least `age` rowids old at the batch's end, oldest first.
    func due(age: Int64, in batch: Batch) -> [Record] {
        var due: [Record] = []
        var index = head
        while index < order.count, order[index].since <= batch.nextRowID - age {
            if isCurrent(order[index], in: batch) { due.append(order[index]) }
            index += 1
        }
        return due
    }

    /// Every change below this rowid is in its session's row once `batch` commits.
    func oldestUnwrittenRowID(after batch: Batch) -> Int64 {
        for records in [order[head...], batch.appended[...]] {
            for record in records where isCurrent(record, in: batch) { return record.since }
        }
        return batch.nextRowID
    }

    /// Takes in what a committed batch changed.
    mutating func apply(_ batch: Batch) {
        for (id, entry) in batch.changed { entries[id] = entry }
        order += batch.appended
        nextRowID = batch.nextRowID
        if let written = batch.writtenThrough { writtenThrough = written }
        while head < order.count, entries[order[head].sessionID]?.since != order[head].since { head += 1 }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }

    /// What one commit changes, applied to the shared state only once the transaction committed.
    struct Batch: Sendable {
        /// New entries, and nil for those written back or deleted.
        var changed: [String: Entry?] = [:]
        var appended: [Record] = []
        var nextRowID: Int64
        /// The new `log_state`, when the commit stored one.
        var writtenThrough: Int64?

        init(after state: UnwrittenSessions) {
            nextRowID = state.nextRowID
        }

        func entry(_ id: String, in state: UnwrittenSessions) -> Entry? {
            if let changed = changed[id] { return changed }
            return state.entries[id]
        }
    }
}
