import ModalStackCore

/// The sessions whose newest version is committed in the session log but not yet in their row,
/// held in memory: the store answers for them from here until their row is written back. A
/// session is written back once its oldest unwritten change is ``SQLiteSessionStore/writeBackAge``
/// changes old, and when the store closes.
struct UnwrittenSessions: Sendable {
    struct Entry: Sendable {
        /// The newest committed version.
        var session: Session
        /// What left the session since its row was written, oldest first; at most the number the
        /// retention policy keeps, since older ones would be pruned on write-back anyway.
        var dismissed: [DismissedPresentation]
        /// The log position of its oldest unwritten change.
        var since: Int64
        /// The rowid of that change in the log: rows before every entry's `firstRowID` are no longer needed.
        var firstRowID: Int64
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
    /// How many changes were logged since the store opened.
    private(set) var position: Int64 = 0
    /// Log rows below this rowid are deleted (0: the log may hold rows from the first).
    private(set) var truncatedBelow: Int64 = 0
    /// Whether the log may hold rows: the store opens with it empty.
    private(set) var logHoldsRows = false

    func isCurrent(_ record: Record, in batch: Batch) -> Bool {
        batch.entry(record.sessionID, in: self)?.since == record.since
    }

    /// The records whose change is at least `age` old at the batch's position, oldest first.
    func due(age: Int64, in batch: Batch) -> [Record] {
        var due: [Record] = []
        var index = head
        while index < order.count, order[index].since <= batch.position - age {
            if isCurrent(order[index], in: batch) { due.append(order[index]) }
            index += 1
        }
        return due
    }

    /// The rowid of the oldest log row still needed once `batch` commits; nil when none is.
    func oldestNeededRowID(after batch: Batch) -> Int64? {
        for records in [order[head...], batch.appended[...]] {
            for record in records where isCurrent(record, in: batch) {
                return batch.entry(record.sessionID, in: self)?.firstRowID
            }
        }
        return nil
    }

    /// Takes in what a committed batch changed.
    mutating func apply(_ batch: Batch) {
        for (id, entry) in batch.changed { entries[id] = entry }
        order += batch.appended
        position = batch.position
        if let truncated = batch.truncatedBelow { truncatedBelow = truncated }
        logHoldsRows = batch.appendedToLog || (logHoldsRows && !batch.emptiedLog)
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
        var position: Int64
        var truncatedBelow: Int64?
        var appendedToLog = false
        /// Whether it deleted every log row (after what it appended).
        var emptiedLog = false

        init(startingAt position: Int64) {
            self.position = position
        }

        func entry(_ id: String, in state: UnwrittenSessions) -> Entry? {
            if let changed = changed[id] { return changed }
            return state.entries[id]
        }
    }
}
