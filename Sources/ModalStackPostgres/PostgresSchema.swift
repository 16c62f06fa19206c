/// The database schema, as numbered migrations recorded in the `modalstack_schema` table.
///
/// Every table is keyed by session id first and every statement but the expiry sweep and the
/// listing touches one session, so that the tables can be distributed by session id (Citus)
/// unchanged. Ids compare bytewise (`COLLATE "C"`), as in SQLite, whatever the database's locale:
/// the listing's order and its cursor are the same on both engines.
enum PostgresSchema {
    /// The table that marks a database as ModalStack's and records its schema version: one row
    /// per migration applied.
    static let versionTable = "modalstack_schema"

    /// The key of the advisory lock under which instances starting together migrate one at a
    /// time ("MSTK", as the SQLite file's application_id).
    static let migrationLockKey: Int64 = 0x4D53_544B

    /// Migration `i` takes the schema from version `i` to `i + 1`. Append only; never edit one
    /// that has shipped.
    static let migrations: [String] = [
        """
        CREATE TABLE sessions (
            id text COLLATE "C" PRIMARY KEY,
            version bigint NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            stack text NOT NULL,
            queue text NOT NULL,
            ttl bigint NOT NULL,
            expires_at bigint NOT NULL
        );
        CREATE INDEX sessions_by_expiry ON sessions (expires_at);
        CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
        CREATE TABLE changes (
            session_id text COLLATE "C" NOT NULL,
            version bigint NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (session_id, version)
        );
        CREATE TABLE dismissed_presentations (
            session_id text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            sequence bigint NOT NULL,
            document text NOT NULL,
            PRIMARY KEY (session_id, id)
        );
        CREATE INDEX dismissed_presentations_by_age ON dismissed_presentations (session_id, sequence);
        CREATE TABLE idempotent_responses (
            scope text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            fingerprint bytea NOT NULL,
            status integer NOT NULL,
            headers text NOT NULL,
            body bytea NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (scope, key)
        );
        CREATE INDEX idempotent_responses_by_age ON idempotent_responses (created_at);
        """,
        // Push paths: the root level's path of each session (the stack's presentations carry
        // their own in their JSON).
        """
        ALTER TABLE sessions ADD COLUMN path text NOT NULL DEFAULT '[]';
        """,
        // Every 64th version's change also holds the session after it, which any later version
        // is rebuilt from (`SessionHistory`).
        """
        ALTER TABLE changes ADD COLUMN checkpoint text;
        """,
    ]

    static var currentVersion: Int { migrations.count }
}
