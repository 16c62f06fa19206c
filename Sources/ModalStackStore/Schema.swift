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
            stack TEXT NOT NULL
        ) WITHOUT ROWID;
        """
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }
}
