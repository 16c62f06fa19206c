import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// HTTPClient's response parsing against canned bytes.
@Suite struct HTTPClientTests {
    @Test func chunkedResponseWithTrailers() throws {
        let server = CannedServer(responses: [
            bytes(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: t\r\n\r\n"
            )
        ])
        let client = HTTPClient(port: server.port)
        let response = try client.send(path: "/")
        #expect(response.status == 200)
        #expect(response.reason == "OK")
        #expect(response.text == "hello, world")
        #expect(response.headers["x-a"] == "1")
    }

    @Test func responsesWithoutBodiesAndInterimResponses() throws {
        let server = CannedServer(responses: [
            bytes("HTTP/1.1 204 No Content\r\nX-N: 1\r\n\r\n"),
            bytes("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"),
            bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
            bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"),
        ])
        let client = HTTPClient(port: server.port)
        let noContent = try client.send(path: "/a")
        #expect(noContent.status == 204)
        #expect(noContent.body.isEmpty)
        let notModified = try client.send(path: "/b")
        #expect(notModified.status == 304)
        #expect(notModified.headers["ETag"] == "\"x\"")
        let head = try client.send(method: "HEAD", path: "/c")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        let created = try client.send(method: "POST", path: "/d", body: bytes("x"))
        #expect(created.status == 201)
        #expect(created.text == "ok")
        #expect(client.connectCount == 1)
    }

    @Test func bodyDelimitedByClose() throws {
        let server = CannedServer(responses: [bytes("HTTP/1.0 200 OK\r\n\r\nuntil the end")])
        let client = HTTPClient(port: server.port)
        let response = try client.send(path: "/")
        #expect(response.text == "until the end")
        #expect(!client.isConnected)
    }

    @Test func malformedStatusLineIsAnError() {
        let server = CannedServer(responses: [bytes("SMTP ready\r\n\r\n")])
        let client = HTTPClient(port: server.port)
        let error = #expect(throws: HTTPClientError.self) { try client.send(path: "/") }
        #expect(error?.code == .malformedResponse)
    }

    @Test func silenceTimesOut() {
        let server = CannedServer(responses: [], closeAfterLast: false)
        let client = HTTPClient(port: server.port, timeoutSeconds: 0.3)
        let error = #expect(throws: HTTPClientError.self) { try client.send(path: "/") }
        #expect(error?.code == .timedOut || error?.code == .connectionClosed)
    }

    @Test func refusedConnectionIsAnError() {
        let error = #expect(throws: HTTPClientError.self) { try HTTPClient(port: closedPort()).send(path: "/") }
        #expect(error?.code == .connectFailed)
    }

    // MARK: Streamed responses

    private let chunkedHead = bytes(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")

    @Test func chunksAreReadAsTheyArriveAndATimeoutKeepsTheStream() throws {
        let server = ScriptedServer(parts: [
            (0, chunkedHead + bytes("5\r\nhello\r\n")),
            (400, bytes("6\r\n world\r\n")),
            (0, bytes("0\r\n\r\n")),
        ])
        let client = HTTPClient(port: server.port)
        let head = try client.openStream(path: "/events")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(client.isStreamOpen)
        #expect(try client.readChunk(timeout: 2) == bytes("hello"))
        let error = #expect(throws: HTTPClientError.self) { try client.readChunk(timeout: 0.05) }
        #expect(error?.code == .timedOut)
        #expect(client.isStreamOpen)
        #expect(try client.readChunk(timeout: 2) == bytes(" world"))
        #expect(try client.readChunk(timeout: 2) == nil)
        #expect(!client.isStreamOpen)
        #expect(client.isConnected)
        #expect(client.responsesOnConnection == 1)
        #expect(try client.readChunk() == nil)
    }

    @Test func aChunkSplitAcrossReadsIsReturnedWhole() throws {
        let server = ScriptedServer(parts: [
            (0, chunkedHead + bytes("a;ext=1\r\n01234")),
            (300, bytes("56789\r\n0\r\nX-Trailer: t\r\n\r\n")),
        ])
        let client = HTTPClient(port: server.port)
        _ = try client.openStream(path: "/events")
        #expect(throws: HTTPClientError.self) { try client.readChunk(timeout: 0.05) }
        #expect(try client.readChunk(timeout: 2) == bytes("0123456789"))
        #expect(try client.readChunk(timeout: 2) == nil)
    }

    @Test func linesAreJoinedAndSplitAcrossChunks() throws {
        let server = ScriptedServer(parts: [
            (0, chunkedHead + bytes("a\r\ndata: a\nda\r\n")),
            (200, bytes("8\r\nta: b\r\n\n\r\n4\r\ntail\r\n0\r\n\r\n")),
        ])
        let client = HTTPClient(port: server.port)
        _ = try client.openStream(path: "/events")
        #expect(try client.readLine(timeout: 2) == "data: a")
        // The partial "da" is kept across the timeout.
        #expect(throws: HTTPClientError.self) { try client.readLine(timeout: 0.05) }
        #expect(try client.readLine(timeout: 2) == "data: b")
        #expect(try client.readLine(timeout: 2) == "")
        #expect(try client.readLine(timeout: 2) == "tail")
        #expect(try client.readLine(timeout: 2) == nil)
        #expect(!client.isStreamOpen)
    }

    @Test func lengthDelimitedBodiesAreStreamedToo() throws {
        let server = ScriptedServer(parts: [
            (0, bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")),
            (100, bytes("56789")),
        ])
        let client = HTTPClient(port: server.port)
        _ = try client.openStream(path: "/")
        var body: [UInt8] = []
        while let chunk = try client.readChunk(timeout: 2) { body += chunk }
        #expect(body == bytes("0123456789"))
        #expect(client.isConnected)
    }

    @Test func closeDelimitedBodiesEndWithTheConnection() throws {
        let server = CannedServer(responses: [bytes("HTTP/1.0 200 OK\r\n\r\ndata: 1\n\n")])
        let client = HTTPClient(port: server.port)
        _ = try client.openStream(path: "/")
        #expect(try client.readLine(timeout: 2) == "data: 1")
        #expect(try client.readLine(timeout: 2) == "")
        #expect(try client.readLine(timeout: 2) == nil)
        #expect(!client.isConnected)
    }

    @Test func aBodyCutShortIsAnError() throws {
        let server = CannedServer(responses: [chunkedHead + bytes("5\r\nhello\r\n")])
        let client = HTTPClient(port: server.port)
        _ = try client.openStream(path: "/")
        #expect(try client.readChunk(timeout: 2) == bytes("hello"))
        let error = #expect(throws: HTTPClientError.self) { try client.readChunk(timeout: 2) }
        #expect(error?.code == .connectionClosed)
        #expect(!client.isConnected)
    }
}
