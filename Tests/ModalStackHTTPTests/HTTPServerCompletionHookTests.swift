import Dispatch
import Glibc
import Locking
import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// `onRequestCompleted`: once per request that got a response, after it went out (or failed to).
@Suite struct HTTPServerCompletionHookTests {
    private static let eventHeaders: HTTPHeaders = ["Content-Type": "text/event-stream"]

    /// `/slow/{ms}` answers from another thread once `time` has moved on by `ms`.
    private func router(
        streams: StreamBox = StreamBox(),
        held: ReplyBox = ReplyBox(),
        time: ManualTime = ManualTime()
    ) -> Router {
        var router = makeRouter()
        router.add("GET", "/v1/sessions/{sessionId}") { request in
            HTTPResponse(status: 200, body: bytes("session \(request.pathParameters["sessionId"] ?? "")"))
        }
        router.add("POST", "/echo") { request in HTTPResponse(status: 201, body: request.body) }
        router.addDeferred("GET", "/slow/{ms}") { request, reply in
            let delay = Int(request.pathParameters["ms"] ?? "") ?? 0
            DispatchQueue.global().async {
                time.advance(by: .milliseconds(delay))
                reply.send(HTTPResponse(status: 202, body: bytes("waited")))
            }
        }
        router.addDeferred("GET", "/events/{n}") { request, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            streams.append(request, stream)
        }
        router.addDeferred("GET", "/hold/{n}") { request, reply in held.append(request, reply) }
        return router
    }

    @Test func aRoutedRequestIsReportedOnceWithItsTemplate() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/v1/sessions/s%201?verbose=1", headers: ["X-Request-Id": "routed-1"])
            #expect(response.text == "session s 1")
            #expect(log.wait(for: 1))
            let record = try #require(log.all.first)
            #expect(record.method == "GET")
            #expect(record.path == "/v1/sessions/s%201")
            #expect(record.routeTemplate == "/v1/sessions/{sessionId}")
            #expect(record.status == 200)
            #expect(record.responseBodyBytes == 11)
            #expect(record.requestID == "routed-1")
            #expect(record.remoteAddress == "127.0.0.1")
            #expect(record.duration >= 0 && record.duration < 5)
            #expect(record.endedNormally)
        }
    }

    @Test func everyRequestOnAKeepAliveConnectionIsReportedExactlyOnce() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for n in 0..<10 {
                #expect(try client.send(path: "/v1/sessions/\(n)").status == 200)
                #expect(try client.send(method: "POST", path: "/echo", body: bytes("body \(n)")).status == 201)
            }
            #expect(client.connectCount == 1)
            #expect(log.wait(for: 20))
            server.stop()  // nothing is reported after stop()
            let records = log.all
            #expect(records.count == 20)
            #expect(Set(records.compactMap(\.requestID)).count == 20)
            #expect(
                records.filter { $0.routeTemplate == "/echo" }.map(\.responseBodyBytes).sorted()
                    == Array(repeating: 6, count: 10))
        }
    }

    @Test func unroutedRequestsHaveNoTemplate() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let missing = try client.send(path: "/nowhere")
            #expect(missing.status == 404)
            #expect(try client.send(method: "DELETE", path: "/v1/sessions/1").status == 405)
            #expect(log.wait(for: 2))
            let records = log.all
            #expect(records.map(\.status) == [404, 405])
            #expect(records.map(\.routeTemplate) == [nil, nil])
            #expect(records[0].path == "/nowhere")
            #expect(records[0].responseBodyBytes == missing.body.count)
        }
    }

    @Test func aHeadRequestReportsNoBodyBytes() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let response = try HTTPClient(port: server.boundPort).send(method: "HEAD", path: "/v1/sessions/1")
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(log.wait(for: 1))
            #expect(log.all.first?.responseBodyBytes == 0)
            #expect(log.all.first?.routeTemplate == "/v1/sessions/{sessionId}")
        }
    }

    @Test func aDeferredRequestCountsItsWaitInTheDuration() throws {
        let log = CompletionLog()
        let time = ManualTime()
        var configuration = testConfiguration(reportingTo: log)
        configuration.time = time
        try withServer(router(time: time), configuration: configuration) { server throws in
            #expect(try HTTPClient(port: server.boundPort).send(path: "/slow/120").status == 202)
            #expect(log.wait(for: 1))
            let record = try #require(log.all.first)
            #expect(record.routeTemplate == "/slow/{ms}")
            #expect(record.status == 202)
            #expect(record.responseBodyBytes == 6)
            #expect(record.duration >= 0.12 && record.duration < 5, "\(record.duration)")
            #expect(record.endedNormally)
        }
    }

    @Test func aStreamClosedByTheServerEndsNormallyWithItsBytes() throws {
        let log = CompletionLog()
        let streams = StreamBox()
        try withServer(router(streams: streams), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            stream.write("data: one\n\n")
            #expect(waitUntil { stream.isSuspended })
            stream.write("data: two\n\n")
            stream.close()
            while try client.readChunk() != nil {}
            #expect(log.wait(for: 1))
            let record = try #require(log.all.first)
            #expect(record.routeTemplate == "/events/{n}")
            #expect(record.status == 200)
            #expect(record.responseBodyBytes == 22)
            #expect(record.endedNormally)
        }
    }

    @Test func aClientLeavingMidStreamIsReportedAsNotEndedNormally() throws {
        let log = CompletionLog()
        let streams = StreamBox()
        try withServer(router(streams: streams), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            stream.write("data: one\n\n")
            #expect(try client.readLine() == "data: one")
            #expect(waitUntil { stream.isSuspended })  // idle again
            client.close()
            #expect(log.wait(for: 1))
            let record = try #require(log.all.first)
            #expect(record.routeTemplate == "/events/{n}")
            #expect(record.status == 200)
            #expect(record.responseBodyBytes == 11)
            #expect(!record.endedNormally)
            #expect(stream.isClosed)
        }
    }

    @Test func aClientLeavingWhileEventsFlowIsReportedWithTheBytesSoFar() throws {
        let log = CompletionLog()
        let streams = StreamBox()
        try withServer(router(streams: streams), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            let written = LockedValue(0)
            let writerDone = Counter()
            startThread {
                let event = "data: tick\n\n"
                while stream.write(event) {
                    written.withLock { $0 += event.utf8.count }
                    usleep(500)  // not a wait: events keep flowing while the client leaves
                }
                writerDone.increment()
            }
            #expect(try client.readLine() == "data: tick")
            client.close()
            #expect(log.wait(for: 1))
            let record = try #require(log.all.first)
            #expect(!record.endedNormally)
            #expect(record.responseBodyBytes >= 12)
            #expect(waitUntil { writerDone.value == 1 })
            #expect(record.responseBodyBytes <= written.withLock { $0 })
        }
    }

    @Test func rejectionsAreReported() throws {
        let log = CompletionLog()
        var configuration = testConfiguration(maxBodyBytes: 10)
        configuration.onRequestCompleted = log.hook
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let announced = try client.send(method: "POST", path: "/echo", body: bytes("more than ten bytes"))
            #expect(announced.status == 413)
            try client.sendRaw(
                bytes(
                    "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n01234567890123456789\r\n0\r\n\r\n"
                ))
            let chunked = try client.readResponse()
            #expect(chunked.status == 413)
            let long = try client.send(path: "/" + String(repeating: "l", count: 9000))
            #expect(long.status == 414)
            #expect(log.wait(for: 3))
            // The first 413 closed its connection: the others may be reported first.
            let records = log.all.sorted { $0.status < $1.status }
            #expect(records.map(\.status) == [413, 413, 414])
            #expect(records.map(\.routeTemplate) == [nil, nil, nil])
            #expect(records.map(\.responseBodyBytes) == [announced.body.count, chunked.body.count, long.body.count])
            #expect(records.map(\.path) == ["/echo", "/echo", "/" + String(repeating: "l", count: 9000)])
        }
    }

    @Test func the503AtStopIsReportedWithItsRoute() throws {
        let log = CompletionLog()
        let held = ReplyBox()
        let server = HTTPServer(
            configuration: testConfiguration(reportingTo: log), responder: router(held: held),
            rejections: testRejections)
        try server.start()
        let client = HTTPClient(port: server.boundPort)
        try client.sendRaw(bytes("GET /hold/1 HTTP/1.1\r\nHost: t\r\n\r\n"))
        #expect(held.wait(for: 1))
        server.stop()
        #expect(try client.readResponse().status == 503)
        #expect(log.wait(for: 1))
        let record = try #require(log.all.first)
        #expect(record.status == 503)
        #expect(record.routeTemplate == "/hold/{n}")
        #expect(record.responseBodyBytes == 8)
        #expect(log.all.count == 1)
    }

    @Test func aResponseToAClientThatLeftWhileSuspendedIsReportedOnce() throws {
        let log = CompletionLog()
        let held = ReplyBox()
        try withServer(router(held: held), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("GET /hold/1 HTTP/1.1\r\nHost: t\r\n\r\n"))
            #expect(held.wait(for: 1))
            client.close()
            // The server has the client's FIN, which nobody reads while the request is suspended.
            #expect(
                waitUntil(pollingEvery: .milliseconds(10)) {
                    serverConnectionStates(port: server.boundPort).contains(.closeWait)
                })
            held.takeAll()[0].reply.send(HTTPResponse(status: 200, body: bytes("too late")))
            #expect(log.wait(for: 1))
            server.stop()  // nothing is reported after stop()
            // Not `endedNormally` either way: the kernel usually takes the late response although
            // the client is gone (only its RST would tell), and libmicrohttpd then counts it sent.
            #expect(log.all.map(\.status) == [200])
            #expect(log.all.map(\.routeTemplate) == ["/hold/{n}"])
        }
    }

    @Test func requestsWithoutAResponseAreNotReported() throws {
        let log = CompletionLog()
        try withServer(router(), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly part"))
            client.close()
            #expect(try HTTPClient(port: server.boundPort).send(path: "/v1/sessions/after").status == 200)
            #expect(log.wait(for: 1))
            server.stop()  // nothing is reported after stop()
            #expect(log.all.map(\.path) == ["/v1/sessions/after"])
        }
    }
}
