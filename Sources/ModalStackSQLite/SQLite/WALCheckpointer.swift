import CSQLite
import Dispatch
import Locking
import Synchronization

/// Copies the write-ahead log back into the database file on a connection and a thread of its own,
/// so that the writer — whose commits clients wait on — does not pay for it.
///
/// SQLite's automatic checkpoint runs inside the commit that pushes the WAL past 1000 pages: it
/// reads those pages back, writes them into the database file and syncs it, while every request
/// of the next batch waits. Here the writer's WAL hook only notes the WAL's size; once it passes
/// ``backgroundThresholdFrames`` a passive checkpoint (one that never blocks the writer) runs on
/// this connection. The WAL file starts over only when a write begins with every frame copied,
/// which a steady stream of commits rarely allows; so past ``writerThresholdFrames`` the writer
/// checkpoints itself after its commit — copying only the few frames the background has not — and
/// its next transaction starts the WAL over. If a background checkpoint is still running then (a
/// slow disk, a starved machine), the writer waits for it rather than going on growing the WAL:
/// that wait is what bounds the WAL to about ``writerThresholdFrames`` and one commit's frames.
/// Durability is unchanged: SQLite syncs the WAL before copying it, whichever connection runs the
/// checkpoint, with the same `synchronous` setting.
final class WALCheckpointer: Sendable {
    static let backgroundThresholdFrames = 1000
    static let writerThresholdFrames = 4000

    private let connection: LockedValue<SQLiteConnection?>
    private let queue = DispatchQueue(label: "modalstack.wal-checkpoint")
    /// The WAL's size in frames after the writer's last commit.
    private let walFrames = Atomic<Int>(0)
    private let isScheduled = Atomic<Bool>(false)

    /// Opens the checkpoint connection and hooks into `writer`'s commits.
    init(path: String, synchronous: String, writer: SQLiteConnection) throws(SQLiteError) {
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA synchronous=\(synchronous)")
        self.connection = LockedValue(connection)
        // The hook replaces SQLite's automatic checkpoint on the writer.
        sqlite3_wal_hook(
            writer.handle,
            { context, _, _, frames in
                Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue().writerCommitted(
                    walFrames: Int(frames))
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether the writer should checkpoint itself now (after its commit), so the WAL starts over.
    var writerShouldCheckpoint: Bool {
        walFrames.load(ordering: .relaxed) >= Self.writerThresholdFrames
    }

    /// The writer's checkpoint, once the WAL is past ``writerThresholdFrames``: waits for a
    /// background checkpoint under way (which holds `connection`), then copies what it left; the
    /// writer's next transaction starts the WAL over.
    func writerCheckpoint(_ writer: SQLiteConnection) {
        connection.withLock { _ in Self.checkpoint(writer) }
    }

    /// A passive checkpoint: never waits for the writer or readers; copies what they allow.
    private static func checkpoint(_ connection: SQLiteConnection) {
        _ = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// Unhooks `writer` and closes the checkpoint connection, after any checkpoint under way.
    func stop(writer: SQLiteConnection) {
        sqlite3_wal_hook(writer.handle, nil, nil)
        queue.sync {}
        connection.withLock { $0 = nil }
    }

    /// Called by SQLite on the writer's thread, inside each commit: must not touch the writer.
    private func writerCommitted(walFrames frames: Int) {
        walFrames.store(frames, ordering: .relaxed)
        guard frames >= Self.backgroundThresholdFrames, !isScheduled.exchange(true, ordering: .acquiring) else {
            return
        }
        queue.async { [self] in
            connection.withLock { connection in
                if let connection { Self.checkpoint(connection) }
            }
            isScheduled.store(false, ordering: .releasing)
        }
    }
}
