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
        """
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }
}
