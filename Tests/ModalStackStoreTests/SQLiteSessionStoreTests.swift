import Foundation
import ModalStackCore
import ModalStackStore
import Testing

/// A fresh directory under the system temp dir, removed when the test is done with it.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "modalstack-store-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    var databasePath: String { path + "/modalstack.sqlite" }
}

private func sampleSession(_ id: String, version: Int64 = 1, stackSize: Int = 2) -> Session {
    let stack = (0..<stackSize).map { index in
        Presentation(
            id: "\(id)-p\(index)", destination: "dest\(index)", style: index.isMultiple(of: 2) ? .sheet : .fullScreenCover,
            key: "key\(index)", payload: ["index": JSONValue(index), "big": .number("12345678901234567890"), "text": "héllo \"q\""],
            presentedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + Int64(index)))
    }
    return Session(
        id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000),
        updatedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_500), stack: stack)
}

@Suite("SQLite session store")
struct SQLiteSessionStoreTests {
    @Test("a new file is created, migrated, and reads nothing")
    func freshFile() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        #expect(try store.session(id: "missing") == nil)
        #expect(try store.integrityCheck() == ["ok"])
        #expect(FileManager.default.fileExists(atPath: directory.databasePath))
    }

    @Test("a saved session reads back exactly, payload numbers and text included")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        let session = sampleSession("s1")
        try store.commit([.save(session)])
        #expect(try store.session(id: "s1") == session)
    }

    @Test("a later version overwrites; createdAt stays; delete removes")
    func overwriteAndDelete() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        try store.commit([.save(sampleSession("s1"))])
        var next = sampleSession("s1", version: 2, stackSize: 1)
        next.createdAt = Timestamp(millisecondsSinceEpoch: 5)
        try store.commit([.save(next)])
        let read = try #require(try store.session(id: "s1"))
        #expect(read.version == 2)
        #expect(read.stack.count == 1)
        #expect(read.createdAt == sampleSession("s1").createdAt)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.session(id: "s1") == nil)
    }

    @Test("many writes in one commit all land, and survive reopening the file")
    func batchAndReopen() throws {
        let directory = TemporaryDirectory()
        let sessions = (0..<50).map { sampleSession("s\($0)", stackSize: $0 % 4) }
        do {
            let store = try SQLiteSessionStore(path: directory.databasePath, durability: .full)
            try store.commit(sessions.map { .save($0) } + [.delete(sessionID: "s7")])
        }
        let reopened = try SQLiteSessionStore(path: directory.databasePath)
        for session in sessions {
            let expected: Session? = session.id == "s7" ? nil : session
            #expect(try reopened.session(id: session.id) == expected)
        }
    }

    @Test("a file that is not a database is refused and left untouched")
    func garbageFile() throws {
        let directory = TemporaryDirectory()
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: directory.databasePath))
        let error = #expect(throws: StoreError.self) { try SQLiteSessionStore(path: directory.databasePath) }
        #expect(error?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == garbage)
    }

    @Test("another application's SQLite database is refused and left untouched")
    func foreignDatabase() throws {
        let directory = TemporaryDirectory()
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table notes(x)'); c.commit()", directory.databasePath]
        try sqlite.run()
        sqlite.waitUntilExit()
        try #require(sqlite.terminationStatus == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.databasePath))
        let error = #expect(throws: StoreError.self) { try SQLiteSessionStore(path: directory.databasePath) }
        #expect(error?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == before)
    }

    @Test("a path whose directory does not exist fails as unavailable")
    func missingDirectory() {
        let error = #expect(throws: StoreError.self) { try SQLiteSessionStore(path: "/nonexistent-dir-\(UUID().uuidString)/db.sqlite") }
        #expect(error?.kind == .unavailable)
    }

    @Test("the health check passes on a writable database")
    func health() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteSessionStore(path: directory.databasePath)
        try store.checkHealth()
    }
}
