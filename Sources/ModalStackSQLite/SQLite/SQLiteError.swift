import CSQLite

/// An error from sqlite3: the extended result code, SQLite's message, and the SQL that failed.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (e.g. `SQLITE_FULL`, `SQLITE_IOERR_WRITE`).
    public let code: Int32
    public let message: String
    public let sql: String?

    init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    init(code: Int32, connection: OpaquePointer?, sql: String? = nil) {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        self.init(code: code, message: message ?? String(cString: sqlite3_errstr(code)), sql: sql)
    }

    /// The primary result code, with the extended bits masked off.
    public var primaryCode: Int32 { code & 0xFF }

    public var description: String {
        let name = String(cString: sqlite3_errstr(code))
        let base = message == name ? "SQLite error \(code) (\(name))" : "SQLite error \(code) (\(name)): \(message)"
        return sql.map { "\(base) in \($0)" } ?? base
    }
}
