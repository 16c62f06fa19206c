import CSQLite

/// A prepared statement, finalized when released. Not thread-safe: it belongs to its connection.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private unowned let connection: SQLiteConnection

    init(_ sql: String, on connection: SQLiteConnection) throws(SQLiteError) {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_finalize(handle)
            throw SQLiteError(code: code, connection: connection.handle, sql: sql)
        }
        self.handle = handle
        self.sql = sql
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// A value bound to a `?` parameter.
    enum Value {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        case null
    }

    /// Resets the statement and binds `values` to its parameters, in order.
    func bind(_ values: [Value]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .integer(let int): code = sqlite3_bind_int64(handle, index, int)
            case .text(let text):
                // Through withCString, which lends a native string's own bytes; passing the String as
                // a `const char *` argument copies it into a new array first.
                code = text.withCString {
                    sqlite3_bind_text(handle, index, $0, Int32(text.utf8.count), SQLiteStatement.transient)
                }
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    // A non-null pointer even for an empty blob, so SQLite stores '' rather than NULL.
                    sqlite3_bind_blob(
                        handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
                        SQLiteStatement.transient)
                }
            case .null: code = sqlite3_bind_null(handle, index)
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
    }

    /// Advances to the next row: true when a row is available, false when done.
    func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = error(code)
            sqlite3_reset(handle)
            throw failure
        }
    }

    /// Runs the statement to completion with `values`, ignoring any rows.
    func run(_ values: [Value] = []) throws(SQLiteError) {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    func integer(at column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func isNull(at column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func text(at column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The column's bytes, copied.
    func bytes(at column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func reset() {
        sqlite3_reset(handle)
    }

    private func error(_ code: Int32) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(connection.handle), connection: connection.handle, sql: sql)
    }

    /// SQLite's `SQLITE_TRANSIENT` (copy the bound bytes now), a macro Swift cannot import.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
