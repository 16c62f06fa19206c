import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// One Server-Sent Event as read off the wire.
struct ServerSentEvent: Equatable {
    var id: String?
    var event: String?
    var data: JSONValue
}

extension HTTPClient {
    /// Reads the next event, skipping heartbeat comments; nil when the stream ended.
    func nextEvent(timeout: Double = 10) throws -> ServerSentEvent? {
        var event = ServerSentEvent(data: .null)
        var sawField = false
        while let line = try readLine(timeout: timeout) {
            if line.isEmpty {
                if sawField { return event }
                continue
            }
            if line.hasPrefix(":") { continue }
            sawField = true
            let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
            let value = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
            switch parts[0] {
            case "id": event.id = value
            case "event": event.event = value
            case "data": event.data = (try? JSONParser.parse(value)) ?? .string(value)
            default: break
            }
        }
        return nil
    }
}

@Suite("Server-Sent Events over HTTP")
struct EventStreamTests {
    @Test("the stream starts with the session, sends each change with its version as id, ends on DELETE")
    func liveChanges() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        try server.client().call("PUT", base)
        let watcher = server.client()
        let head = try watcher.openStream(path: "\(base)/events/stream")
        #expect(head.status == 200)
        #expect(head.headers["Content-Type"] == "text/event-stream")
        let first = try #require(try watcher.nextEvent())
        #expect(first.event == "session")
        #expect(first.id == "1")
        #expect(first.data["version"] == 1)

        let writer = server.client()
        let presented = try writer.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        let change = try #require(try watcher.nextEvent())
        #expect(change.event == "change")
        #expect(change.id == "2")
        #expect(change.data["events"]?.arrayValue?.first?["type"] == "presented")
        #expect(change.data["events"]?.arrayValue?.first?["presentationId"] == presented.json["presentation"]?["id"])
        #expect(change.data["stack"] == [presented.json["presentation"]?["id"] ?? .null])

        try writer.call("DELETE", base)
        let deleted = try #require(try watcher.nextEvent())
        #expect(deleted.event == "sessionDeleted")
        #expect(deleted.id == nil)
        #expect(deleted.data == ["type": "sessionDeleted", "sessionId": .string(id), "reason": "deleted"])
        #expect(try watcher.nextEvent() == nil)
    }

    @Test("a client that reconnects with Last-Event-ID misses nothing")
    func reconnect() throws {
        let server = try ServerProcess()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let writer = server.client()
        try writer.call("POST", "\(base)/presentations", json: ["destination": "a"])
        var watcher = server.client()
        _ = try watcher.openStream(path: "\(base)/events/stream")
        #expect(try watcher.nextEvent()?.id == "1")
        try writer.call("POST", "\(base)/presentations", json: ["destination": "b"])
        #expect(try watcher.nextEvent()?.id == "2")
        watcher.close()

        try writer.call("POST", "\(base)/presentations", json: ["destination": "c"])
        try writer.call("POST", "\(base)/dismiss", json: ["count": 2])
        try writer.call("POST", "\(base)/presentations", json: ["destination": "d"])

        watcher = server.client()
        let head = try watcher.openStream(path: "\(base)/events/stream", headers: ["Last-Event-ID": "2"])
        #expect(head.status == 200)
        var ids: [String] = []
        var kinds: [[String]] = []
        for _ in 0..<3 {
            let event = try #require(try watcher.nextEvent())
            #expect(event.event == "change")
            ids.append(event.id ?? "?")
            kinds.append(event.data["events"]?.arrayValue?.compactMap { $0["type"]?.stringValue } ?? [])
        }
        #expect(ids == ["3", "4", "5"])
        #expect(kinds == [["presented"], ["dismissed", "dismissed"], ["presented"]])
        try writer.call("POST", "\(base)/dismiss", json: [:])
        #expect(try watcher.nextEvent()?.id == "6")
    }

    @Test("heartbeat comments keep an idle stream alive", .enabled(if: ServerProcess.isLocal))
    func heartbeat() throws {
        let server = try ServerProcess(arguments: ["--sse-heartbeat", "1"])
        let base = "/v1/sessions/\(uniqueSessionID())"
        try server.client().call("PUT", base)
        let watcher = server.client()
        _ = try watcher.openStream(path: "\(base)/events/stream")
        _ = try watcher.nextEvent()
        var sawHeartbeat = false
        while let line = try watcher.readLine(timeout: 3) {
            if line.hasPrefix(": heartbeat") {
                sawHeartbeat = true
                break
            }
        }
        #expect(sawHeartbeat)
    }
}
