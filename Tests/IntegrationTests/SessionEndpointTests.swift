import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite("Sessions over HTTP")
struct SessionEndpointTests {
    @Test("PUT creates a session (201), then finds it (200); GET returns the state")
    func putAndGet() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let created = try client.call("PUT", "/v1/sessions/\(id)")
        #expect(created.status == 201)
        #expect(created.headers["Location"] == "/v1/sessions/\(id)")
        #expect(created.headers["Content-Type"] == "application/json")
        #expect(created.json["id"] == .string(id))
        #expect(created.json["version"] == 1)
        #expect(created.json["stack"] == [])
        #expect(created.json["top"] == .null)
        #expect(created.json["createdAt"]?.stringValue?.hasSuffix("Z") == true)
        let again = try client.call("PUT", "/v1/sessions/\(id)")
        #expect(again.status == 200)
        #expect(again.json == created.json)
        let read = try client.call("GET", "/v1/sessions/\(id)")
        #expect(read.status == 200)
        #expect(read.json == created.json)
    }

    @Test("PUT with another ttl than the existing session's is a 409 session-exists; the same ttl finds it")
    func putWithAnotherTTL() throws {
        let server = try endpointServer()
        let client = server.client()
        let path = "/v1/sessions/\(uniqueSessionID())"
        #expect(try client.call("PUT", path, json: ["ttl": 60]).status == 201)
        let other = try client.call("PUT", path, json: ["ttl": 50])
        #expect(other.status == 409)
        #expect(other.problemSlug == "session-exists")
        #expect(other.json["ttl"] == 60)
        #expect(try client.call("PUT", path, json: ["ttl": 60]).status == 200)
        #expect(try client.call("GET", path).json["ttl"] == 60)
    }

    @Test("POST /v1/sessions makes an id and a Location that resolves")
    func postMakesID() throws {
        let server = try endpointServer()
        let client = server.client()
        let created = try client.call("POST", "/v1/sessions")
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(Identifiers.isValidSessionID(id))
        #expect(id.count >= 22)
        let location = try #require(created.headers["Location"])
        #expect(try client.call("GET", location).json == created.json)
        let other = try client.call("POST", "/v1/sessions", json: [:])
        #expect(other.status == 201)
        #expect(other.json["id"] != created.json["id"])
        let unknownField = try client.call("POST", "/v1/sessions", json: ["colour": "blue", "ttl": 0])
        #expect(unknownField.status == 422)
        #expect(unknownField.errorPointers == ["/ttl", "/colour"])
        let withTTL = try client.call("POST", "/v1/sessions", json: ["ttl": 60])
        #expect(withTTL.json["ttl"] == 60)
    }

    @Test("a session never written is 404; a deleted one is gone")
    func notFoundAndDelete() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let missing = try client.call("GET", "/v1/sessions/\(id)")
        #expect(missing.status == 404)
        #expect(missing.problemSlug == "session-not-found")
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
        let deleted = try client.call("DELETE", "/v1/sessions/\(id)")
        #expect(deleted.status == 204)
        #expect(deleted.raw.isEmpty)
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404)
        #expect(try client.call("DELETE", "/v1/sessions/\(id)").problemSlug == "session-not-found")
        #expect(try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:]).status == 404)
    }

    @Test(
        "an invalid session id is a 400 problem",
        arguments: [
            String(repeating: "a", count: 129), "bad%20id", "a%2Fb", "%27%3B%20DROP%20TABLE%20sessions",
        ])
    func invalidSessionID(id: String) throws {
        let server = try endpointServer()
        let client = server.client()
        let response = try client.call("PUT", "/v1/sessions/\(id)")
        #expect(response.status == 400)
        #expect(response.problemSlug == "invalid-session-id")
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 400)
    }

    @Test("health endpoints and the served contract")
    func healthAndSpec() throws {
        let server = try endpointServer()
        let client = server.client()
        let live = try client.call("GET", "/livez")
        #expect(live.status == 200)
        #expect(live.json["status"] == "alive")
        let ready = try client.call("GET", "/readyz")
        #expect(ready.status == 200)
        #expect(ready.json["status"] == "ready")
        let spec = try client.send(method: "GET", path: "/openapi.yaml")
        #expect(spec.status == 200)
        #expect(spec.headers["Content-Type"] == "application/yaml")
        let repositorySpec = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../openapi.yaml").standardized
        if ServerProcess.isLocal {
            #expect(spec.body == Array(try Data(contentsOf: repositorySpec)))
        }
        #expect(spec.text.hasPrefix("openapi: 3.1"))
    }

    @Test("keep-alive: many requests share one TCP connection")
    func keepAlive() throws {
        let server = try ServerProcess()
        let client = server.client()
        let id = uniqueSessionID()
        for index in 0..<20 {
            let response = try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: ["destination": "d", "payload": ["n": JSONValue(index)]])
            #expect(response.status == (index == 0 ? 201 : 200))
            #expect(try client.call("GET", "/v1/sessions/\(id)").status == 200)
        }
        #expect(client.connectCount == 1)
    }
}
