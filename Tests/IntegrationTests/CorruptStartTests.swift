import Foundation
import Glibc
import ModalStackCore
import ModalStackTestSupport
import Testing

/// A database file the server must not use: it refuses to start with a message naming the file and
/// a non-zero exit status, and leaves the file (and its write-ahead log) exactly as they were.
/// (Garbage bytes are covered by PersistenceTests.)
@Suite(
    "Corrupt database at start", .enabled(if: ServerProcess.isLocal, "starts the binary on prepared files"),
    .enabled(if: !ServerProcess.usesPostgres, "SQLite files (PostgreSQL: PostgresSessionStoreTests)"),
    .enabled(if: SQLiteShell.pythonPath != nil, "needs python3's sqlite3 module to build other applications' databases")
)
struct CorruptStartTests {
    /// How a copy of a real ModalStack database is cut. Each cut loses whole pages: a file cut only
    /// inside its last page can be intact (SQLite reads the missing tail as zeros, and a page often
    /// ends in free space), so it is no corrupt file.
    enum Cut: String, CaseIterable, Sendable {
        case insideHeader = "50 bytes: inside the 100-byte header"
        case headerOnly = "100 bytes: the header alone"
        case firstPage = "the first page alone"
        case half = "half of the file"
        case lastPageMissing = "all but the last page"
        case pageAndAHalfShort = "all but the last page and a half"

        func length(of size: Int, pageSize: Int) -> Int {
            switch self {
            case .insideHeader: 50
            case .headerOnly: 100
            case .firstPage: pageSize
            case .half: (size / 2 / pageSize) * pageSize + pageSize / 2
            case .lastPageMissing: size - pageSize
            case .pageAndAHalfShort: size - pageSize - pageSize / 2
            }
        }
    }

    @Test("a truncated copy of a real ModalStack database is refused and left as it was", arguments: Cut.allCases)
    func truncatedCopy(cut: Cut) throws {
        let real = try RealDatabase.shared.get()
        let directory = try TemporaryDirectory()
        let path = directory.appending("truncated.sqlite")
        let bytes = real.bytes.prefix(cut.length(of: real.bytes.count, pageSize: real.pageSize))
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let attempt = try StartAttempt.run(database: path)
        expectRefusal(attempt, path: path)
        #expect(fileBytes(path) == Data(bytes), "the file was written to")
    }

    /// Files made by another program with SQLite: each must be refused, not migrated into.
    enum Foreign: String, CaseIterable, Sendable {
        case plainTables = "a database with other tables and no application id"
        case otherApplication = "another application's id and schema version"
        case newerSchema = "ModalStack's application id with a schema version newer than this build"
        case otherApplicationWAL = "another application's WAL database with changes not yet checkpointed"

        /// Python that builds the file at sys.argv[1]; the WAL case ends without closing, as a crash would.
        var script: String {
            let common = """
                import os, sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None)

                """
            switch self {
            case .plainTables:
                return common + """
                    db.execute("CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT)")
                    db.executemany("INSERT INTO contacts (name) VALUES (?)", [("Ada",), ("Grace",), ("Barbara",)])
                    db.close()
                    """
            case .otherApplication:
                return common + """
                    db.execute("PRAGMA application_id = 1234")
                    db.execute("PRAGMA user_version = 7")
                    db.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, data BLOB)")
                    db.execute("INSERT INTO sessions VALUES ('a', x'00ff')")
                    db.close()
                    """
            case .newerSchema:
                return common + """
                    db.execute("PRAGMA application_id = \(0x4D53_544B)")
                    db.execute("PRAGMA user_version = 99")
                    db.execute("CREATE TABLE future (x)")
                    db.close()
                    """
            case .otherApplicationWAL:
                return common + """
                    db.execute("PRAGMA journal_mode = WAL")
                    db.execute("PRAGMA wal_autocheckpoint = 0")
                    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
                    for i in range(50):
                        db.execute("INSERT INTO notes (body) VALUES (?)", ("note %d " % i * 20,))
                    os._exit(0)
                    """
            }
        }

        var expectedReason: String {
            switch self {
            case .newerSchema: "newer than this build"
            default: "another application"
            }
        }
    }

    @Test(
        "another program's SQLite database is refused, and neither it nor its WAL is written",
        arguments: Foreign.allCases)
    func foreignDatabase(kind: Foreign) throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("other.sqlite")
        let python = try #require(SQLiteShell.pythonPath)
        let made = try runProgram(python, ["-c", kind.script, path])
        try #require(made.status == 0, "python3 could not build the file: \(made.error)")
        let before = try #require(fileBytes(path))
        let walBefore = fileBytes(path + "-wal")
        if kind == .otherApplicationWAL {
            try #require((walBefore?.count ?? 0) > 0, "the WAL to protect was not left behind")
        }

        let attempt = try StartAttempt.run(database: path)
        expectRefusal(attempt, path: path)
        #expect(attempt.output.contains(kind.expectedReason), "the message does not say why: \(attempt.output)")
        // Refusing must not write: no migration, and no checkpoint of the other program's WAL when
        // the connection closes (which would rewrite the main file and delete the WAL).
        let after = fileBytes(path)
        #expect(
            after == before, "the main file was rewritten: \(before.count) bytes before, \(after?.count ?? 0) after")
        #expect(
            fileBytes(path + "-wal") == walBefore,
            "the WAL was changed or removed: \(walBefore?.count ?? 0) bytes before, \(fileBytes(path + "-wal")?.count ?? 0) after"
        )
    }

    private func expectRefusal(_ attempt: StartAttempt, path: String, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(!attempt.started, "the server started on the file", sourceLocation: sourceLocation)
        #expect(
            attempt.exitStatus.map { $0 != 0 } ?? false, "exit status \(attempt.exitStatus.map(String.init) ?? "none")",
            sourceLocation: sourceLocation)
        #expect(
            attempt.output.contains(path), "the message does not name the file: \(attempt.output)",
            sourceLocation: sourceLocation)
        #expect(
            attempt.output.contains("cannot start"), "no clear message: \(attempt.output)",
            sourceLocation: sourceLocation)
    }
}

/// A real ModalStack database, written by the server and closed cleanly, built once for the suite.
private struct RealDatabase: Sendable {
    let bytes: [UInt8]
    let pageSize: Int

    static let shared: Result<RealDatabase, any Error> = Result { try make() }

    private static func make() throws -> RealDatabase {
        let server = try ServerProcess()
        let client = server.client()
        let filler = String(repeating: "x", count: 1500)
        for index in 0..<80 {
            let id = "real-\(index)"
            let first = try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: ["destination": "settings", "payload": ["t": .string(filler)]])
            guard first.status == 201 else { throw RawConnectionError("setting up: \(first.status)") }
            try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: ["destination": "help", "payload": ["i": JSONValue(index)]])
            if index.isMultiple(of: 2) { try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:]) }
        }
        client.close()
        // A clean stop checkpoints the WAL: the main file then holds everything.
        guard server.stop(signal: SIGTERM) == 0 else { throw RawConnectionError("the server did not stop cleanly") }
        guard let data = fileBytes(server.databasePath), data.count > 16 * 1024 else {
            throw RawConnectionError("no database at \(server.databasePath)")
        }
        let bytes = [UInt8](data)
        // The page size is at offset 16, big-endian (1 means 65536).
        let raw = Int(bytes[16]) << 8 | Int(bytes[17])
        return RealDatabase(bytes: bytes, pageSize: raw == 1 ? 65536 : raw)
    }
}
