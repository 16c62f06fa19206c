/// The database schema, as numbered migrations recorded in `PRAGMA user_version`.
enum Schema {
    /// Marks a file as ModalStack's (`PRAGMA application_id`, "MSTK"), so that a file from another
    /// application is refused instead of being written into.
    static let applicationID: Int64 = 0x4D53_544B

    /// Migration `i` takes the schema from version `i` to `i + 1`. Append only; never edit one
    /// that has shipped.
    static let migrations: [String] = [
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY NOT NULL,
            version INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            stack TEXT NOT NULL,
            queue TEXT NOT NULL,
            ttl INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX sessions_by_expiry ON sessions (expires_at);
        CREATE TABLE dismissed_presentations (
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            document TEXT NOT NULL,
            PRIMARY KEY (session_id, id)
        ) WITHOUT ROWID;
        CREATE INDEX dismissed_presentations_by_age ON dismissed_presentations (session_id, sequence);
        CREATE TABLE changes (
            session_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (session_id, version)
        ) WITHOUT ROWID;
        CREATE TABLE idempotent_responses (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint BLOB NOT NULL,
            status INTEGER NOT NULL,
            headers TEXT NOT NULL,
            body BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;
        CREATE INDEX idempotent_responses_by_age ON idempotent_responses (created_at);
        """,
        // Fewer pages per change. Expiry is indexed by the minute (`expiryBucketMilliseconds`), so
        // a session's index entry moves at most once a minute rather than on every change; and
        // dismissed presentations are keyed by their order, without a second index (a lookup by id
        // reads at most the session's 64 rows).
        """
        ALTER TABLE sessions ADD COLUMN expiry_bucket INTEGER NOT NULL DEFAULT 0;
        UPDATE sessions SET expiry_bucket = expires_at / 60000;
        DROP INDEX sessions_by_expiry;
        CREATE INDEX sessions_by_expiry_bucket ON sessions (expiry_bucket);
        CREATE TABLE dismissed_presentations_by_sequence (
            session_id TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            id TEXT NOT NULL,
            document TEXT NOT NULL,
            PRIMARY KEY (session_id, sequence)
        ) WITHOUT ROWID;
        INSERT INTO dismissed_presentations_by_sequence (session_id, sequence, id, document)
            SELECT session_id, sequence, id, document FROM dismissed_presentations;
        DROP TABLE dismissed_presentations;
        ALTER TABLE dismissed_presentations_by_sequence RENAME TO dismissed_presentations;
        """,
        // The event log and the dismissed presentations as rowid tables with a narrow index by
        // session. A new row goes at the end of its table, on a page the whole commit shares, and
        // its index entry is small. Stored as wide WITHOUT ROWID rows keyed by session, a new row
        // landed mid-tree and split a full page about every eighth row: 4.0 WAL pages per present
        // or dismiss, 1.5 in this layout (measured). The dismissed presentations' index holds the
        // id, so a lookup by id reads only the row it finds.
        """
        CREATE TABLE changes_appended (
            session_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            record TEXT NOT NULL
        );
        INSERT INTO changes_appended (session_id, version, record) SELECT session_id, version, record FROM changes;
        DROP TABLE changes;
        ALTER TABLE changes_appended RENAME TO changes;
        CREATE UNIQUE INDEX changes_by_session ON changes (session_id, version);
        CREATE TABLE dismissed_presentations_appended (
            session_id TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            id TEXT NOT NULL,
            document TEXT NOT NULL
        );
        INSERT INTO dismissed_presentations_appended (session_id, sequence, id, document)
            SELECT session_id, sequence, id, document FROM dismissed_presentations;
        DROP TABLE dismissed_presentations;
        ALTER TABLE dismissed_presentations_appended RENAME TO dismissed_presentations;
        CREATE UNIQUE INDEX dismissed_presentations_by_session ON dismissed_presentations (session_id, sequence, id);
        """,
        // The sessions most recently changed first, for the listing. Indexed by the minute
        // (`updatedBucketMilliseconds`) for the same reason as expiry: a session's index entry
        // moves at most once a minute, not on every change.
        """
        ALTER TABLE sessions ADD COLUMN updated_bucket INTEGER NOT NULL DEFAULT 0;
        UPDATE sessions SET updated_bucket = updated_at / 60000;
        CREATE INDEX sessions_by_updated_bucket ON sessions (updated_bucket);
        """,
        // The session log: a change commits as an appended row holding the session after it (and
        // what it dismissed), on pages the whole commit shares; the session's own row, somewhere in
        // its table, is written back later (see `UnwrittenSessions`). A row with a NULL version
        // marks a deletion, so that recovery never applies an earlier life's changes to a session
        // created again. Rows are only read at recovery, in rowid order, and deleted from the
        // front: no index.
        """
        CREATE TABLE session_log (
            session_id TEXT NOT NULL,
            version INTEGER,
            created_at INTEGER,
            updated_at INTEGER,
            ttl INTEGER,
            stack TEXT,
            queue TEXT,
            retired TEXT
        );
        """,
        // Push paths: the root level's path of each session (the stack's presentations carry
        // their own in their JSON). Sessions written before have none.
        """
        ALTER TABLE sessions ADD COLUMN path TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE session_log ADD COLUMN path TEXT;
        """,
        // The session log's column of what a change dismissed says so, as the code and the
        // `dismissed_presentations` table do. A rename changes the schema's text only: no row is
        // rewritten, and rows a killed process left in the log are recovered from the new name.
        """
        ALTER TABLE session_log RENAME COLUMN retired TO dismissed;
        """,
        // One record per change: a change commits as its `changes` row alone, and a session is
        // recovered as its row plus the changes after it (see `UnwrittenSessions`). Rowids only
        // grow; `log_state` says up to which one every change is in its session's row. Every
        // 64th version's row also holds the session after it (`checkpoint`), which any later
        // version is rebuilt from. What the old session log held is written back first
        // (`LegacySessionLog`, run before this step).
        """
        ALTER TABLE changes ADD COLUMN checkpoint TEXT;
        CREATE TABLE log_state (written_through INTEGER NOT NULL);
        INSERT INTO log_state (written_through) SELECT coalesce(max(rowid), 0) FROM changes;
        DROP TABLE session_log;
        """,
    ]

    /// The width of an `expiry_bucket` (migration 2): `expires_at / expiryBucketMilliseconds`.
    static let expiryBucketMilliseconds: Int64 = 60_000
    /// The width of an `updated_bucket` (migration 5): `updated_at / updatedBucketMilliseconds`.
    static let updatedBucketMilliseconds: Int64 = 60_000

    static var currentVersion: Int64 { Int64(migrations.count) }
}
