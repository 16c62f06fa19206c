import Dispatch
import Locking
import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// Request ids: taken from the client or generated, seen by handlers, echoed on every response.
@Suite struct HTTPServerRequestIDTests {
    private static let eventHeaders: HTTPHeaders = ["Content-Type": "text/event-stream"]

    /// `/id` answers with the request id it saw; `/later` answers it from another thread; `/events`
    /// streams it; `/hold` keeps the reply in `held`; `/claims` sets its own `X-Request-Id`.
    private func router(held: ReplyBox = ReplyBox()) -> Router {
        var router = makeRouter()
        router.add("GET", "/id") { request in HTTPResponse(status: 200, body: bytes(request.requestID ?? "none")) }
        router.add("POST", "/id") { request in HTTPResponse(status: 200, body: bytes(request.requestID ?? "none")) }
        router.addDeferred("GET", "/later") { request, reply in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                reply.send(HTTPResponse(status: 202, body: bytes(request.requestID ?? "none")))
            }
        }
        router.addDeferred("GET", "/events") { request, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            stream.write("data: \(request.requestID ?? "none")\n\n")
            stream.close()
        }
        router.addDeferred("GET", "/hold") { request, reply in held.append(request, reply) }
        router.add("GET", "/claims") { _ in HTTPResponse(status: 200, headers: ["X-Request-Id": "from-the-app"]) }
        return router
    }

    private func isGenerated(_ id: String?) -> Bool {
        guard let id else { return false }
        return id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    @Test func anIncomingIdIsKeptSeenByTheHandlerAndEchoed() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/id", headers: ["X-Request-Id": "abc-123_XYZ.~!"])
            #expect(response.status == 200)
            #expect(response.text == "abc-123_XYZ.~!")
            #expect(response.headers.values(for: "X-Request-Id") == ["abc-123_XYZ.~!"])
            // Any case of the header name is the same header.
            let lower = try client.send(path: "/id", headers: ["x-request-id": "lower"])
            #expect(lower.headers["X-Request-Id"] == "lower")
        }
    }

    @Test func aMissingIdIsGeneratedPerRequest() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let first = try client.send(path: "/id")
            let second = try client.send(path: "/id")
            #expect(isGenerated(first.headers["X-Request-Id"]))
            #expect(first.text == first.headers["X-Request-Id"])
            #expect(isGenerated(second.headers["X-Request-Id"]))
            #expect(first.headers["X-Request-Id"] != second.headers["X-Request-Id"])
        }
    }

    @Test func invalidIncomingIdsAreReplaced() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let longest = String(repeating: "k", count: 128)
            #expect(try client.send(path: "/id", headers: ["X-Request-Id": longest]).text == longest)
            for invalid in [String(repeating: "k", count: 129), "has space", "tab\there", "caf\u{E9}", ""] {
                let response = try client.send(path: "/id", headers: ["X-Request-Id": invalid])
                #expect(isGenerated(response.headers["X-Request-Id"]), "\(invalid)")
                #expect(response.text == response.headers["X-Request-Id"])
            }
        }
    }

    @Test func deferredAndStreamedResponsesCarryTheId() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let later = try client.send(path: "/later", headers: ["X-Request-Id": "deferred-1"])
            #expect(later.status == 202)
            #expect(later.text == "deferred-1")
            #expect(later.headers["X-Request-Id"] == "deferred-1")

            let head = try client.openStream(path: "/events", headers: ["X-Request-Id": "stream-1"])
            #expect(head.headers["X-Request-Id"] == "stream-1")
            #expect(try client.readLine() == "data: stream-1")

            let generated = try client.openStream(path: "/events")
            let id = try #require(generated.headers["X-Request-Id"])
            #expect(isGenerated(id))
            #expect(try client.readLine() == "data: \(id)")
        }
    }

    @Test func theServersIdReplacesOneTheApplicationSet() throws {
        try withServer(router()) { server throws in
            let response = try HTTPClient(port: server.boundPort).send(
                path: "/claims", headers: ["X-Request-Id": "mine"])
            #expect(response.headers.values(for: "X-Request-Id") == ["mine"])
        }
    }

    @Test func rejectionsCarryTheId() throws {
        var configuration = testConfiguration(maxBodyBytes: 10)
        configuration.maxHeaderBytes = 1024
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let tooLarge = try client.send(
                method: "POST", path: "/id", headers: ["X-Request-Id": "big-body"], body: bytes("more than ten bytes"))
            #expect(tooLarge.status == 413)
            #expect(tooLarge.headers["X-Request-Id"] == "big-body")

            let longURL = try client.send(
                path: "/" + String(repeating: "u", count: 9000), headers: ["X-Request-Id": "long-url"])
            #expect(longURL.status == 414)
            #expect(longURL.headers["X-Request-Id"] == "long-url")

            let bigHeaders = try client.send(
                path: "/id", headers: ["X-Request-Id": "big-headers", "X-Fill": String(repeating: "h", count: 2000)])
            #expect(bigHeaders.status == 431)
            #expect(bigHeaders.headers["X-Request-Id"] == "big-headers")

            let generated = try client.send(method: "POST", path: "/id", body: bytes("more than ten bytes"))
            #expect(generated.status == 413)
            #expect(isGenerated(generated.headers["X-Request-Id"]))
        }
    }

    @Test func theStopping503CarriesTheId() throws {
        let held = ReplyBox()
        let server = HTTPServer(
            configuration: testConfiguration(), responder: router(held: held), rejections: testRejections)
        try server.start()
        let client = HTTPClient(port: server.boundPort)
        try client.sendRaw(bytes("GET /hold HTTP/1.1\r\nHost: t\r\nX-Request-Id: held-1\r\n\r\n"))
        #expect(held.wait(for: 1))
        server.stop()
        let response = try client.readResponse()
        #expect(response.status == 503)
        #expect(response.headers["X-Request-Id"] == "held-1")
        #expect(held.takeAll()[0].request.requestID == "held-1")
    }

    @Test func aNilHeaderTurnsRequestIdsOff() throws {
        var configuration = testConfiguration()
        configuration.requestIDHeader = nil
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/id", headers: ["X-Request-Id": "ignored"])
            #expect(response.text == "none")
            #expect(response.headers["X-Request-Id"] == nil)
            // The application's own header is left alone then.
            #expect(try client.send(path: "/claims").headers["X-Request-Id"] == "from-the-app")
        }
    }

    @Test func anotherHeaderNameCanCarryTheId() throws {
        var configuration = testConfiguration()
        configuration.requestIDHeader = "X-Correlation-Id"
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(
                path: "/id", headers: ["X-Correlation-Id": "corr-7", "X-Request-Id": "other"])
            #expect(response.text == "corr-7")
            #expect(response.headers["X-Correlation-Id"] == "corr-7")
        }
    }

    // MARK: Without a socket

    @Test func acceptableIdsAreOneTo128VisibleASCIICharacters() {
        #expect(RequestID.isAcceptable("a"))
        #expect(RequestID.isAcceptable("!~"))
        #expect(RequestID.isAcceptable(String(repeating: "x", count: 128)))
        #expect(!RequestID.isAcceptable(""))
        #expect(!RequestID.isAcceptable(String(repeating: "x", count: 129)))
        #expect(!RequestID.isAcceptable("a b"))
        #expect(!RequestID.isAcceptable("a\u{7F}"))
        #expect(!RequestID.isAcceptable("\u{E9}"))
        #expect(RequestID.resolve(incoming: "keep-me") == "keep-me")
    }

    @Test func generatedIdsAre32LowercaseHexDigitsAndUniqueAcrossThreads() {
        let perThread = 20_000
        let batches = LockedValue<[[String]]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let ids = (0..<perThread).map { _ in RequestID.resolve(incoming: nil) }
            batches.withLock { $0.append(ids) }
        }
        let all = batches.withLock { $0 }.flatMap { $0 }
        #expect(all.count == 4 * perThread)
        #expect(Set(all).count == all.count)
        #expect(all.allSatisfy(isGenerated))
        // Scrambled, not sequential: consecutive ids share no long prefix.
        #expect(all.prefix(1000).map { $0.prefix(8) }.count == Set(all.prefix(1000).map { $0.prefix(8) }).count)
    }
}
