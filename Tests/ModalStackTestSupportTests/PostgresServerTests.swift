import Foundation
import ModalStackTestSupport
import Testing

@Suite(
    "PostgresServer: a throwaway cluster",
    .enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? ""))
)
struct PostgresServerTests {
    @Test("starts on a free port with its socket in a short directory, makes databases, and stops without a trace")
    func lifecycle() throws {
        let server = try PostgresServer()
        let directory = server.directory
        #expect(directory.utf8.count < 40)
        #expect(FileManager.default.fileExists(atPath: "\(directory)/.s.PGSQL.\(server.port)"))
        let first = try server.createDatabase()
        let second = try server.createDatabase()
        #expect(first != second)
        #expect(server.connectionString(database: first).contains("dbname=\(first)"))
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
        server.stop()
    }
}
