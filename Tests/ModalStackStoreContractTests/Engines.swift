import ModalStackCore
import ModalStackStore
import ModalStackTestSupport
import Testing
import Timekeeping

@testable import ModalStackPostgres
@testable import ModalStackSQLite

/// A store under test, holding what keeps it alive (its file, its database), with a way to make
/// writes fail on purpose. It is a store itself: every call goes to the engine's store (`base`).
final class EngineUnderTest: ForwardingSessionStore, @unchecked Sendable {
    let base: any SessionStore
    /// Makes every later insert of a session with this id fail inside the engine (a trigger),
    /// so a test can see a failing write roll back the rest of its commit.
    let poison: (String) throws -> Void
    private let keepAlive: [AnyObject]

    init(store: any SessionStore, poison: @escaping (String) throws -> Void, keepAlive: [AnyObject]) {
        base = store
        self.poison = poison
        self.keepAlive = keepAlive
    }
}

/// What the contract tests need of an engine: a new, empty store with the given log size and time.
struct StoreEngine: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable (_ eventLogSize: Int, _ time: any TimeSource) throws -> EngineUnderTest

    var testDescription: String { name }

    func callAsFunction(eventLogSize: Int = RetentionPolicy.standard.eventLogSize, time: any TimeSource = ManualTime())
        throws
        -> EngineUnderTest
    {
        try make(eventLogSize, time)
    }

    static let sqlite = StoreEngine(name: "SQLite") { eventLogSize, time in
        let directory = try TemporaryDirectory()
        let path = directory.appending("contract.sqlite")
        let store = try SQLiteSessionStore(path: path, retention: retention(eventLogSize), time: time)
        return EngineUnderTest(
            store: store,
            poison: { id in
                let connection = try SQLiteConnection(path: path)
                try connection.execute(
                    """
                    CREATE TRIGGER poison BEFORE INSERT ON sessions WHEN NEW.id = '\(id)'
                    BEGIN SELECT RAISE(ABORT, 'poisoned by the test'); END
                    """)
            }, keepAlive: [directory])
    }

    static let postgres = StoreEngine(name: "PostgreSQL") { eventLogSize, time in
        let server = try PostgresServer.shared()
        let connectionString = server.connectionString(database: try server.createDatabase("contract"))
        let store = try PostgresSessionStore(
            connectionString: connectionString, retention: retention(eventLogSize), time: time)
        return EngineUnderTest(
            store: store,
            poison: { id in
                let connection = try PostgresConnection(connectionString)
                try connection.execute(
                    """
                    CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN IF NEW.id = '\(id)' THEN RAISE EXCEPTION 'poisoned by the test'; END IF; RETURN NEW; END $$;
                    CREATE TRIGGER poison BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION poison();
                    """)
            }, keepAlive: [server])
    }

    /// SQLite always; PostgreSQL when its binaries are installed (see ``PostgresServer``).
    static let all: [StoreEngine] = [.sqlite] + (PostgresServer.isAvailable ? [.postgres] : [])
}

@Suite("Store engines")
struct StoreEngineAvailabilityTests {
    @Test(
        "the PostgreSQL engine is in the contract suite",
        .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
    )
    func postgresRuns() throws {
        #expect(StoreEngine.all.map(\.name) == ["SQLite", "PostgreSQL"])
    }
}

/// The standard policy with the event log a test asks for.
private func retention(_ eventLogSize: Int) -> RetentionPolicy {
    var policy = RetentionPolicy.standard
    policy.eventLogSize = eventLogSize
    return policy
}
