import Foundation
import ModalStackCore
import ModalStackTestSupport
import Testing

@Suite("Persistence and lifecycle", .enabled(if: ServerProcess.isLocal, "needs to start and stop the server itself"))
struct PersistenceTests {
    @Test("SIGTERM stops the server with exit status 0 and the stack is there after a restart")
    func restartKeepsState() throws {
        let server = try ServerProcess()
        var client = server.client()
        let id = uniqueSessionID()
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
        try client.call(
            "POST", "/v1/sessions/\(id)/presentations",
            json: ["destination": "help", "payload": ["text": "How can we help?"]])
        let before = try client.call("GET", "/v1/sessions/\(id)")
        client.close()
        #expect(server.stop(signal: SIGTERM) == 0)
        try server.start()
        client = server.client()
        let after = try client.call("GET", "/v1/sessions/\(id)")
        #expect(after.status == 200)
        #expect(after.raw == before.raw)
    }

    @Test(
        "a payload nested as deeply as a request allows reads back from the database, in the stack, the event log and the dismissed"
    )
    func deepPayloadReadsBack() throws {
        let server = try ServerProcess()
        var client = server.client()
        let id = uniqueSessionID()
        // The body {"destination", "payload": …} may nest 64 levels: the payload gets 63. Stored in a
        // stack, a change record or a session, it sits a few levels deeper than that.
        var payload: JSONValue = 1
        for _ in 0..<63 { payload = ["a": payload] }
        let presented = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "deep", "payload": payload])
        #expect(presented.status == 201)
        // Answers are deeper than a client's request may be: read with the limits for what the server wrote.
        let presentationID = try #require(
            try JSONParser.parse(presented.raw, limits: .written)["presentation"]?["id"]?.stringValue)
        #expect(try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "top"]).status == 201)
        #expect(
            try client.call("DELETE", "/v1/sessions/\(id)/presentations/\(presentationID)?force=true").status == 200)
        #expect(
            try client.call(
                "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "deep", "payload": payload]
            ).status == 201)
        let before = try client.call("GET", "/v1/sessions/\(id)")
        client.close()
        try server.restart()
        client = server.client()
        let after = try client.call("GET", "/v1/sessions/\(id)")
        #expect(after.status == 200)
        #expect(after.raw == before.raw)
        let events = try client.call("GET", "/v1/sessions/\(id)/events")
        #expect(events.status == 200)
        let log = try JSONParser.parse(events.raw, limits: .written)
        #expect(log["events"]?.arrayValue?.count ?? 0 >= 4)
        #expect(log["version"] == 4)
        let dismissed = try client.call("GET", "/v1/sessions/\(id)/presentations/\(presentationID)")
        #expect(dismissed.status == 200)
        #expect(dismissed.json["payload"] == payload)
    }

    @Test("SIGINT also stops cleanly")
    func sigint() throws {
        let server = try ServerProcess()
        #expect(try server.client().call("GET", "/livez").status == 200)
        #expect(server.stop(signal: SIGINT) == 0)
    }

    @Test("every acknowledged change survives kill -9")
    func killNine() throws {
        let server = try ServerProcess()
        let client = server.client()
        var expected: [String: JSONValue] = [:]
        for index in 0..<30 {
            let id = "kill-\(index)"
            try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"])
            let response = try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: ["destination": "b", "payload": ["i": JSONValue(index)]])
            #expect(response.status == 201)
            if index.isMultiple(of: 3) {
                let dismissed = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:])
                expected[id] = dismissed.json["session"]
            } else {
                expected[id] = response.json["session"]
            }
        }
        client.close()
        try server.restart(signal: SIGKILL)
        let reader = server.client()
        for (id, session) in expected {
            #expect(try reader.call("GET", "/v1/sessions/\(id)").json == session)
        }
    }

    @Test("a database file that is not ModalStack's stops the start with a clear message and is not overwritten")
    func corruptDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("db.sqlite")
        let garbage = Data(repeating: 0x5A, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: path))
        let (status, output) = try ServerProcess.runUntilExit(["--host", "127.0.0.1", "--port", "0", "--db", path])
        #expect(status != 0)
        #expect(output.contains(path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test("an invalid setting stops the start naming the setting")
    func invalidConfiguration() throws {
        let (status, output) = try ServerProcess.runUntilExit(
            ["--max-depth", "zero"], environment: ["MODALSTACK_PORT": "1"])
        #expect(status == 2)
        #expect(output.contains("--max-depth"))
    }
}
