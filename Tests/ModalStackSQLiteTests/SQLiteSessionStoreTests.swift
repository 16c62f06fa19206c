import Foundation
import ModalStackCore
import ModalStackStore
import ModalStackTestSupport
import Testing

@testable import ModalStackSQLite

extension TemporaryDirectory {
    var databasePath: String { appending("modalstack.sqlite") }
}

private func sampleSession(_ id: String, version: Int64 = 1, stackSize: Int = 2) -> Session {
    StoreFixtures.session(id, version: version, stackSize: stackSize)
}

private func save(_ session: Session, dismissed: [Presentation] = [], response: StoredResponse? = nil) -> SessionWrite {
    StoreFixtures.save(session, dismissed: dismissed, response: response)
}

private func dismissed(_ presentation: Presentation, at milliseconds: Int64) -> Presentation {
    StoreFixtures.dismissed(presentation, at: milliseconds)
}

/// What only the SQLite engine does: its file, its WAL and its migrations. What every engine
/// promises is in ModalStackStoreContractTests.
@Suite("SQLite session store")
struct SQLiteSessionStoreTests {
    @Test("a new file is created, migrated, and reads nothing")
    func freshFile() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try store.session(id: "missing") == nil)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(FileManager.default.fileExists(atPath: directory.databasePath))
    }

    @Test("many writes in one commit all land, and survive reopening the file")
    func batchAndReopen() throws {
        let directory = try TemporaryDirectory()
        let sessions = (0..<50).map { sampleSession("s\($0)", stackSize: $0 % 4) }
        do {
            let store = try SQLiteSessionStore(path: directory.databasePath, durability: .full)
            try store.commit(sessions.map { save($0) } + [.delete(sessionID: "s7")])
        }
        let reopened = try SQLiteSessionStore(path: directory.databasePath)
        for session in sessions {
            let expected: Session? = session.id == "s7" ? nil : session
            #expect(try reopened.session(id: session.id) == expected)
        }
    }

    @Test(
        "under a steady stream of commits the WAL stays bounded (checkpointed off the writer), and every commit reads back"
    )
    func walStaysBounded() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        let walPath = directory.databasePath + "-wal"
        var latest: [String: Session] = [:]
        var largestWAL = 0
        // Commits of 4 random sessions each: several pages per commit, far more than the WAL bound in all.
        var generator = SystemRandomNumberGenerator()
        for round in 0..<1500 {
            var writes: [SessionWrite] = []
            for _ in 0..<4 {
                let id = "s\(Int.random(in: 0..<2000, using: &generator))"
                let version = (latest[id]?.version ?? 0) + 1
                var session = sampleSession(id, version: version, stackSize: 1 + round % 3)
                session.ttlSeconds = Int64(100 + round)
                latest[id] = session
                writes.append(save(session))
            }
            try store.commit(writes)
            let size = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size]) as? Int
            largestWAL = max(largestWAL, size ?? 0)
        }
        #expect(try store.integrityCheck() == ["ok"])
        // Past writerThresholdFrames the writer waits for a background checkpoint under way and
        // finishes it, so the WAL ends about one commit past that; a frame is a 4 KiB page and a
        // 24-byte header. (Without the wait, a slow background checkpoint let it reach 6,200 frames.)
        let bound = (WALCheckpointer.writerThresholdFrames + 500) * (4096 + 24)
        print(
            "SQLiteSessionStoreTests.walStaysBounded: 1,500 commits of 4 sessions, largest WAL \(largestWAL / 1024) KiB (bound \(bound / 1024) KiB)"
        )
        #expect(largestWAL > 0 && largestWAL <= bound, "the WAL grew to \(largestWAL) bytes")
        for (id, session) in latest {
            #expect(try store.session(id: id) == session)
        }
    }

    @Test("a schema-1 database is migrated in place: sessions, dismissed presentations, the event log and expiry kept")
    func migratesSchemaOne() throws {
        let directory = try TemporaryDirectory()
        let live = sampleSession("live")
        let dismissedOne = dismissed(live.stack[0], at: 1_790_000_000_900)
        let now = Timestamp(millisecondsSinceEpoch: 1_790_000_001_000)
        guard case .save(let update) = save(live, dismissed: [dismissedOne]) else { return }
        let loggedChange = update.change
        do {
            let connection = try SQLiteConnection(path: directory.databasePath, create: true)
            try connection.execute(Schema.migrations[0])
            try connection.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = 1")
            let insertSession = try connection.statement(
                "INSERT INTO sessions (id, version, created_at, updated_at, stack, queue, ttl, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            )
            for (id, expiresAt) in [
                ("live", live.expiresAt.millisecondsSinceEpoch), ("expired", now.millisecondsSinceEpoch - 1),
            ] {
                try insertSession.run([
                    .text(id), .integer(live.version), .integer(live.createdAt.millisecondsSinceEpoch),
                    .integer(live.updatedAt.millisecondsSinceEpoch), .text(RowCodec.encode(live.stack)),
                    .text(RowCodec.encode(live.queue)), .integer(live.ttlSeconds), .integer(expiresAt),
                ])
            }
            try connection.statement(
                "INSERT INTO dismissed_presentations (session_id, id, sequence, document) VALUES (?, ?, ?, ?)"
            )
            .run([.text("live"), .text(dismissedOne.id), .integer(1 << 16), .text(dismissedOne.json.jsonText)])
            try connection.statement("INSERT INTO changes (session_id, version, record) VALUES (?, ?, ?)")
                .run([.text("live"), .integer(live.version), .text(loggedChange.json.jsonText)])
        }
        let store = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try store.session(id: "live") == live)
        #expect(try store.dismissedPresentation(id: dismissedOne.id, sessionID: "live") == dismissedOne)
        #expect(try store.change(sessionID: "live", version: live.version) == loggedChange)
        #expect(try store.expiredSessionIDs(at: now, limit: 10) == ["expired"])
        #expect(try store.integrityCheck() == ["ok"])
        // And the migrated file takes writes as a new one does.
        var next = live
        next.version += 1
        try store.commit([save(next, dismissed: [dismissed(live.stack[1], at: 1_790_000_000_950)])])
        #expect(try store.session(id: "live") == next)
        #expect(try store.dismissedPresentation(id: live.stack[1].id, sessionID: "live") != nil)
        #expect(try store.dismissedPresentation(id: dismissedOne.id, sessionID: "live") == dismissedOne)
        #expect(
            try store.changes(sessionID: "live", after: 0, eventLimit: 10).map(\.version) == [
                live.version, next.version,
            ])
    }

    @Test("a schema-6 file's session log is recovered through the column renamed from retired to dismissed")
    func migratesSchemaSix() throws {
        let directory = try TemporaryDirectory()
        let first = sampleSession("s")
        var second = sampleSession("s", version: 2, stackSize: 1)
        second.updatedAt = Timestamp(millisecondsSinceEpoch: first.updatedAt.millisecondsSinceEpoch + 10)
        let dismissedOne = dismissed(first.stack[1], at: 1_790_000_000_600)
        do {
            // What a schema-6 build killed after committing `second` leaves: the row at version 1,
            // version 2 and what it dismissed only in the session log.
            let connection = try SQLiteConnection(path: directory.databasePath, create: true)
            for migration in Schema.migrations[0..<6] { try connection.execute(migration) }
            try connection.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = 6")
            try connection.statement(
                """
                INSERT INTO sessions (
                    id, version, created_at, updated_at, stack, queue, ttl, expires_at, expiry_bucket, updated_bucket, path)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).run([
                .text("s"), .integer(1), .integer(first.createdAt.millisecondsSinceEpoch),
                .integer(first.updatedAt.millisecondsSinceEpoch), .text(RowCodec.encode(first.stack)),
                .text(RowCodec.encode(first.queue)), .integer(first.ttlSeconds),
                .integer(first.expiresAt.millisecondsSinceEpoch),
                .integer(first.expiresAt.millisecondsSinceEpoch / Schema.expiryBucketMilliseconds),
                .integer(first.updatedAt.millisecondsSinceEpoch / Schema.updatedBucketMilliseconds), .text("[]"),
            ])
            try connection.statement(
                """
                INSERT INTO session_log (session_id, version, created_at, updated_at, ttl, stack, queue, retired, path)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).run([
                .text("s"), .integer(2), .integer(second.createdAt.millisecondsSinceEpoch),
                .integer(second.updatedAt.millisecondsSinceEpoch), .integer(second.ttlSeconds),
                .text(RowCodec.encode(second.stack)), .text(RowCodec.encode(second.queue)),
                .text(RowCodec.encode([dismissedOne])), .text("[]"),
            ])
        }
        var script = ScriptedSession(continuing: second)
        do {
            let store = try SQLiteSessionStore(path: directory.databasePath)
            #expect(try store.session(id: "s") == second)
            #expect(try store.dismissedPresentation(id: dismissedOne.id, sessionID: "s") == dismissedOne)
            #expect(try storedVersions(directory) == ["s": 2])
            #expect(try tableNames(directory).contains("session_log") == false)
            #expect(try store.integrityCheck() == ["ok"])
            // And the migrated file logs as a new one does: the change alone, replayed when reopened.
            try store.commit([script.run(.dismiss(DismissRequest(.top, force: true)))])
            #expect(try storedVersions(directory) == ["s": 2])
        }  // Dropped without close(): version 3 is in its change record only.
        let reopened = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try reopened.session(id: "s") == script.session)
        #expect(try reopened.dismissedPresentation(id: second.stack[0].id, sessionID: "s")?.state == .dismissed)
        #expect(try storedVersions(directory) == ["s": 3])
    }

    @Test("a file that is not a database is refused and left untouched")
    func garbageFile() throws {
        let directory = try TemporaryDirectory()
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: directory.databasePath))
        let error = #expect(throws: StoreError.self) { try SQLiteSessionStore(path: directory.databasePath) }
        #expect(error?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == garbage)
    }

    @Test("another application's SQLite database is refused and left untouched")
    func foreignDatabase() throws {
        let directory = try TemporaryDirectory()
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = [
            "python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table notes(x)'); c.commit()",
            directory.databasePath,
        ]
        try sqlite.run()
        // Not waitUntilExit(): its run loop crashes the ThreadSanitizer run (see ModalStackTestSupport's ServerProcess).
        while sqlite.isRunning { usleep(1000) }
        try #require(sqlite.terminationStatus == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.databasePath))
        let error = #expect(throws: StoreError.self) { try SQLiteSessionStore(path: directory.databasePath) }
        #expect(error?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == before)
    }

    @Test("a path whose directory does not exist fails as unavailable")
    func missingDirectory() {
        let error = #expect(throws: StoreError.self) {
            try SQLiteSessionStore(path: "/nonexistent-dir-\(UUID().uuidString)/db.sqlite")
        }
        #expect(error?.kind == .unavailable)
    }

    @Test("a change is durable as its record alone; a store not closed replays the records onto the rows when opened")
    func recoveryFromTheChangeRecords() throws {
        let directory = try TemporaryDirectory()
        var a = ScriptedSession("a")
        var b = ScriptedSession("b")
        var c = ScriptedSession("c")
        var dismissedOne: Presentation?
        do {
            let store = try SQLiteSessionStore(path: directory.databasePath)
            try store.commit([a.create(), b.create(), c.create()])
            try store.commit([a.present("first"), b.present("first")])
            try store.commit([a.present("second", content: .alert(AlertContent(title: "Sure?"))), c.present("first")])
            let dismissal = try a.dismiss()
            if case .save(let update) = dismissal { dismissedOne = update.dismissed.first }
            try store.commit([dismissal])
            // b is deleted with unwritten changes, then created again: its first life stays gone.
            try store.commit([b.present("second"), .delete(sessionID: "b")])
            b = ScriptedSession("b", at: 1_790_000_100_000)
            try store.commit([b.create(ttlSeconds: 60)])
            #expect(try store.session(id: "a") == a.session)
            #expect(try store.dismissedPresentation(id: try #require(dismissedOne).id, sessionID: "a") == dismissedOne)
            // Only the change records hold the newer versions: the rows are as first written.
            #expect(try storedVersions(directory) == ["a": 1, "b": 1, "c": 1])
        }  // Dropped without close(): what a killed process leaves.
        let reopened = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try reopened.session(id: "a") == a.session)
        #expect(try reopened.session(id: "b") == b.session)
        #expect(try reopened.session(id: "c") == c.session)
        #expect(try reopened.dismissedPresentation(id: try #require(dismissedOne).id, sessionID: "a") == dismissedOne)
        #expect(try storedVersions(directory) == ["a": 4, "b": 1, "c": 2])
        #expect(try reopened.changes(sessionID: "a", after: 0, eventLimit: 100).map(\.version) == [1, 2, 3, 4])
        #expect(try reopened.integrityCheck() == ["ok"])
    }

    @Test(
        "a row is written back once its oldest unwritten change is writeBackAge changes old, and when the store closes")
    func writeBack() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath, writeBackAge: 3)
        var s = ScriptedSession("s")
        try store.commit([s.create()])
        for _ in 2...3 { try store.commit([s.present("screen")]) }
        #expect(try storedVersions(directory) == ["s": 1])
        // The third unwritten change makes the first three old: the row catches up.
        try store.commit([s.present("screen")])
        #expect(try storedVersions(directory) == ["s": 4])
        try store.commit([s.dismiss()])
        #expect(try storedVersions(directory) == ["s": 4])
        store.close()
        #expect(try storedVersions(directory) == ["s": 5])
    }

    @Test("a row is written back before the event log would delete a change it does not hold")
    func writeBackBeforePruning() throws {
        let directory = try TemporaryDirectory()
        var retention = RetentionPolicy.standard
        retention.eventLogSize = 3
        var s = ScriptedSession("s")
        do {
            let store = try SQLiteSessionStore(path: directory.databasePath, retention: retention)
            try store.commit([s.create()])
            for _ in 0..<100 {
                try store.commit([s.present("screen")])
                try store.commit([s.dismiss()])
            }
            #expect(try storedVersions(directory)["s"].map { s.session.version - $0 < 3 } == true)
        }  // Dropped without close().
        let reopened = try SQLiteSessionStore(path: directory.databasePath, retention: retention)
        #expect(try reopened.session(id: "s") == s.session)
        #expect(try reopened.changes(sessionID: "s", after: 0, eventLimit: 100).map(\.version) == [199, 200, 201])
    }

    @Test("the listing and the expiry sweep judge an unwritten session by its newest version, not its row")
    func unwrittenSessionsListedAndSwept() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        var sessions = ["a", "b", "c"].map { sampleSession($0) }
        for index in sessions.indices { sessions[index].ttlSeconds = 60 }
        try store.commit(sessions.map { save($0) })
        var newerB = sessions[1]
        newerB.version = 2
        newerB.updatedAt = Timestamp(millisecondsSinceEpoch: newerB.updatedAt.millisecondsSinceEpoch + 30_000)
        try store.commit([save(newerB)])
        let beforeExpiry = Timestamp(millisecondsSinceEpoch: sessions[0].updatedAt.millisecondsSinceEpoch + 1)
        #expect(try store.recentSessions(after: nil, limit: 10, at: beforeExpiry).map(\.id) == ["b", "c", "a"])
        #expect(try store.recentSessions(after: nil, limit: 1, at: beforeExpiry) == [newerB])
        let cursor = SessionCursor(updatedAt: newerB.updatedAt, id: "b")
        #expect(try store.recentSessions(after: cursor, limit: 1, at: beforeExpiry).map(\.id) == ["c"])
        // When a and c have expired, b's row would say so too; its newest version lives on.
        let afterExpiry = Timestamp(millisecondsSinceEpoch: sessions[0].expiresAt.millisecondsSinceEpoch + 1)
        #expect(try Set(store.expiredSessionIDs(at: afterExpiry, limit: 10)) == ["a", "c"])
        #expect(try store.recentSessions(after: nil, limit: 10, at: afterExpiry) == [newerB])
    }
}

/// Each session's version as its row holds it, read beside the store.
private func storedVersions(_ directory: TemporaryDirectory) throws -> [String: Int64] {
    let connection = try SQLiteConnection(path: directory.databasePath, readOnly: true)
    let statement = try connection.statement("SELECT id, version FROM sessions")
    try statement.bind([])
    defer { statement.reset() }
    var versions: [String: Int64] = [:]
    while try statement.step() { versions[statement.text(at: 0)] = statement.integer(at: 1) }
    return versions
}

private func tableNames(_ directory: TemporaryDirectory) throws -> [String] {
    let connection = try SQLiteConnection(path: directory.databasePath, readOnly: true)
    let statement = try connection.statement("SELECT name FROM sqlite_schema WHERE type = 'table'")
    try statement.bind([])
    defer { statement.reset() }
    var names: [String] = []
    while try statement.step() { names.append(statement.text(at: 0)) }
    return names
}
