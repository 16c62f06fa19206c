import Dispatch
import Locking

/// Up to `size` connections to one database, opened on demand and reused. A caller holds a
/// connection for one call (a read, or a whole transaction); a connection that broke is dropped,
/// and the next caller opens a new one, so the pool heals itself after the server restarts.
final class PostgresPool: Sendable {
    let connectionString: String
    let size: Int
    /// See ``PostgresConnection/init(_:preparesStatements:settings:)``.
    let preparesStatements: Bool
    let settings: [(name: String, value: String)]
    private let idle = LockedValue<[PostgresConnection]>([])
    private let slots: DispatchSemaphore
    private let closed = LockedValue(false)
    private let acquireTimeoutNanoseconds: UInt64

    init(
        connectionString: String, size: Int, preparesStatements: Bool = true,
        settings: [(name: String, value: String)] = [],
        acquireTimeoutMilliseconds: Int = 30_000
    ) {
        precondition(size > 0, "a pool holds at least one connection")
        self.connectionString = connectionString
        self.size = size
        self.preparesStatements = preparesStatements
        self.settings = settings
        slots = DispatchSemaphore(value: size)
        acquireTimeoutNanoseconds = UInt64(acquireTimeoutMilliseconds) * 1_000_000
    }

    /// Runs `body` on a connection of the pool; waits while all `size` are in use.
    func withConnection<Result>(_ body: (PostgresConnection) throws(PostgresError) -> Result) throws(PostgresError)
        -> Result
    {
        guard !closed.withLock({ $0 }) else { throw Self.closedError }
        guard slots.wait(timeout: .now() + .nanoseconds(Int(acquireTimeoutNanoseconds))) == .success else {
            throw PostgresError(
                sqlState: nil, message: "all \(size) connections to the database stayed busy", connectionBroken: true)
        }
        defer { slots.signal() }
        let reused = idle.withLock { $0.popLast() }
        if let reused {
            let before = reused.succeeded
            do throws(PostgresError) {
                return try use(reused, body)
            } catch  where error.connectionBroken && reused.succeeded == before {
                // An idle connection that broke while it waited (the server restarted, say) failed
                // on the call's first statement: the server did nothing of it, so it runs again
                // on a new connection rather than failing a caller for a loss it could not see.
            }
        }
        return try use(try open(), body)
    }

    private func open() throws(PostgresError) -> PostgresConnection {
        try PostgresConnection(
            connectionString, preparesStatements: preparesStatements, settings: settings)
    }

    private func use<Result>(
        _ connection: PostgresConnection, _ body: (PostgresConnection) throws(PostgresError) -> Result
    ) throws(PostgresError) -> Result {
        let result: Result
        do throws(PostgresError) {
            result = try body(connection)
        } catch {
            giveBack(connection)
            throw error
        }
        giveBack(connection)
        return result
    }

    /// Keeps a connection for the next caller, unless it broke, is inside a transaction, or the pool closed.
    private func giveBack(_ connection: PostgresConnection) {
        guard connection.isUsable else { return }
        let keep = closed.withLock { !$0 }
        if keep { idle.withLock { $0.append(connection) } }
    }

    /// Closes the idle connections; calls from then on fail. Connections in use close when given back.
    func close() {
        closed.withLock { $0 = true }
        idle.withLock { $0.removeAll() }
    }

    static let closedError = PostgresError(sqlState: nil, message: "the store is closed", connectionBroken: true)
}
