import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// Hostile bytes must not crash the server, and the next good request must be answered.
@Suite struct HTTPServerMalformedInputTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        router.add("POST", "/echo") { request in HTTPResponse(status: 200, body: request.body) }
        return router
    }

    /// Sends `raw`, returns the status answered (nil when the server just closed), then checks that
    /// a fresh connection still gets a normal answer.
    private func probe(_ server: HTTPServer, _ raw: [UInt8]) throws -> Int? {
        let hostile = HTTPClient(port: server.boundPort, timeoutSeconds: 3)
        var status: Int?
        do {
            try hostile.sendRaw(raw)
            status = try hostile.readResponse().status
        } catch {
            #expect(error.code == .connectionClosed || error.code == .ioFailed, "\(error)")
        }
        let good = try HTTPClient(port: server.boundPort).send(path: "/ping")
        #expect(good.text == "pong")
        return status
    }

    @Test(
        "a raw NUL in the method or the target is a 400, and no handler sees the request line cut at it",
        arguments: [
            "GET /ping\u{0}x", "GET /ping\u{0}", "GET /pi\u{0}ng?a=1", "GET /ping?a=1\u{0}b", "GET /ping?\u{0}",
            "GET\u{0} /ping", "GE\u{0}T /ping", "GET\u{0}X  /ping",
        ])
    func nulInRequestLine(line: String) throws {
        let handled = Counter()
        var router = makeRouter()
        router.add("GET", "/ping") { _ in
            handled.increment()
            return HTTPResponse(status: 200, body: bytes("pong"))
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 3)
            try client.sendRaw(bytes("\(line) HTTP/1.1\r\nHost: t\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.text == "NUL in request line")
            #expect(handled.value == 0)
        }
    }

    @Test(
        "what libmicrohttpd cuts a request line at itself is no NUL of the request",
        arguments: ["GET /ping?", "GET /ping?a&b=&=c", "GET   /ping", "GET /ping?a=1 ", "GET /ping "])
    func requestLineWithoutNUL(line: String) throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 3)
            try client.sendRaw(bytes("\(line) HTTP/1.1\r\nHost: t\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status != 400, "\(line.debugDescription): \(response.status) \(response.text)")
        }
    }

    @Test func garbageRequestLine() throws {
        try withServer(router()) { server throws in
            let status = try probe(server, bytes("THIS IS NOT HTTP AT ALL\r\n\r\n"))
            #expect(status == 400 || status == 505 || status == nil)
        }
    }

    @Test func binaryJunk() throws {
        try withServer(router()) { server throws in
            let junk: [UInt8] = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) } + bytes("\r\n\r\n")
            _ = try probe(server, junk)
        }
    }

    @Test func headerLineWithoutColon() throws {
        try withServer(router()) { server throws in
            let status = try probe(server, bytes("GET /ping HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n"))
            #expect(status == 400 || status == nil)
        }
    }

    @Test func oversizeHeadersAreRefusedByLibmicrohttpd() throws {
        try withServer(router()) { server throws in
            let big = String(repeating: "x", count: 64 * 1024)
            let status = try probe(server, bytes("GET /ping HTTP/1.1\r\nHost: t\r\nX-Big: \(big)\r\n\r\n"))
            #expect(status == 431)
        }
    }

    @Test func overlongURL() throws {
        try withServer(router()) { server throws in
            let path = "/" + String(repeating: "a", count: 64 * 1024)
            let status = try probe(server, bytes("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n"))
            #expect(status == 414)
        }
    }

    @Test func malformedChunkedBody() throws {
        try withServer(router()) { server throws in
            let status = try probe(
                server,
                bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n"))
            #expect(status == 400 || status == nil)
        }
    }

    @Test func invalidContentLength() throws {
        try withServer(router()) { server throws in
            let status = try probe(server, bytes("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n"))
            #expect(status == 400 || status == nil)
        }
    }

    @Test func truncatedRequestThenDisconnect() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly part"))
            client.close()
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
        }
    }

    @Test func http10RequestIsAnswered() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("GET /ping HTTP/1.0\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "pong")
        }
    }
}
