import CLibPQ
import Glibc

/// One libpq connection. A connection serves one thread at a time: the pool hands it to one
/// caller, which gives it back when done; that is why it may cross threads (`@unchecked Sendable`).
final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// How many statements succeeded on this connection: the pool sees from it whether a call
    /// that failed had done anything at all.
    private(set) var succeeded = 0
    /// Whether a statement is prepared once under a name and reused, or sent unnamed with its
    /// parameters each time: through a transaction pooler, the session that holds a name may not
    /// be the one the next statement runs on.
    private let preparesStatements: Bool
    /// Server settings every transaction runs with (`synchronous_commit`, say): set once for the
    /// session when statements are prepared (a direct connection), else with `SET LOCAL` in each
    /// transaction, as a transaction pooler keeps no session state.
    private let settings: [(name: String, value: String)]

    /// Connects with a libpq connection string or `postgresql://` URL.
    init(
        _ connectionString: String, preparesStatements: Bool = true, settings: [(name: String, value: String)] = []
    ) throws(PostgresError) {
        self.preparesStatements = preparesStatements
        self.settings = settings
        guard let handle = PostgresConnection.withDefaults(connectionString, { PQconnectdbParams($0, $1, 1) }) else {
            throw PostgresError(sqlState: nil, message: "libpq could not allocate a connection", connectionBroken: true)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let error = PostgresError(result: nil, connection: handle)
            PQfinish(handle)
            throw error
        }
        self.handle = handle
        // Notices (a NOTICE from CREATE … IF NOT EXISTS, say) are not for the server's log.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        if preparesStatements { try execute(Self.setting(Self.preparedStatementSettings + settings)) }
    }

    /// On a connection that prepares its statements, each is planned once. PostgreSQL would
    /// otherwise plan a statement again on every call when its first few plans for the values given
    /// looked cheaper than the generic one: it did so for the commit's statements, and planning
    /// them took longer than running them.
    ///
    /// A plan made once is kept while its tables grow, and one made while a table was nearly
    /// empty (a new database, a table no dismissal had reached yet) reads the whole table: the
    /// commits' trimming of dismissed presentations then cost more than everything else a write
    /// does together. Every statement reaches its rows through an index (each table is keyed by
    /// session id; the sweep and the listing have theirs), so a scan of a whole table is never
    /// the plan wanted, and the planner is told so.
    static let preparedStatementSettings = [
        (name: "plan_cache_mode", value: "force_generic_plan"), (name: "enable_seqscan", value: "off"),
    ]

    /// One statement that sets `settings` for the session: one, as the extended protocol takes.
    static func setting(_ settings: [(name: String, value: String)]) -> String {
        "SELECT " + settings.map { "set_config('\($0.name)', '\($0.value)', false)" }.joined(separator: ", ")
    }

    /// What opens each transaction: `BEGIN`, then the settings that could not be set for the session.
    private var transactionOpening: [String] {
        ["BEGIN"] + (preparesStatements ? [] : settings.map { "SET LOCAL \($0.name) = \($0.value)" })
    }

    deinit { PQfinish(handle) }

    /// Calls `connect` with libpq keywords and values: ModalStack's defaults, then the connection
    /// string (expanded by libpq, so what it says wins). By default a server that stops answering
    /// fails a connection attempt after 5 s and a call after 10 s without an acknowledgement, instead
    /// of holding a thread for the minutes TCP would take.
    static func withDefaults<Result>(
        _ connectionString: String,
        _ connect: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<UnsafePointer<CChar>?>) -> Result
    ) -> Result {
        let pairs = [("connect_timeout", "5"), ("tcp_user_timeout", "10000"), ("dbname", connectionString)]
        let keywords: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.0) } + [nil]
        let values: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.1) } + [nil]
        defer { for pointer in keywords + values { free(pointer) } }
        return keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywords in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
                connect(keywords.baseAddress!, values.baseAddress!)
            }
        }
    }

    /// The value of a connection option as libpq settled it (`connect_timeout`, say).
    func option(_ keyword: String) -> String? {
        guard let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let name = option.pointee.keyword {
            if String(cString: name) == keyword { return option.pointee.val.map { String(cString: $0) } }
            option += 1
        }
        return nil
    }

    /// Whether the connection still works as far as libpq knows (it learns of a loss on use).
    var isUsable: Bool { PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Runs one statement with text parameters (`$1`, `$2`, … ; nil is NULL) and returns its rows.
    /// With ``preparesStatements``, each statement is prepared once per connection, on its first
    /// use: the server parses and plans it once, not on every call.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?]) throws(PostgresError) -> PostgresRows {
        let name = preparesStatements ? try prepared(sql, parameterCount: parameters.count) : nil
        let result = Self.withValues(parameters) { values, count in
            if let name {
                PQexecPrepared(handle, name, count, values, nil, nil, 0)
            } else {
                PQexecParams(handle, sql, count, nil, values, nil, nil, 0)
            }
        }
        let rows = try PostgresRows(result, connection: handle)
        succeeded += 1
        return rows
    }

    /// One statement of a ``pipeline(_:)``: its text and its text parameters.
    struct Statement {
        let sql: String
        let parameters: [String?]
    }

    /// How many statements of a pipeline go out before their results are read: the results of
    /// more could fill the server's socket buffer while this connection (blocking) still sends.
    static let pipelineChunk = 64

    /// Runs `statements` in order without waiting for each one's result (libpq's pipeline mode):
    /// one round trip per ``pipelineChunk`` of them rather than one each. A statement that fails
    /// makes the rest fail unrun (inside a transaction, the transaction then fails); the first
    /// error is thrown once every result is read.
    func pipeline(_ statements: [Statement]) throws(PostgresError) -> [PostgresRows] {
        guard PQenterPipelineMode(handle) == 1 else { throw PostgresError(result: nil, connection: handle) }
        defer {
            PQexitPipelineMode(handle)
            pipelinePrepared = [:]
        }
        var rows: [PostgresRows] = []
        var firstError: PostgresError?
        var start = 0
        while start < statements.count {
            let chunk = statements[start..<min(start + Self.pipelineChunk, statements.count)]
            start = chunk.endIndex
            var preparing: [(sql: String, name: String)?] = []
            for statement in chunk {
                let (sent, prepared) = send(statement)
                guard sent else { throw PostgresError(result: nil, connection: handle) }
                if let prepared { preparing.append(prepared) }
                preparing.append(nil)
            }
            if start == statements.count {
                guard PQpipelineSync(handle) == 1 else { throw PostgresError(result: nil, connection: handle) }
            } else {
                guard PQsendFlushRequest(handle) == 1, PQflush(handle) == 0 else {
                    throw PostgresError(result: nil, connection: handle)
                }
            }
            for expected in preparing {
                let result = PQgetResult(handle)
                // Each command's results end with a null result.
                defer { while let extra = PQgetResult(handle) { PQclear(extra) } }
                if let (sql, name) = expected {
                    if PQresultStatus(result) == PGRES_COMMAND_OK { preparedNames[sql] = name }
                    PQclear(result)
                    continue
                }
                do {
                    rows.append(try PostgresRows(result, connection: handle))
                    succeeded += 1
                } catch {
                    if firstError == nil { firstError = error }
                }
            }
        }
        // The sync's own result ends the pipeline.
        if let sync = PQgetResult(handle) {
            let status = PQresultStatus(sync)
            PQclear(sync)
            if status != PGRES_PIPELINE_SYNC, firstError == nil {
                firstError = PostgresError(result: nil, connection: handle)
            }
        }
        if let firstError {
            // A result read before libpq saw the connection close did not know it was lost.
            throw PostgresError(
                sqlState: firstError.sqlState, message: firstError.message,
                connectionBroken: firstError.connectionBroken || PQstatus(handle) != CONNECTION_OK)
        }
        return rows
    }

    /// Sends one statement of a pipeline, preparing it first when it is the first use of its text
    /// here (the name is kept once the server confirms it). Returns whether libpq took it, and the
    /// statement prepared, if any.
    private func send(_ statement: Statement) -> (sent: Bool, prepared: (sql: String, name: String)?) {
        var prepared: (sql: String, name: String)?
        var name: String?
        if preparesStatements {
            if let known = preparedNames[statement.sql] ?? pipelinePrepared[statement.sql] {
                name = known
            } else {
                let fresh = nextStatementName()
                guard PQsendPrepare(handle, fresh, statement.sql, Int32(statement.parameters.count), nil) == 1 else {
                    return (false, nil)
                }
                pipelinePrepared[statement.sql] = fresh
                prepared = (statement.sql, fresh)
                name = fresh
            }
        }
        let sent = Self.withValues(statement.parameters) { values, count in
            if let name {
                PQsendQueryPrepared(handle, name, count, values, nil, nil, 0)
            } else {
                PQsendQueryParams(handle, statement.sql, count, nil, values, nil, nil, 0)
            }
        }
        return (sent == 1, prepared)
    }

    /// Calls `body` with text parameters as libpq takes them (C strings, nil for NULL) and their
    /// count; the copies live until `body` returns.
    static func withValues<Result>(
        _ parameters: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?, Int32) -> Result
    ) -> Result {
        var copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                body(values.baseAddress, Int32(values.count))
            }
        }
    }

    /// The names of the statements prepared on this connection, by their text.
    private var preparedNames: [String: String] = [:]
    /// Those a pipeline under way sent to be prepared, not confirmed yet.
    private var pipelinePrepared: [String: String] = [:]
    private var statementsNamed = 0

    /// A name no statement on this connection had, even one whose preparation failed.
    private func nextStatementName() -> String {
        defer { statementsNamed += 1 }
        return "ms\(statementsNamed)"
    }

    /// The name of `sql` prepared on this connection, preparing it first if needed.
    private func prepared(_ sql: String, parameterCount: Int) throws(PostgresError) -> String {
        if let name = preparedNames[sql] { return name }
        let name = nextStatementName()
        _ = try PostgresRows(PQprepare(handle, name, sql, Int32(parameterCount), nil), connection: handle)
        preparedNames[sql] = name
        return name
    }

    /// Runs `sql`, which may hold several statements without parameters (a migration, say).
    @discardableResult
    func execute(_ sql: String) throws(PostgresError) -> PostgresRows {
        let rows = try PostgresRows(PQexec(handle, sql), connection: handle)
        succeeded += 1
        return rows
    }

    /// How a transaction's body wants it to end.
    enum TransactionEnd {
        case commit
        case rollBack
    }

    /// Runs `statements` in a transaction, sent in one pipeline with its `BEGIN`; it ends as `end`
    /// says of their rows, or rolled back when one fails. Returns how it ended.
    func transaction(pipelining statements: [Statement], _ end: ([PostgresRows]) -> TransactionEnd)
        throws(PostgresError) -> TransactionEnd
    {
        let opening = transactionOpening
        let rows: [PostgresRows]
        do {
            rows = try pipeline(opening.map { Statement(sql: $0, parameters: []) } + statements)
        } catch {
            if !error.connectionBroken { _ = try? execute("ROLLBACK") }
            throw error
        }
        let decided = end(Array(rows.dropFirst(opening.count)))
        try execute(decided == .commit ? "COMMIT" : "ROLLBACK")
        return decided
    }

    /// Runs `body` in a transaction, which ends as `body` says, or rolled back when it throws;
    /// returns how it ended.
    @discardableResult
    func transaction(_ body: () throws(PostgresError) -> TransactionEnd) throws(PostgresError) -> TransactionEnd {
        try execute(transactionOpening.joined(separator: "; "))
        let end: TransactionEnd
        do {
            end = try body()
        } catch {
            if !error.connectionBroken { _ = try? execute("ROLLBACK") }
            throw error
        }
        try execute(end == .commit ? "COMMIT" : "ROLLBACK")
        return end
    }
}

/// A statement's rows, copied out of libpq's result (which is freed at once), as text or NULL.
struct PostgresRows {
    let columns: Int
    let rows: [[String?]]
    /// How many rows the statement changed (`PQcmdTuples`), 0 for a query.
    let affected: Int

    init(_ result: OpaquePointer?, connection: OpaquePointer) throws(PostgresError) {
        defer { PQclear(result) }
        guard let result else { throw PostgresError(result: nil, connection: connection) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw PostgresError(result: result, connection: connection)
        }
        columns = Int(PQnfields(result))
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        var rows: [[String?]] = []
        let count = PQntuples(result)
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            rows.append(
                (0..<Int32(columns)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
        }
        self.rows = rows
    }

    /// The first row's first value, if any.
    var scalar: String? { rows.first?.first ?? nil }
}

/// `bytea` in PostgreSQL's hex text form (`\x0a1b…`), both ways.
enum PostgresBytes {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        text.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// One-dimensional arrays in PostgreSQL's text form (`{"a","b"}`, `{1,NULL}`), for parameters.
enum PostgresArray {
    /// Each element double-quoted, with its quotes and backslashes escaped by a backslash.
    static func text(_ elements: [String]) -> String {
        var text = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in element {
                if character == "\"" || character == "\\" { text += "\\" }
                text.append(character)
            }
            text += "\""
        }
        return text + "}"
    }

    static func bigint(_ elements: [Int64?]) -> String {
        "{" + elements.map { $0.map { String($0) } ?? "NULL" }.joined(separator: ",") + "}"
    }
}
