import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// Request deadlines (``HTTPServer/Configuration/connectionTimeoutSeconds``), on a clock moved by
/// hand: each check is run by the test right after it moved the time, not by the server's timer.
@Suite struct HTTPServerDeadlineTests {
    private func router(held: ReplyBox) -> Router {
        var router = makeRouter()
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        router.addDeferred("GET", "/hold") { request, reply in held.append(request, reply) }
        return router
    }

    /// `testConfiguration(reportingTo:)` on `time`, with 10 s per request; libmicrohttpd's own idle
    /// timeout (10 s of real time) never comes within a test. The server reads the time for a
    /// deadline when a response is over, just before it reports the request to `log`: a test
    /// waits for that report before it moves the time.
    private func configuration(_ time: ManualTime, _ log: CompletionLog) -> HTTPServer.Configuration {
        var configuration = testConfiguration(reportingTo: log)
        configuration.time = time
        return configuration
    }

    @Test func aClientTricklingItsRequestIsDroppedAtItsDeadline() throws {
        let time = ManualTime()
        let log = CompletionLog()
        try withServer(router(held: ReplyBox()), configuration: configuration(time, log)) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(log.wait(for: 1))
            // Every byte restarts libmicrohttpd's idle timeout, not the deadline.
            for part in ["GET /ping HTTP/1.1\r\n", "Host: t\r\n", "X-Slow: 1\r\n"] {
                try client.sendRaw(bytes(part))
                time.advance(by: .seconds(4))
                server.dispatcher.requestDeadlines.dropExpired()
            }
            let error = #expect(throws: HTTPClientError.self) { try client.readResponse() }
            #expect(error?.code == .connectionClosed || error?.code == .ioFailed, "\(String(describing: error))")
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
        }
    }

    @Test func eachRequestIsDueWithinTheTimeoutOfThePreviousResponse() throws {
        let time = ManualTime()
        let log = CompletionLog()
        try withServer(router(held: ReplyBox()), configuration: configuration(time, log)) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(log.wait(for: 1))
            try client.sendRaw(bytes("GET /ping HTTP/1.1\r\n"))
            time.advance(by: .milliseconds(9_999))
            server.dispatcher.requestDeadlines.dropExpired()
            try client.sendRaw(bytes("Host: t\r\n\r\n"))
            #expect(try client.readResponse().text == "pong")
            #expect(log.wait(for: 2))
            time.advance(by: .milliseconds(9_999))
            server.dispatcher.requestDeadlines.dropExpired()
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(log.wait(for: 3))
            #expect(client.connectCount == 1)

            time.advance(by: .milliseconds(10_001))
            server.dispatcher.requestDeadlines.dropExpired()
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(client.connectCount == 2)
        }
    }

    @Test func aRequestBeingAnsweredHasNoDeadline() throws {
        let time = ManualTime()
        let held = ReplyBox()
        try withServer(router(held: held), configuration: configuration(time, CompletionLog())) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            try client.sendRaw(bytes("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"))
            // The request is in: its deadline was cleared before the handler ran.
            #expect(held.wait(for: 1))
            time.advance(by: .seconds(60))
            server.dispatcher.requestDeadlines.dropExpired()
            held.takeAll()[0].reply.send(HTTPResponse(status: 200, body: bytes("held")))
            #expect(try client.readResponse().text == "held")
            #expect(client.connectCount == 1)
        }
    }
}
