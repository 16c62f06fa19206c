import Glibc
import ModalStackTestSupport
import Synchronization
import Testing

@testable import ModalStackPostgres

@Suite(
    "PostgreSQL listener",
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
)
struct PostgresListenerTests {
    /// Needs quoting: LISTEN keeps its capitals, spaces and quotes only as a quoted identifier.
    static let channel = #"Modal "Events" 1"#
    /// What the listener's connection is called in pg_stat_activity, to find its backend.
    private static let applicationName = "modalstack-listener"

    /// A new database on the shared server: its connection string.
    private func newDatabase() throws -> String {
        let server = try PostgresServer.shared()
        return server.connectionString(database: try server.createDatabase("listener"))
    }

    @Test("NOTIFYs on the channel arrive in order with their payloads; other channels' do not")
    func deliversInOrder() throws {
        let database = try newDatabase()
        let received = Received()
        let listener = received.listener(database)
        listener.start()
        defer { listener.stop() }
        #expect(listener.isListening)
        let sender = try PostgresConnection(database)
        try sender.transaction { () throws(PostgresError) in
            for payload in ["a", "b", "", "a "] { try notify(sender, payload) }
            try notify(sender, "another channel", channel: Self.channel.lowercased())
            try notify(sender, "yet another channel", channel: "other")
            return .commit
        }
        for payload in ["c", "d", #"é ✓ "quoted" 'x'"#] { try notify(sender, payload) }
        let expected = ["a", "b", "", "a ", "c", "d", #"é ✓ "quoted" 'x'"#]
        // In order: once the last has come, one of another channel would have come before it.
        #expect(waitUntil { received.payloads.count >= expected.count })
        #expect(received.payloads == expected)
        #expect(received.resubscriptions == 0)
    }

    @Test("the listener's backend terminated: LISTEN runs again, onResubscribed, and later NOTIFYs arrive")
    func resubscribesAfterTermination() throws {
        let database = try newDatabase()
        let received = Received()
        let listener = received.listener(database)
        listener.start()
        defer { listener.stop() }
        let sender = try PostgresConnection(database)
        try notify(sender, "before")
        #expect(waitUntil { received.payloads == ["before"] })
        let first = try listenerBackends(sender)
        #expect(first.count == 1)
        let terminated = try sender.execute("SELECT pg_terminate_backend($1::integer)", [first.first]).scalar
        #expect(terminated == "t")
        #expect(waitUntil { received.resubscriptions == 1 && listener.isListening })
        let second = try listenerBackends(sender)
        #expect(second.count == 1 && second != first)
        try notify(sender, "after")
        #expect(waitUntil { received.payloads == ["before", "after"] })
        #expect(received.resubscriptions == 1)
    }

    @Test("started while the server is down: start returns and retries; after each restart LISTEN runs again")
    func serverRestart() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let database = server.connectionString(database: try server.createDatabase("listener"))
        try server.stopServer()
        let received = Received()
        let listener = received.listener(database)
        listener.start()
        defer { listener.stop() }
        #expect(!listener.isListening)
        try server.startServer()
        #expect(waitUntil { received.resubscriptions == 1 && listener.isListening })
        try notify(try PostgresConnection(database), "first")
        #expect(waitUntil { received.payloads == ["first"] })

        try server.stopServer()
        #expect(waitUntil { !listener.isListening })
        try server.startServer()
        #expect(waitUntil { received.resubscriptions == 2 && listener.isListening })
        try notify(try PostgresConnection(database), "second")
        #expect(waitUntil { received.payloads == ["first", "second"] })
    }

    @Test("stop() wakes the thread blocked in poll at once; a second stop() does nothing")
    func stopWakesPoll() throws {
        let listener = Received().listener(try newDatabase())
        listener.start()
        #expect(listener.isListening)
        // On a thread of its own, so that a stop() that never returns fails the test instead of hanging it.
        let took = Shared<Duration?>(nil)
        startThread {
            let duration = ContinuousClock().measure { listener.stop() }
            took.set(duration)
        }
        #expect(waitUntil { took.value != nil })
        let duration = try #require(took.value)
        #expect(duration < .milliseconds(250), "stop() took \(duration)")
        #expect(!listener.isListening)
        #expect(ContinuousClock().measure { listener.stop() } < .milliseconds(50))
    }

    @Test("stop() interrupts the wait between attempts to connect to a server that is not there")
    func stopInterruptsBackoff() throws {
        let listener = Received().listener("host=127.0.0.1 port=1 dbname=nothing")
        listener.start()
        #expect(!listener.isListening)
        // Nothing to poll: the attempts fail unseen. After 1.6 s the wait between them has grown
        // to 0.8–1 s, which an uninterruptible wait would mostly sit out.
        usleep(1_600_000)
        let duration = ContinuousClock().measure { listener.stop() }
        #expect(duration < .milliseconds(250), "stop() took \(duration)")
    }

    @Test("stop() during a run of slow callbacks waits for the one in progress only; none runs after it")
    func noCallbackAfterStop() throws {
        let database = try newDatabase()
        let calls = Shared((started: 0, finished: 0))
        let listener = PostgresListener(
            connectionString: database, channel: Self.channel,
            onNotification: { _ in
                calls.update { $0.started += 1 }
                usleep(2_000)
                calls.update { $0.finished += 1 }
            }, onResubscribed: {})
        // A second listener shows when the first would have seen a NOTIFY sent after the stop.
        let control = Received()
        let controlListener = control.listener(database)
        listener.start()
        controlListener.start()
        defer { controlListener.stop() }
        let sender = try PostgresConnection(database)
        try sender.transaction { () throws(PostgresError) in
            for number in 0..<200 { try notify(sender, String(number)) }
            return .commit
        }
        #expect(waitUntil { calls.value.finished >= 1 })
        let duration = ContinuousClock().measure { listener.stop() }
        let atStop = calls.value
        #expect(atStop.started == atStop.finished, "a callback still runs")
        try notify(sender, "after the stop")
        #expect(waitUntil { control.payloads.last == "after the stop" })
        #expect(calls.value == atStop)
        #expect(atStop.finished < 200, "the rest of the batch is skipped")
        #expect(duration < .milliseconds(250), "stop() took \(duration)")
    }

    /// The process ids of the listeners' backends in the connection's database.
    private func listenerBackends(_ connection: PostgresConnection) throws -> [String] {
        try connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
            [Self.applicationName]
        ).rows.compactMap { $0[0] }
    }

    /// What a listener's callbacks saw.
    private final class Received: Sendable {
        private let seen = Shared((payloads: [String](), resubscriptions: 0))
        var payloads: [String] { seen.value.payloads }
        var resubscriptions: Int { seen.value.resubscriptions }

        /// A listener on ``PostgresListenerTests/channel`` that records into this.
        func listener(_ connectionString: String) -> PostgresListener {
            PostgresListener(
                connectionString: "\(connectionString) application_name=\(PostgresListenerTests.applicationName)",
                channel: PostgresListenerTests.channel,
                onNotification: { payload in self.seen.update { $0.payloads.append(payload) } },
                onResubscribed: { self.seen.update { $0.resubscriptions += 1 } })
        }
    }
}

/// `pg_notify` on `connection`: delivered when its transaction commits.
private func notify(
    _ connection: PostgresConnection, _ payload: String, channel: String = PostgresListenerTests.channel
) throws(PostgresError) {
    try connection.execute("SELECT pg_notify($1, $2)", [channel, payload])
}

/// A value that a test and other threads share.
private final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    func update(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}
