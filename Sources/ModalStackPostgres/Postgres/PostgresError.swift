import CLibPQ

/// A libpq failure: the server's SQLSTATE when it sent one, and whether the connection is gone.
struct PostgresError: Error, CustomStringConvertible {
    /// The five-character SQLSTATE ("53100" is disk full); nil when the error did not come from
    /// the server (the connection failed or broke).
    let sqlState: String?
    let message: String
    /// The connection is no longer usable (refused, lost, or reset): the pool drops it.
    let connectionBroken: Bool

    init(sqlState: String?, message: String, connectionBroken: Bool) {
        self.sqlState = sqlState
        self.message = message
        self.connectionBroken = connectionBroken
    }

    /// The error of `result` (or of `connection` when there is no result).
    init(result: OpaquePointer?, connection: OpaquePointer) {
        let broken = PQstatus(connection) != CONNECTION_OK
        var message = String(cString: PQerrorMessage(connection))
        var sqlState: String?
        if let result {
            if let field = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) { sqlState = String(cString: field) }
            let resultMessage = String(cString: PQresultErrorMessage(result))
            if !resultMessage.isEmpty { message = resultMessage }
        }
        self.init(
            sqlState: sqlState, message: message.trimmingTrailingNewlines(), connectionBroken: broken)
    }

    var description: String {
        sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline { text = text.dropLast() }
        return String(text)
    }
}
