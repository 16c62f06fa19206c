import Dispatch
import Locking
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite struct HTTPServerKeepAliveTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("GET", "/n/{n}") { request in
            HTTPResponse(status: 200, body: bytes("n=\(request.pathParameters["n"] ?? "")"))
        }
        router.add("POST", "/echo") { request in HTTPResponse(status: 201, body: request.body) }
        router.addDeferred("GET", "/later/{n}") { request, reply in
            let n = request.pathParameters["n"] ?? ""
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) {
                reply.send(HTTPResponse(status: 200, body: bytes("later \(n)")))
            }
        }
        return router
    }

    @Test func manyRequestsShareOneConnection() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for n in 0..<25 {
                let response = try client.send(path: "/n/\(n)")
                #expect(response.text == "n=\(n)")
                #expect(response.headers["Connection"]?.lowercased() != "close")
            }
            let posted = try client.send(method: "POST", path: "/echo", body: bytes("payload"))
            #expect(posted.status == 201)
            #expect(posted.text == "payload")
            let missing = try client.send(path: "/missing")
            #expect(missing.status == 404)
            #expect(try client.send(path: "/n/last").text == "n=last")
            #expect(client.connectCount == 1)
            #expect(client.responsesOnConnection == 28)
        }
    }

    @Test func deferredAnswersKeepTheConnectionAlive() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for n in 0..<10 {
                #expect(try client.send(path: "/later/\(n)").text == "later \(n)")
            }
            #expect(client.connectCount == 1)
        }
    }

    @Test func concurrentClientsEachKeepTheirConnection() throws {
        try withServer(router()) { server throws in
            let port = server.boundPort
            let failures = LockedValue<[String]>([])
            let connects = LockedValue(0)
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                let client = HTTPClient(port: port)
                for n in 0..<40 {
                    let expected = "n=\(worker)-\(n)"
                    do {
                        let text = try client.send(path: "/n/\(worker)-\(n)").text
                        if text != expected { failures.withLock { $0.append("\(expected) got \(text)") } }
                    } catch {
                        failures.withLock { $0.append("\(expected): \(error)") }
                    }
                }
                connects.withLock { $0 += client.connectCount }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(connects.withLock { $0 } == 8)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(
                bytes("GET /n/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /later/2 HTTP/1.1\r\nHost: t\r\n\r\n")
                    + bytes(
                        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /n/4 HTTP/1.1\r\nHost: t\r\n\r\n"
                    ))
            let texts = try (0..<4).map { _ in try client.readResponse().text }
            #expect(texts == ["n=1", "later 2", "abc", "n=4"])
            #expect(client.connectCount == 1)
        }
    }

    @Test func idleConnectionsAreClosedByTheServerAndTheClientReconnects() throws {
        var configuration = testConfiguration()
        configuration.connectionTimeoutSeconds = 1
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            #expect(try client.send(path: "/n/1").text == "n=1")
            #expect(
                waitUntil(pollingEvery: .milliseconds(10)) {
                    !serverConnectionStates(port: server.boundPort).contains(.established)
                })
            #expect(try client.send(path: "/n/2").text == "n=2")
            #expect(client.connectCount == 2)
        }
    }
}
