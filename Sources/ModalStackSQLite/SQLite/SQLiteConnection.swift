import CSQLite

/// One sqlite3 connection. Not thread-safe: its owner serializes access (a `LockedValue` in the store).
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    /// Prepared statements by the address of their SQL literal: hashing a pointer costs a few
    /// instructions, hashing the text about a thousand, and a change runs five statements or more.
    private var statements: [UnsafeRawPointer: SQLiteStatement] = [:]

    /// Opens (or, with `create`, creates) the database file at `path`.
    init(path: String, readOnly: Bool = false, create: Bool = false) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE)
        if create { flags |= SQLITE_OPEN_CREATE }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError(code: code, connection: handle)
            sqlite3_close_v2(handle)
            throw error
        }
        sqlite3_extended_result_codes(handle, 1)
        self.handle = handle
        self.path = path
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows (schema, pragmas, BEGIN/COMMIT).
    func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else {
            throw SQLiteError(code: sqlite3_extended_errcode(handle), connection: handle, sql: sql)
        }
    }

    /// The statement for `sql`, prepared once and reused.
    func statement(_ sql: StaticString) throws(SQLiteError) -> SQLiteStatement {
        let key = UnsafeRawPointer(sql.utf8Start)
        if let cached = statements[key] { return cached }
        let statement = try SQLiteStatement(sql.description, on: self)
        statements[key] = statement
        return statement
    }

    /// The first column of the first row of `sql`, as an integer (pragmas, counts). Prepared for
    /// this call only: these run at start-up and on health checks.
    func integer(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try SQLiteStatement(sql, on: self)
        try statement.bind([])
        return try statement.step() ? statement.integer(at: 0) : nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed if it returns, rolled back if it throws.
    func writeTransaction<Result>(_ body: () throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try statement("BEGIN IMMEDIATE").run()
        do {
            let result = try body()
            try statement("COMMIT").run()
            return result
        } catch {
            // A failed COMMIT (disk full) may leave the transaction open; roll back so the
            // connection is usable again once the cause is gone.
            if sqlite3_get_autocommit(handle) == 0 {
                _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }
}
