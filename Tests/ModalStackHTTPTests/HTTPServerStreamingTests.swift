import Dispatch
import Glibc
import Locking
import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// Streamed responses (Server-Sent Events) on a live server.
@Suite struct HTTPServerStreamingTests {
    private static let eventHeaders: HTTPHeaders = ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]

    /// `/events/{n}` starts a stream and hands it to `streams`; `/ping` answers at once.
    private func router(_ streams: StreamBox) -> Router {
        var router = makeRouter()
        router.addDeferred("GET", "/events/{n}") { request, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            streams.append(request, stream)
        }
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        return router
    }

    @Test func bytesWrittenFromAnotherThreadArriveInOrderAndPromptly() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let head = try client.openStream(path: "/events/1")
            #expect(head.status == 200)
            #expect(head.headers["Content-Type"] == "text/event-stream")
            #expect(head.headers["Transfer-Encoding"]?.lowercased() == "chunked")
            #expect(head.headers["Content-Length"] == nil)
            let stream = try streams.started(0)

            let clock = ContinuousClock()
            let start = clock.now
            let workerCPUBefore = streams.workerCPUSeconds
            let sentAt = LockedValue<[ContinuousClock.Instant]>([])
            startThread {
                for n in 0..<20 {
                    sentAt.withLock { $0.append(clock.now) }
                    stream.write("id: \(n)\ndata: event \(n)\n\n")
                    usleep(15_000)  // not a wait: the idle gap between events, whose CPU cost is measured
                }
            }
            var slowest = Duration.zero
            for n in 0..<20 {
                #expect(try client.readLine(timeout: 5) == "id: \(n)")
                #expect(try client.readLine(timeout: 5) == "data: event \(n)")
                #expect(try client.readLine(timeout: 5) == "")
                slowest = max(slowest, clock.now - sentAt.withLock { $0[n] })
            }
            // Typically well under a millisecond; generous for a loaded machine.
            #expect(slowest < .milliseconds(500), "slowest event took \(slowest)")
            // Between events the connection is suspended: its worker thread sleeps, rather than
            // asking the reader for more again and again.
            let workerCPU = streams.workerCPUSeconds - workerCPUBefore
            let elapsed = seconds(clock.now - start)
            #expect(workerCPU < elapsed / 4, "the worker thread was busy \(workerCPU) s of \(elapsed) s")
            stream.close()
            #expect(try client.readChunk() == nil)
        }
    }

    @Test func concurrentWritesEachStayWholeAndInOrder() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            DispatchQueue.concurrentPerform(iterations: 4) { writer in
                for n in 0..<1500 {
                    stream.write("\(writer):\(n)\n")
                }
            }
            stream.close()

            var body: [UInt8] = []
            while let chunk = try client.readChunk() { body += chunk }
            let lines = String(decoding: body, as: UTF8.self).split(separator: "\n")
            #expect(lines.count == 6000)
            for writer in 0..<4 {
                let mine = lines.filter { $0.hasPrefix("\(writer):") }
                #expect(mine == (0..<1500).map { "\(writer):\($0)"[...] })
            }
        }
    }

    @Test func writesWaitingTogetherGoOutInFewChunks() throws {
        var router = makeRouter()
        router.addDeferred("GET", "/burst") { _, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            // All buffered before libmicrohttpd first asks for data.
            for n in 0..<2000 { stream.write("data: \(n)\n\n") }
            stream.close()
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/burst")
            var body: [UInt8] = []
            var chunks = 0
            while let chunk = try client.readChunk() {
                body += chunk
                chunks += 1
            }
            #expect(String(decoding: body, as: UTF8.self) == (0..<2000).map { "data: \($0)\n\n" }.joined())
            #expect(chunks < 20, "\(chunks) chunks for \(body.count) bytes")
        }
    }

    @Test func closeEndsTheBodyAndTheConnectionServesTheNextRequest() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for round in 0..<3 {
                _ = try client.openStream(path: "/events/\(round)")
                let stream = try streams.started(round)
                let closes = Counter()
                stream.onClose { closes.increment() }
                #expect(stream.write("data: \(round)\n\n"))
                stream.close()
                stream.close()
                #expect(stream.isClosed)
                #expect(!stream.write("data: late\n\n"))
                #expect(closes.value == 1)
                var body: [UInt8] = []
                while let chunk = try client.readChunk() { body += chunk }
                #expect(String(decoding: body, as: UTF8.self) == "data: \(round)\n\n")
                #expect(!client.isStreamOpen)
                #expect(try client.send(path: "/ping").text == "pong")
            }
            #expect(client.connectCount == 1)
            #expect(client.responsesOnConnection == 6)
        }
    }

    @Test func aRequestBeforeTheEndOfAStreamTakesANewConnection() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            #expect(streams.wait(for: 1))
            let closes = Counter()
            streams.stream(0).onClose { closes.increment() }
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(client.connectCount == 2)
            // The abandoned connection was closed: the server notices and closes the stream.
            #expect(waitUntil { closes.value == 1 })
        }
    }

    @Test func aStreamStartedLaterFromAnotherThread() throws {
        let held = ReplyBox()
        let secondStart = LockedValue("not tried")
        var router = makeRouter()
        router.addDeferred("GET", "/later") { request, reply in held.append(request, reply) }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            startThread {
                guard held.wait(for: 1) else { return }
                let reply = held.takeAll()[0].reply
                guard waitUntil({ reply.isSuspended }) else { return }
                guard let stream = reply.startStream(status: 201, headers: Self.eventHeaders) else { return }
                let second = reply.startStream(status: 200)
                secondStart.withLock { $0 = second == nil ? "refused" : "started" }
                reply.send(HTTPResponse(status: 500))
                // Written before the worker thread has queued the head: buffered until then.
                stream.write("data: early\n\n")
                // Taken: the next write resumes the connection.
                guard waitUntil({ stream.isSuspended }) else { return }
                stream.write("data: later\n\n")
                stream.close()
            }
            let head = try client.openStream(path: "/later")
            #expect(head.status == 201)
            var lines: [String] = []
            while let line = try client.readLine() { lines.append(line) }
            #expect(lines == ["data: early", "", "data: later", ""])
            #expect(secondStart.withLock { $0 } == "refused")
        }
    }

    @Test func aClientHangingUpOnAnIdleStreamClosesIt() throws {
        let streams = StreamBox()
        let log = CompletionLog()
        try withServer(router(streams), configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            let closes = Counter()
            stream.onClose { closes.increment() }
            // Idle: the connection is suspended, and the hang-up watcher watches it.
            #expect(waitUntil { stream.isSuspended })
            client.close()
            // Noticed without any write (the hang-up watcher).
            #expect(waitUntil { closes.value == 1 })
            #expect(stream.isClosed)
            #expect(!stream.write("data: gone\n\n"))
            // The request is over (its completion ran): nothing can close the stream again.
            #expect(log.wait(for: 1))
            #expect(closes.value == 1)
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
        }
    }

    @Test func aClientHangingUpWhileEventsFlowClosesTheStream() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            let closes = Counter()
            stream.onClose { closes.increment() }
            let writerDone = Counter()
            startThread {
                var n = 0
                while stream.write("data: \(n)\n\n") {
                    n += 1
                    usleep(500)  // not a wait: events keep flowing while the client leaves
                }
                writerDone.increment()
            }
            #expect(try client.readLine() == "data: 0")
            client.close()
            #expect(waitUntil { writerDone.value == 1 })
            #expect(closes.value == 1)
            #expect(stream.isClosed)
        }
    }

    @Test func stopEndsOpenStreamsCleanly() throws {
        let streams = StreamBox()
        let server = HTTPServer(
            configuration: testConfiguration(), responder: router(streams), rejections: testRejections)
        try server.start()
        let clients = (0..<6).map { _ in HTTPClient(port: server.boundPort) }
        for (n, client) in clients.enumerated() {
            _ = try client.openStream(path: "/events/\(n)")
        }
        #expect(streams.wait(for: 6))
        // Each reader found nothing to send yet and suspended its connection.
        #expect(waitUntil { (0..<6).allSatisfy { streams.stream($0).isSuspended } })
        let closes = Counter()
        for n in 0..<6 {
            let stream = streams.stream(n)
            stream.onClose { closes.increment() }
            // Half of them have unsent bytes when the server stops; the others are idle.
            if n.isMultiple(of: 2) { stream.write("data: \(n)\n\n") }
        }

        let clock = ContinuousClock()
        let start = clock.now
        server.stop()
        #expect(clock.now - start < .seconds(3))
        #expect(closes.value == 6)
        for n in 0..<6 {
            let stream = streams.stream(n)
            #expect(stream.isClosed)
            #expect(!stream.write("data: after stop\n\n"))
        }
        for (n, client) in clients.enumerated() {
            var body: [UInt8] = []
            // The end of the chunked body arrived: nil, not a connectionClosed error.
            while let chunk = try client.readChunk(timeout: 5) { body += chunk }
            #expect(String(decoding: body, as: UTF8.self) == (n.isMultiple(of: 2) ? "data: \(n)\n\n" : ""))
        }
        #expect(server.boundPort == 0)
    }

    @Test func hundredsOfConcurrentStreamsEachGetTheirOwnEvents() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let count = 150
            let clients = (0..<count).map { _ in HTTPClient(port: server.boundPort) }
            for (n, client) in clients.enumerated() {
                _ = try client.openStream(path: "/events/\(n)")
            }
            #expect(streams.wait(for: count))
            let byNumber = Dictionary(
                uniqueKeysWithValues: streams.all.map { (Int($0.request.pathParameters["n"] ?? "") ?? -1, $0.stream) })
            let closes = Counter()
            for stream in byNumber.values { stream.onClose { closes.increment() } }

            DispatchQueue.concurrentPerform(iterations: 4) { writer in
                for round in 0..<10 {
                    for n in stride(from: writer, to: count, by: 4) {
                        byNumber[n]?.write("data: \(n)-\(round)\n\n")
                    }
                }
            }
            var failures: [String] = []
            for (n, client) in clients.enumerated() {
                for round in 0..<10 {
                    let line = try client.readLine()
                    if line != "data: \(n)-\(round)" { failures.append("\(n): \(line ?? "nil")") }
                    #expect(try client.readLine() == "")
                }
            }
            #expect(failures == [])
            for stream in byNumber.values { stream.close() }
            for client in clients {
                #expect(try client.readChunk() == nil)
            }
            #expect(closes.value == count)
        }
    }

    @Test func twoHundredIdleStreamsAreNotPolled() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let count = 200
            let clients = (0..<count).map { _ in HTTPClient(port: server.boundPort) }
            for (n, client) in clients.enumerated() {
                _ = try client.openStream(path: "/events/\(n)")
            }
            #expect(streams.wait(for: count))
            let all = streams.all.map(\.stream)
            // Each reader found nothing to send and suspended its connection: the worker threads that
            // serve them have nothing to do.
            #expect(waitUntil { all.allSatisfy(\.isSuspended) })
            let workerCPUBefore = streams.workerCPUSeconds
            let cpuBefore = processCPUSeconds()
            let clock = ContinuousClock()
            let start = clock.now
            usleep(2_000_000)  // not a wait: the idle time whose CPU use is measured
            let cpu = processCPUSeconds() - cpuBefore
            let workerCPU = streams.workerCPUSeconds - workerCPUBefore
            let elapsed = seconds(clock.now - start)
            let permille = Int(cpu / elapsed * 1000)
            print(
                "200 idle streams: whole test process used \(cpu) s CPU in \(elapsed) s (\(permille) ‰),"
                    + " the server's worker threads \(workerCPU) s")
            // A busy loop calls the readers millions of times a second, keeping the worker threads busy.
            #expect(workerCPU < elapsed / 20, "the worker threads were busy \(workerCPU) s of \(elapsed) s")

            for stream in all { stream.write("data: wake\n\n") }
            for client in clients {
                #expect(try client.readLine() == "data: wake")
            }
            for stream in all { stream.close() }
            for client in clients {
                #expect(try client.readLine() == "")
                #expect(try client.readLine() == nil)
            }
        }
    }

    @Test func aClientThatDoesNotReadHitsTheBufferLimit() throws {
        let streams = StreamBox()
        var configuration = testConfiguration()
        configuration.maxStreamBufferBytes = 64 * 1024
        try withServer(router(streams), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort, timeoutSeconds: 5)
            _ = try client.openStream(path: "/events/1")
            let stream = try streams.started(0)
            let closes = Counter()
            stream.onClose { closes.increment() }

            // The client reads nothing: the kernel's and libmicrohttpd's buffers fill, then ours. Each
            // write waits (a while) for the previous one to be taken, as a reading client would allow.
            let block = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
            var written = 0
            while stream.write(block) {
                written += block.count
                if written > 512 << 20 { break }
                _ = waitUntil(timeout: .milliseconds(200)) { stream.deliveredCount == written }
            }
            print("a client that does not read: \(written) bytes accepted before the stream closed")
            #expect(written <= 512 << 20, "the stream never closed")
            // More than the limit went out: only unsent bytes count.
            #expect(written > 2 * 64 * 1024)
            #expect(stream.isClosed)
            #expect(closes.value == 1)

            // The server dropped the connection: the client reads what was sent, then no proper end.
            let error = #expect(throws: HTTPClientError.self) {
                while try client.readChunk() != nil {}
            }
            #expect(error?.code == .connectionClosed || error?.code == .ioFailed)
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
        }
    }

    @Test func aHeadRequestGetsTheHeadAloneAndItsStreamCloses() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let head = try client.openStream(method: "HEAD", path: "/events/1")
            #expect(head.status == 200)
            #expect(head.headers["Content-Type"] == "text/event-stream")
            #expect(!client.isStreamOpen)
            let stream = try streams.started(0)
            #expect(stream.isClosed)
            #expect(!stream.write("data: x\n\n"))
            // Nothing followed the head: the next response on the connection is read correctly.
            #expect(try client.send(path: "/ping").text == "pong")
            #expect(client.connectCount == 1)
        }
    }

    @Test func aBodilessStatusClosesTheStreamAtOnce() throws {
        let closes = Counter()
        var router = makeRouter()
        router.addDeferred("GET", "/status/{code}") { request, reply in
            let code = Int(request.pathParameters["code"] ?? "") ?? 500
            let stream = reply.startStream(status: code, headers: Self.eventHeaders)
            stream?.onClose { closes.increment() }
            stream?.write("data: never sent\n\n")
        }
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for code in [304, 204] {
                let head = try client.openStream(path: "/status/\(code)")
                #expect(head.status == code)
                #expect(!client.isStreamOpen)
                #expect(try client.send(path: "/ping").text == "pong")
            }
            #expect(client.connectCount == 1)
            #expect(closes.value == 2)
        }
    }

    @Test func streamsAreReleasedOnceTheirRequestsComplete() throws {
        final class WeakStream: Sendable {
            nonisolated(unsafe) weak var stream: HTTPStream?
            init(_ stream: HTTPStream) { self.stream = stream }
        }
        let seen = LockedValue<[WeakStream]>([])
        var router = makeRouter()
        router.addDeferred("GET", "/closed") { _, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            seen.withLock { $0.append(WeakStream(stream)) }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) {
                stream.write("data: x\n\n")
                stream.close()
            }
        }
        router.addDeferred("GET", "/abandoned") { _, reply in
            guard let stream = reply.startStream(status: 200, headers: Self.eventHeaders) else { return }
            seen.withLock { $0.append(WeakStream(stream)) }
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for _ in 0..<10 {
                _ = try client.openStream(path: "/closed")
                while try client.readChunk() != nil {}
                _ = try client.openStream(path: "/abandoned")
                client.close()  // the server notices the hang-up and ends the stream
            }
            _ = waitUntil { !seen.withLock { $0.contains { $0.stream != nil } } }
            #expect(seen.withLock { $0.count } == 20)
            #expect(seen.withLock { $0.filter { $0.stream != nil }.count } == 0)
        }
    }

    @Test func anHTTP10ClientGetsABodyDelimitedByClose() throws {
        let streams = StreamBox()
        try withServer(router(streams)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("GET /events/1 HTTP/1.0\r\n\r\n"))
            let stream = try streams.started(0)
            stream.write("data: one\n\n")
            #expect(waitUntil { stream.isSuspended })
            stream.write("data: two\n\n")
            stream.close()
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.headers["Transfer-Encoding"] == nil)
            #expect(response.text == "data: one\n\ndata: two\n\n")
            #expect(!client.isConnected)
        }
    }
}

// MARK: Helpers

/// Streams started by handlers, for the test to write to.
final class StreamBox: Sendable {
    private let streams = LockedValue<[(request: HTTPRequest, stream: HTTPStream)]>([])
    /// The worker threads the handlers ran on: each connection's content reader runs there too.
    private let workerClocks = LockedValue<Set<ThreadCPUClock>>([])

    /// Called by the handler that started `stream`, on its connection's worker thread.
    func append(_ request: HTTPRequest, _ stream: HTTPStream) {
        workerClocks.withLock { _ = $0.insert(.current()) }
        streams.withLock { $0.append((request, stream)) }
    }

    /// The CPU time used so far by the worker threads that started the streams (and read them).
    var workerCPUSeconds: Double {
        workerClocks.withLock { $0 }.reduce(0) { $0 + $1.seconds }
    }

    var all: [(request: HTTPRequest, stream: HTTPStream)] { streams.withLock { $0 } }

    /// The `index`th stream started.
    func stream(_ index: Int) -> HTTPStream { streams.withLock { $0[index].stream } }

    /// The `index`th stream once it has started (waiting up to 10 s); fails the test, rather than
    /// trapping on the index, when it does not start.
    func started(_ index: Int) throws -> HTTPStream {
        try #require(wait(for: index + 1), "stream \(index) did not start within 10 s")
        return stream(index)
    }

    /// Waits (polling) until `count` streams were started; false on timeout.
    func wait(for count: Int, timeout: Duration = .seconds(10)) -> Bool {
        waitUntil(timeout: timeout) { self.streams.withLock { $0.count } >= count }
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let count = LockedValue(0)

    func increment() { count.withLock { $0 += 1 } }

    var value: Int { count.withLock { $0 } }
}

/// The CPU time of one thread, readable from any thread while that one lives: unlike the whole
/// process's, it does not count the tests running at the same time.
struct ThreadCPUClock: Hashable, Sendable {
    private let id: clockid_t

    /// The calling thread's clock.
    static func current() -> ThreadCPUClock {
        var id = clockid_t()
        let status = pthread_getcpuclockid(pthread_self(), &id)
        precondition(status == 0, "pthread_getcpuclockid failed: \(status)")
        return ThreadCPUClock(id: id)
    }

    /// The CPU time the thread has used so far.
    var seconds: Double {
        var time = timespec()
        clock_gettime(id, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// `duration` in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// User plus system CPU time of this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
