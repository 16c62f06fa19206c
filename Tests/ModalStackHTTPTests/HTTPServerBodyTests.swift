import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite struct HTTPServerBodyTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("POST", "/echo") { request in
            HTTPResponse(status: 200, headers: ["X-Length": "\(request.body.count)"], body: request.body)
        }
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        return router
    }

    private func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
    }

    private func chunked(_ body: [UInt8], chunkSize: Int) -> [UInt8] {
        var encoded: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let end = min(offset + chunkSize, body.count)
            encoded += bytes(String(end - offset, radix: 16) + "\r\n") + body[offset..<end] + bytes("\r\n")
            offset = end
        }
        return encoded + bytes("0\r\n\r\n")
    }

    @Test func bodyOfExactlyTheLimitIsAccepted() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let body = pattern(1000)
            let response = try client.send(method: "POST", path: "/echo", body: body)
            #expect(response.status == 200)
            #expect(response.headers["X-Length"] == "1000")
            #expect(response.body == body)
        }
    }

    @Test func contentLengthOverTheLimitIsRejectedWith413() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(method: "POST", path: "/echo", body: pattern(1001))
            #expect(response.status == 413)
            #expect(response.text == "too large: limit 1000")
            // The unread body makes libmicrohttpd close the connection; the next request reconnects.
            #expect(!client.isConnected)
            let next = try client.send(path: "/ping")
            #expect(next.text == "pong")
            #expect(client.connectCount == 2)
        }
    }

    @Test func hugeContentLengthIsRejectedBeforeTheBodyIsSent() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            // Only the head: an answer proves the server did not wait for 10 GB.
            try client.sendRaw(bytes("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000000\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.text == "too large: limit 1000")
        }
    }

    @Test func expectContinueWithAnOversizeBodyGets413Instead() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            try client.sendRaw(
                bytes("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"))
            let response = try client.readResponse()
            #expect(response.status == 413)
        }
    }

    @Test func chunkedUploadIsReassembled() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let body = pattern(999)
            try client.sendRaw(
                bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
                    + chunked(body, chunkSize: 100))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.headers["X-Length"] == "999")
            #expect(response.body == body)
            // Same connection still usable.
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(client.connectCount == 1)
        }
    }

    @Test func chunkedUploadOfExactlyTheLimitIsAcceptedAndOneMoreByteIs413() throws {
        try withServer(router(), configuration: testConfiguration(maxBodyBytes: 1000)) { server throws in
            let exact = HTTPClient(port: server.boundPort)
            try exact.sendRaw(
                bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
                    + chunked(pattern(1000), chunkSize: 333))
            let accepted = try exact.readResponse()
            #expect(accepted.status == 200)
            #expect(accepted.body == pattern(1000))

            let over = HTTPClient(port: server.boundPort)
            try over.sendRaw(
                bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
                    + chunked(pattern(1001), chunkSize: 333))
            let rejected = try over.readResponse()
            #expect(rejected.status == 413)
            #expect(rejected.text == "too large: limit 1000")
        }
    }

    @Test("by default a chunked body of any size over the limit is read to its end and answered 413")
    func chunkedUploadFarOverTheLimitGets413() throws {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0, threadPoolSize: 2, maxBodyBytes: 1000)
        configuration.connectionTimeoutSeconds = 30
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 30)
            let head = bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.sendRaw(head + chunked(pattern(10 << 20), chunkSize: 64 * 1024))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.text == "too large: limit 1000")
        }
    }

    @Test func chunkedUploadFarOverTheDiscardLimitIsCut() throws {
        let configuration = testConfiguration(maxBodyBytes: 1000, maxDiscardedBodyBytes: 10_000)
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            let head = bytes("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(throws: HTTPClientError.self) {
                try client.sendRaw(head + chunked(pattern(200_000), chunkSize: 4096))
                _ = try client.readResponse()
            }
            let fresh = HTTPClient(port: server.boundPort)
            #expect(try fresh.send(path: "/ping").text == "pong")
        }
    }

    @Test func emptyPostHasAnEmptyBody() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(method: "POST", path: "/echo")
            #expect(response.status == 200)
            #expect(response.headers["X-Length"] == "0")
            #expect(response.body.isEmpty)
        }
    }
}
