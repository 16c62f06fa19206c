import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// Request target, header and connection limits: the server's own answers (rendered by the
/// application) below libmicrohttpd's buffer, libmicrohttpd's beyond it, prompt refusal past the
/// connection limit.
@Suite struct HTTPServerLimitsTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        return router
    }

    /// `GET /ping` with one more header, `X-Fill`, of `fill` bytes: the header section is 19 + `fill`
    /// bytes as the server counts it (`Host: t` 9, `X-Fill: …` 10 + `fill`).
    private func requestWithHeaders(fill: Int) -> [UInt8] {
        bytes("GET /ping HTTP/1.1\r\nHost: t\r\nX-Fill: \(String(repeating: "f", count: fill))\r\n\r\n")
    }

    /// Whether `response` is one libmicrohttpd wrote itself (its "Request too big" page).
    private func isLibmicrohttpdsOwn(_ response: HTTPClientResponse) -> Bool {
        response.text.contains("Request too big") && response.headers["Connection"]?.lowercased() == "close"
            && response.headers["X-Request-Id"] == nil
    }

    // MARK: Request target

    @Test func aTargetOfExactlyTheLimitIsServedAndOneByteMoreIs414() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            #expect(server.configuration.maxURLBytes == 8192)
            let client = HTTPClient(port: server.boundPort)
            let atLimit = try client.send(path: "/" + String(repeating: "a", count: 8191))
            #expect(atLimit.status == 404)  // served: the router found no route
            let over = try client.send(path: "/" + String(repeating: "a", count: 8192))
            #expect(over.status == 414)
            #expect(over.text == "uri too long: limit 8192")
            #expect(log.wait(for: 2))
            #expect(log.all.map(\.status).sorted() == [404, 414])
        }
    }

    @Test func theQueryCountsTowardsTheTargetLimit() throws {
        var configuration = testConfiguration()
        configuration.maxURLBytes = 100
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            // "/ping" + "?q=" + value: 8 + value bytes.
            #expect(try client.send(path: "/ping?q=" + String(repeating: "v", count: 92)).status == 200)
            let over = try client.send(path: "/ping?q=" + String(repeating: "v", count: 93))
            #expect(over.status == 414)
            #expect(over.text == "uri too long: limit 100")
            #expect(try client.send(path: "/ping?a=1&b=2&" + String(repeating: "c", count: 86)).status == 200)
            #expect(try client.send(path: "/ping?a=1&b=2&" + String(repeating: "c", count: 87)).status == 414)
        }
    }

    @Test func aRequestLineOverLibmicrohttpdsBufferGetsItsOwn414() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            // The default buffer is 32 KiB: the request line does not fit, no handler runs.
            try client.sendRaw(bytes("GET /\(String(repeating: "a", count: 40_000)) HTTP/1.1\r\nHost: t\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status == 414)
            #expect(isLibmicrohttpdsOwn(response))
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
            #expect(log.wait(for: 1))
            server.stop()  // nothing is reported after stop()
            #expect(log.all.map(\.path) == ["/ping"])
        }
    }

    // MARK: Headers

    @Test func headersOfExactlyTheLimitAreServedAndOneByteMoreIs431() throws {
        var configuration = testConfiguration()
        configuration.maxHeaderBytes = 4096
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(requestWithHeaders(fill: 4096 - 19))
            #expect(try client.readResponse().status == 200)
            try client.sendRaw(requestWithHeaders(fill: 4096 - 19 + 1))
            let over = try client.readResponse()
            #expect(over.status == 431)
            #expect(over.text == "headers too large: limit 4096")
        }
    }

    @Test func theDefaultHeaderLimitIs16KiB() throws {
        try withServer(router()) { server throws in
            #expect(server.configuration.maxHeaderBytes == 16384)
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(requestWithHeaders(fill: 16384 - 19))
            #expect(try client.readResponse().status == 200)
            try client.sendRaw(requestWithHeaders(fill: 20_000))
            let over = try client.readResponse()
            #expect(over.status == 431)
            #expect(over.text == "headers too large: limit 16384")
            #expect(over.headers["X-Request-Id"] != nil)
        }
    }

    @Test func bothDefaultLimitsTogetherFitLibmicrohttpdsDefaultBuffer() throws {
        try withServer(router()) { server throws in
            let fill = String(repeating: "f", count: 16384 - 19)
            for (length, status) in [(8192, 404), (8193, 414)] {
                let client = HTTPClient(port: server.boundPort)
                let path = "/" + String(repeating: "a", count: length - 1)
                try client.sendRaw(bytes("GET \(path) HTTP/1.1\r\nHost: t\r\nX-Fill: \(fill)\r\n\r\n"))
                let response = try client.readResponse()
                #expect(response.status == status)
                #expect(!isLibmicrohttpdsOwn(response))
            }
        }
    }

    @Test func headersOverLibmicrohttpdsBufferGetItsOwn431() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let big = HTTPClient(port: server.boundPort)
            try big.sendRaw(requestWithHeaders(fill: 40_000))
            let response = try big.readResponse()
            #expect(response.status == 431)
            #expect(isLibmicrohttpdsOwn(response))

            // Many small fields fill libmicrohttpd's buffer (about 64 bytes each for its bookkeeping)
            // long before the server's 16 KiB count is reached.
            let many = HTTPClient(port: server.boundPort)
            let fields = (0..<1000).map { "X-H\($0): v\r\n" }.joined()
            try many.sendRaw(bytes("GET /ping HTTP/1.1\r\nHost: t\r\n\(fields)\r\n"))
            let manyResponse = try many.readResponse()
            #expect(manyResponse.status == 431)
            #expect(isLibmicrohttpdsOwn(manyResponse))

            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
            #expect(log.wait(for: 1))
            server.stop()  // nothing is reported after stop()
            #expect(log.all.map(\.path) == ["/ping"])
        }
    }

    // MARK: Connections

    @Test func aConnectionOverTheLimitIsClosedAtOnce() throws {
        var configuration = testConfiguration()
        configuration.connectionLimit = 2
        try withServer(router(), configuration: configuration) { server throws in
            let port = server.boundPort
            let first = HTTPClient(port: port)
            let second = HTTPClient(port: port)
            #expect(try first.send(path: "/ping").text == "pong")
            #expect(try second.send(path: "/ping").text == "pong")

            let clock = ContinuousClock()
            for _ in 0..<3 {
                let start = clock.now
                let extra = HTTPClient(port: port, timeoutSeconds: 5)
                let error = #expect(throws: HTTPClientError.self) { try extra.send(path: "/ping") }
                // Closed, not left waiting (which would time out).
                #expect(error?.code == .connectionClosed || error?.code == .ioFailed, "\(String(describing: error))")
                #expect(clock.now - start < .seconds(1))
            }

            // The open connections are unaffected; a closed one frees its place.
            #expect(try first.send(path: "/ping").text == "pong")
            first.close()
            #expect(waitUntil { (try? HTTPClient(port: port, timeoutSeconds: 2).send(path: "/ping"))?.text == "pong" })
            #expect(try second.send(path: "/ping").text == "pong")
            #expect(second.connectCount == 1)
        }
    }

    @Test func suspendedRequestsCountTowardsTheLimit() throws {
        let held = ReplyBox()
        var router = router()
        router.addDeferred("GET", "/hold") { request, reply in held.append(request, reply) }
        var configuration = testConfiguration()
        configuration.connectionLimit = 1
        try withServer(router, configuration: configuration) { server throws in
            let holder = HTTPClient(port: server.boundPort)
            try holder.sendRaw(bytes("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"))
            #expect(held.wait(for: 1))
            #expect(throws: HTTPClientError.self) {
                try HTTPClient(port: server.boundPort, timeoutSeconds: 5).send(path: "/ping")
            }
            held.takeAll()[0].reply.send(HTTPResponse(status: 200, body: bytes("released")))
            #expect(try holder.readResponse().text == "released")
            holder.close()
            #expect(
                waitUntil {
                    (try? HTTPClient(port: server.boundPort, timeoutSeconds: 2).send(path: "/ping"))?.text == "pong"
                })
        }
    }

    // MARK: Without a socket

    @Test func theTargetIsMeasuredFromThePathAndTheRawArguments() {
        #expect(RequestDispatcher.targetLength(path: "/ping", rawQuery: []) == 5)
        #expect(RequestDispatcher.targetLength(path: "/ping", rawQuery: [("q", "v%20w")]) == "/ping?q=v%20w".utf8.count)
        #expect(
            RequestDispatcher.targetLength(path: "/p", rawQuery: [("a", "1"), ("flag", "")]) == "/p?a=1&flag".utf8.count
        )
    }

    @Test func headerBytesCountNamesValuesAndLineOverhead() {
        #expect(RequestDispatcher.headerBytes([:]) == 0)
        #expect(
            RequestDispatcher.headerBytes(["Host": "t", "X-Fill": "abc"]) == "Host: t\r\nX-Fill: abc\r\n".utf8.count)
    }
}
