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
    let contents: [ModalContent] = [
        .sheet(SheetOptions(detents: [.medium], interactiveDismissDisabled: true)), .fullScreenCover,
        .alert(AlertContent(title: "Delete?", buttons: [AlertButton(id: "cancel", label: "Cancel", role: .cancel)])),
    ]
    let stack = (0..<stackSize).map { index in
        Presentation(
            id: "\(id)-p\(index)", destination: "dest\(index)", key: "key\(index)",
            content: contents[index % contents.count],
            payload: ["index": JSONValue(index), "big": .number("12345678901234567890"), "text": "héllo \"q\""],
            locked: index == 0, requestedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + Int64(index)))
    }
    let queued = Presentation(
        id: "\(id)-q", destination: "later", key: "later",
        content: .progress(ProgressContent(message: "Wait", total: 3)),
        state: .queued, requestedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_100))
    return Session(
        id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000),
        updatedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_500), stack: stack,
        queue: stackSize > 1 ? [queued] : [])
}

/// A write of `session` as a change of its version.
private func save(_ session: Session, retired: [Presentation] = [], response: StoredResponse? = nil) -> SessionWrite {
    let change = SessionChange(
        sessionID: session.id, version: session.version, at: session.updatedAt,
        events: retired.map { SessionEvent(.dismissed, presentation: $0) } + [SessionEvent(.updated)],
        stackIDs: session.stack.map(\.id))
    return .save(SessionUpdate(session: session, retired: retired, change: change, response: response))
}

private func dismissed(_ presentation: Presentation, at milliseconds: Int64) -> Presentation {
    var retired = presentation
    retired.state = .dismissed
    retired.dismissedAt = Timestamp(millisecondsSinceEpoch: milliseconds)
    retired.result = ["buttonId": "cancel"]
    return retired
}

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

    @Test("a saved session reads back exactly, payload numbers and text included")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        let session = sampleSession("s1")
        try store.commit([save(session)])
        #expect(try store.session(id: "s1") == session)
    }

    @Test("a later version overwrites; createdAt stays; delete removes")
    func overwriteAndDelete() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        try store.commit([save(sampleSession("s1"))])
        var next = sampleSession("s1", version: 2, stackSize: 1)
        next.createdAt = Timestamp(millisecondsSinceEpoch: 5)
        try store.commit([save(next)])
        let read = try #require(try store.session(id: "s1"))
        #expect(read.version == 2)
        #expect(read.stack.count == 1)
        #expect(read.createdAt == sampleSession("s1").createdAt)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.session(id: "s1") == nil)
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
        let retired = dismissed(live.stack[0], at: 1_790_000_000_900)
        let now = Timestamp(millisecondsSinceEpoch: 1_790_000_001_000)
        guard case .save(let update) = save(live, retired: [retired]) else { return }
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
                    .integer(live.updatedAt.millisecondsSinceEpoch), .text(StoredSession.encode(live.stack)),
                    .text(StoredSession.encode(live.queue)), .integer(live.ttlSeconds), .integer(expiresAt),
                ])
            }
            try connection.statement(
                "INSERT INTO dismissed_presentations (session_id, id, sequence, document) VALUES (?, ?, ?, ?)"
            )
            .run([.text("live"), .text(retired.id), .integer(1 << 16), .text(retired.json.jsonText)])
            try connection.statement("INSERT INTO changes (session_id, version, record) VALUES (?, ?, ?)")
                .run([.text("live"), .integer(live.version), .text(loggedChange.json.jsonText)])
        }
        let store = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try store.session(id: "live") == live)
        #expect(try store.dismissedPresentation(id: retired.id, sessionID: "live") == retired)
        #expect(try store.change(sessionID: "live", version: live.version) == loggedChange)
        #expect(try store.expiredSessionIDs(at: now, limit: 10) == ["expired"])
        #expect(try store.integrityCheck() == ["ok"])
        // And the migrated file takes writes as a new one does.
        var next = live
        next.version += 1
        try store.commit([save(next, retired: [dismissed(live.stack[1], at: 1_790_000_000_950)])])
        #expect(try store.session(id: "live") == next)
        #expect(try store.dismissedPresentation(id: live.stack[1].id, sessionID: "live") != nil)
        #expect(try store.dismissedPresentation(id: retired.id, sessionID: "live") == retired)
        #expect(
            try store.changes(sessionID: "live", after: 0, eventLimit: 10).map(\.version) == [
                live.version, next.version,
            ])
    }

    @Test("expiry follows every save, whether it stays in its minute's bucket or moves to another")
    func expiryFollowsSaves() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        var session = sampleSession("s")
        session.ttlSeconds = 10
        for step in [Int64(0), 5_000, 200_000] {
            session.version += 1
            session.updatedAt = Timestamp(millisecondsSinceEpoch: 1_790_000_000_500 + step)
            try store.commit([save(session)])
            let expiry = session.expiresAt.millisecondsSinceEpoch
            #expect(try store.expiredSessionIDs(at: Timestamp(millisecondsSinceEpoch: expiry - 1), limit: 10) == [])
            #expect(try store.expiredSessionIDs(at: Timestamp(millisecondsSinceEpoch: expiry), limit: 10) == ["s"])
        }
    }

    @Test("dismissed presentations stay readable, the newest 64 per session, and go with their session")
    func dismissedHistory() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        let template = sampleSession("s1").stack[0]
        var session = sampleSession("s1")
        var retiredIDs: [String] = []
        for round in 0..<40 {
            session.version += 1
            let pair = (0..<2).map { index in
                var entry = template
                entry.id = "gone-\(round)-\(index)"
                return dismissed(entry, at: Int64(round))
            }
            retiredIDs += pair.map(\.id)
            try store.commit([save(session, retired: pair)])
        }
        let newest = try #require(try store.dismissedPresentation(id: "gone-39-1", sessionID: "s1"))
        #expect(newest.state == .dismissed)
        #expect(newest.result == ["buttonId": "cancel"])
        #expect(newest.content == template.content)
        let kept = try retiredIDs.filter { try store.dismissedPresentation(id: $0, sessionID: "s1") != nil }
        #expect(kept == Array(retiredIDs.suffix(SQLiteSessionStore.dismissedKeptPerSession)))
        #expect(try store.dismissedPresentation(id: "gone-39-1", sessionID: "other") == nil)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.dismissedPresentation(id: "gone-39-1", sessionID: "s1") == nil)
    }

    @Test("the event log keeps the newest changes per session, in order, and pages by events")
    func eventLog() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath, eventLogSize: 5)
        var session = sampleSession("s1")
        for version in 1...8 {
            session.version = Int64(version)
            try store.commit([save(session)])
        }
        let all = try store.changes(sessionID: "s1", after: 0, eventLimit: 100)
        #expect(all.map(\.version) == [4, 5, 6, 7, 8])
        #expect(all.first?.stackIDs == session.stack.map(\.id))
        #expect(try store.changes(sessionID: "s1", after: 6, eventLimit: 100).map(\.version) == [7, 8])
        #expect(try store.changes(sessionID: "s1", after: 0, eventLimit: 2).map(\.version) == [4, 5])
        #expect(try store.change(sessionID: "s1", version: 3) == nil)
        #expect(try store.change(sessionID: "s1", version: 6)?.version == 6)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.changes(sessionID: "s1", after: 0, eventLimit: 100).isEmpty)
    }

    @Test("an idempotent response is stored with its change, read back exactly, and expires")
    func idempotentResponses() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        let response = StoredResponse(
            scope: "s1", key: "k-1", fingerprint: Array("POST /x\n{}".utf8), status: 201,
            headers: ["Content-Type": "application/json", "ETag": "\"1\""], body: Array(#"{"a":1}"#.utf8),
            createdAt: Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000)))
        try store.commit([save(sampleSession("s1"), response: response)])
        #expect(try store.idempotentResponse(scope: "s1", key: "k-1") == response)
        #expect(try store.idempotentResponse(scope: "s2", key: "k-1") == nil)
        var old = response
        old.key = "k-old"
        old.createdAt = Timestamp(millisecondsSinceEpoch: 1000)
        var next = sampleSession("s1")
        next.version = 2
        try store.commit([save(next, response: old)])
        #expect(try store.idempotentResponse(scope: "s1", key: "k-old") == nil)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.idempotentResponse(scope: "s1", key: "k-1") == nil)
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

    @Test("the health check passes on a writable database")
    func health() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        try store.checkHealth()
    }
}

@Suite("SQLite session store: the listing")
struct SQLiteSessionListingTests {
    private static func session(_ id: String, updatedAt milliseconds: Int64, ttl: Int64 = 3600) -> Session {
        var session = sampleSession(id, stackSize: 1)
        session.updatedAt = Timestamp(millisecondsSinceEpoch: milliseconds)
        session.ttlSeconds = ttl
        return session
    }

    @Test("pages list live sessions newest first; one that does not change while paging appears exactly once")
    func pagesWhileOthersChange() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        var generator = SeededGenerator(seed: 21)
        let start: Int64 = 1_790_000_000_000
        // Times spread over ten minutes, so that pages cross buckets, with ties on the millisecond.
        var sessions = (0..<120).map { index in
            Self.session("s\(index)", updatedAt: start + Int64.random(in: 0..<600_000, using: &generator) / 7 * 7)
        }
        sessions.append(Self.session("expired", updatedAt: start, ttl: 1))
        try store.commit(sessions.map { save($0) })
        let now = Timestamp(millisecondsSinceEpoch: start + 600_000)

        var seen: [String] = []
        var changed: Set<String> = []
        var cursor: SessionCursor?
        var clock = start + 600_000
        while true {
            let page = try store.recentSessions(after: cursor, limit: 7, at: now)
            #expect(page.count <= 7)
            for (earlier, later) in zip(page, page.dropFirst()) {
                #expect((earlier.updatedAt, earlier.id) > (later.updatedAt, later.id))
            }
            seen += page.map(\.id)
            guard let last = page.last else { break }
            cursor = SessionCursor(updatedAt: last.updatedAt, id: last.id)
            // Another client changes two sessions between pages: they move to the front.
            for _ in 0..<2 {
                var moved = sessions[Int.random(in: 0..<120, using: &generator)]
                clock += 1
                moved.version += 1
                moved.updatedAt = Timestamp(millisecondsSinceEpoch: clock)
                try store.commit([save(moved)])
                changed.insert(moved.id)
            }
        }
        #expect(!seen.contains("expired"))
        let unchanged = Set(sessions.map(\.id)).subtracting(changed).subtracting(["expired"])
        #expect(unchanged.count > 60)
        for id in unchanged { #expect(seen.filter { $0 == id }.count == 1, "\(id)") }
        #expect(try store.recentSessions(after: nil, limit: 200, at: now).count == 120)
    }
}
