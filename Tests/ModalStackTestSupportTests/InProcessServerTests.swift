import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// The in-process server: the real application through its responder, on a clock and ids the
/// test controls.
@Suite struct InProcessServerTests {
    @Test("ids come from the injected source and times from the injected clock")
    func injectedTimeAndIDs() throws {
        let time = ManualTime()
        let ids = SequentialIDs()
        let server = try InProcessServer(arguments: ["--session-ttl", "60"], time: time, makeID: ids.next)
        let client = server.client()

        let created = try client.send(method: "POST", path: "/v1/sessions", headers: json, body: Array("{}".utf8))
        #expect(created.status == 201)
        #expect(created.headers["Location"] == "/v1/sessions/id-1")
        let presented = try client.send(
            method: "POST", path: "/v1/sessions/id-1/presentations", headers: json,
            body: Array(#"{"destination":"settings"}"#.utf8))
        #expect(presented.status == 201)
        #expect(presented.headers["Location"] == "/v1/sessions/id-1/presentations/id-2")
        let session = try JSONParser.parse(try client.send(path: "/v1/sessions/id-1").body)
        #expect(session["createdAt"] == "2026-12-01T00:00:00.000Z")

        // The session lives 60 s on the manual clock, however long the test takes.
        time.advance(by: .seconds(59))
        #expect(try client.send(path: "/v1/sessions/id-1").status == 200)
        time.advance(by: .seconds(2))
        #expect(try client.send(path: "/v1/sessions/id-1").status == 404)
    }

    @Test("as over a socket: no body for HEAD or 304, the query is read, 404 and 405 come from the router")
    func answersAsTheTransportWould() throws {
        let server = try InProcessServer()
        let client = server.client()
        let put = try client.send(method: "PUT", path: "/v1/sessions/s1", headers: json, body: Array("{}".utf8))
        #expect(put.status == 201)
        let tag = try #require(put.headers["ETag"])

        let head = try client.send(method: "HEAD", path: "/v1/sessions/s1")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["ETag"] == tag)
        let notModified = try client.send(path: "/v1/sessions/s1", headers: ["If-None-Match": tag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        #expect(try client.send(path: "/v1/sessions/s1/events?after=x").status == 400)
        #expect(try client.send(path: "/v1/nowhere").status == 404)
        let wrongMethod = try client.send(method: "PATCH", path: "/v1/sessions/s1")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["Allow"]?.contains("OPTIONS") == true)
    }

    private let json: HTTPHeaders = ["Content-Type": "application/json"]
}
