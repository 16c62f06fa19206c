import CSQLite
import Locking
import ModalStackCore
import ModalStackStore

/// The change log and recovery: a change commits as its record; the session's row is written
/// back later (``UnwrittenSessions``), and opening the file replays what a killed process left.
extension SQLiteSessionStore {
    /// Replays the changes beyond `log_state`, those of a process that ended without closing the
    /// store, onto their sessions' rows, and writes them back.
    func recover() throws(StoreError) {
        let (writtenThrough, lastRowID, logged) = try write { connection throws(SQLiteError) in
            let writtenThrough = try connection.integer("SELECT written_through FROM log_state") ?? 0
            let lastRowID = try connection.integer("SELECT coalesce(max(rowid), 0) FROM changes") ?? 0
            let statement = try SQLiteStatement(
                "SELECT session_id, record FROM changes WHERE rowid > ? ORDER BY rowid", on: connection)
            try statement.bind([.integer(writtenThrough)])
            var logged: [(sessionID: String, record: String)] = []
            while try statement.step() { logged.append((statement.text(at: 0), statement.text(at: 1))) }
            return (writtenThrough, lastRowID, logged)
        }
        let last = max(writtenThrough, lastRowID)
        var replayed: [String: [SessionChange]] = [:]
        for (sessionID, record) in logged {
            replayed[sessionID, default: []].append(try RowCodec.decodeChange(record, sessionID: sessionID))
        }
        let rows = self.rows
        let changesBySession = replayed
        try write { connection throws(SQLiteError) in
            try connection.writeTransaction { () throws(SQLiteError) in
                for (sessionID, changes) in changesBySession {
                    guard let row = try rows.row(sessionID, on: connection) else { continue }
                    var session: Session
                    do throws(StoreError) {
                        session = try row.session()
                    } catch {
                        throw SQLiteError(code: SQLITE_CORRUPT, message: error.description)
                    }
                    var dismissed: [DismissedPresentation] = []
                    for change in changes where change.version > session.version {
                        do throws(ChangeMismatch) {
                            session = try session.applying(change)
                        } catch {
                            throw SQLiteError(
                                code: SQLITE_CORRUPT, message: "session \(sessionID): \(error.description)")
                        }
                        dismissed += DismissedPresentation.list(dismissedBy: change)
                    }
                    guard session.version > row.version else { continue }
                    try rows.writeBack(session, dismissed: dismissed, on: connection)
                }
                try connection.statement("UPDATE log_state SET written_through = ?").run([.integer(last)])
            }
        }
        unwritten.withLock { $0 = UnwrittenSessions(nextRowID: last + 1, writtenThrough: last) }
    }

    /// Makes the session after a change its unwritten entry, and returns it as its row will have
    /// it. Writes the row back at once when the event log would otherwise delete a change the
    /// row does not hold yet.
    func logUnwritten(
        _ update: SessionUpdate, on connection: SQLiteConnection, batch: inout UnwrittenSessions.Batch
    ) throws(SQLiteError) -> Session {
        var session = update.session
        var entry: UnwrittenSessions.Entry
        if let current = unwritten.withLock({ batch.entry(session.id, in: $0) }) {
            entry = current
            session.createdAt = current.session.createdAt
        } else {
            // The row keeps its creation time, whatever a later version says.
            if let row = try rows.row(session.id, on: connection) {
                session.createdAt = Timestamp(millisecondsSinceEpoch: row.createdAt)
            }
            entry = UnwrittenSessions.Entry(
                session: session, rowVersion: session.version - 1, dismissed: [], since: batch.nextRowID)
            batch.appended.append(UnwrittenSessions.Record(since: batch.nextRowID, sessionID: session.id))
        }
        entry.session = session
        entry.dismissed = retention.dismissedKept(
            entry.dismissed + DismissedPresentation.list(update.dismissed, dismissedBy: session.version),
            id: \.presentation.id)
        if session.version - entry.rowVersion >= Int64(retention.eventLogSize) {
            try rows.writeBack(session, dismissed: entry.dismissed, on: connection)
            batch.changed[session.id] = .some(nil)
        } else {
            batch.changed[session.id] = entry
        }
        return session
    }

    /// Writes back the rows of the sessions whose oldest unwritten change is ``writeBackAge``
    /// old, and moves `log_state` up once it lags a few hundred changes behind.
    func writeBackDue(on connection: SQLiteConnection, batch: inout UnwrittenSessions.Batch)
        throws(SQLiteError)
    {
        let due = unwritten.withLock { $0.due(age: writeBackAge, in: batch) }
        for record in due {
            guard let entry = unwritten.withLock({ batch.entry(record.sessionID, in: $0) }) else { continue }
            try rows.writeBack(entry.session, dismissed: entry.dismissed, on: connection)
            batch.changed[record.sessionID] = .some(nil)
        }
        let (oldestUnwritten, writtenThrough) = unwritten.withLock {
            ($0.oldestUnwrittenRowID(after: batch), $0.writtenThrough)
        }
        // One page a few hundred changes, rather than one each commit; recovery replays the few
        // changes in between onto rows that hold them already, which changes nothing.
        guard oldestUnwritten - 1 - writtenThrough >= 256 else { return }
        try connection.statement("UPDATE log_state SET written_through = ?").run([.integer(oldestUnwritten - 1)])
        batch.writtenThrough = oldestUnwritten - 1
    }
}
