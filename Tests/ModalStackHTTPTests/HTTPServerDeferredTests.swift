import Dispatch
import Locking
import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

/// Replies answered later, from other threads, with libmicrohttpd suspending the connections.
@Suite struct HTTPServerDeferredTests {
    @Test func answerFromAnotherThreadAfterADelay() throws {
        var router = makeRouter()
        router.addDeferred("GET", "/slow/{ms}") { request, reply in
            let delay = Int(request.pathParameters["ms"] ?? "") ?? 0
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
                reply.send(HTTPResponse(status: 202, headers: ["X-Delay": "\(delay)"], body: bytes("waited \(delay)")))
            }
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let clock = ContinuousClock()
            let start = clock.now
            let response = try client.send(path: "/slow/150")
            #expect(clock.now - start >= .milliseconds(150))
            #expect(response.status == 202)
            #expect(response.headers["X-Delay"] == "150")
            #expect(response.text == "waited 150")
        }
    }

    @Test func answerFromWithinRespondAndSecondSendIgnored() throws {
        var router = makeRouter()
        router.addDeferred("GET", "/now") { _, reply in
            reply.send(HTTPResponse(status: 200, body: bytes("first")))
            reply.send(HTTPResponse(status: 500, body: bytes("second")))
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for _ in 0..<3 {
                let response = try client.send(path: "/now")
                #expect(response.status == 200)
                #expect(response.text == "first")
            }
            #expect(client.connectCount == 1)
        }
    }

    @Test func sendRacingWithTheEndOfRespond() throws {
        // send() runs on another thread while respond() is still running or has just returned:
        // every interleaving of the state machine gets exercised.
        var router = makeRouter()
        router.addDeferred("GET", "/race/{n}") { request, reply in
            let n = Int(request.pathParameters["n"] ?? "") ?? 0
            DispatchQueue.global().async {
                reply.send(HTTPResponse(status: 200, body: bytes("race \(n)")))
            }
            // Spin for a varying moment so that send lands before, during or after the return.
            let spins = (n * 7919) % 2000
            var sink = 0
            for i in 0..<spins { sink &+= i }
            if sink == -1 { print(sink) }
        }
        try withServer(router) { server throws in
            let port = server.boundPort
            let failures = LockedValue<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                let client = HTTPClient(port: port)
                for i in 0..<150 {
                    let n = worker * 1000 + i
                    do {
                        let text = try client.send(path: "/race/\(n)").text
                        if text != "race \(n)" { failures.withLock { $0.append("\(n): \(text)") } }
                    } catch {
                        failures.withLock { $0.append("\(n): \(error)") }
                    }
                }
                if client.connectCount != 1 { failures.withLock { $0.append("worker \(worker) reconnected") } }
            }
            #expect(failures.withLock { $0 } == [])
        }
    }

    @Test func twoHundredHeldRequestsAnsweredTogether() throws {
        let held = ReplyBox()
        var router = makeRouter()
        router.addDeferred("GET", "/hold/{n}") { request, reply in held.append(request, reply) }
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        try withServer(router) { server throws in
            let clients = (0..<200).map { _ in HTTPClient(port: server.boundPort) }
            for (n, client) in clients.enumerated() {
                try client.sendRaw(bytes("GET /hold/\(n) HTTP/1.1\r\nHost: t\r\n\r\n"))
            }
            #expect(held.wait(for: 200))
            // Worker threads are free while 200 requests are suspended.
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")

            let replies = held.takeAll()
            DispatchQueue.concurrentPerform(iterations: replies.count) { index in
                let (request, reply) = replies[index]
                reply.send(HTTPResponse(status: 200, body: bytes("held \(request.pathParameters["n"] ?? "")")))
            }
            for (n, client) in clients.enumerated() {
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.text == "held \(n)")
            }
            // The connections are still alive after the resume.
            #expect(try clients[0].send(path: "/ping").text == "pong")
            #expect(clients[0].connectCount == 1)
        }
    }

    @Test func stopAnswersSuspendedRequestsWith503() throws {
        let held = ReplyBox()
        var router = makeRouter()
        router.addDeferred("GET", "/hold/{n}") { request, reply in held.append(request, reply) }
        let server = HTTPServer(configuration: testConfiguration(), responder: router, rejections: testRejections)
        try server.start()
        let port = server.boundPort
        let clients = (0..<5).map { _ in HTTPClient(port: port) }
        for (n, client) in clients.enumerated() {
            try client.sendRaw(bytes("GET /hold/\(n) HTTP/1.1\r\nHost: t\r\n\r\n"))
        }
        #expect(held.wait(for: 5))

        server.stop()
        for client in clients {
            let response = try client.readResponse()
            #expect(response.status == 503)
            #expect(response.text == "stopping")
            #expect(response.headers["Connection"]?.lowercased() == "close")
        }
        // Late answers after the stop are ignored without touching the freed connections.
        for (_, reply) in held.takeAll() {
            #expect(reply.isAnswered)
            reply.send(HTTPResponse(status: 200))
        }
        server.stop()
        #expect(server.boundPort == 0)
        #expect(throws: HTTPClientError.self) { try HTTPClient(port: port).send(path: "/hold/9") }
    }

    @Test func clientGoneWhileSuspendedIsHarmless() throws {
        let held = ReplyBox()
        var router = makeRouter()
        router.addDeferred("GET", "/hold") { request, reply in held.append(request, reply) }
        router.add("GET", "/ping") { _ in HTTPResponse(status: 200, body: bytes("pong")) }
        let log = CompletionLog()
        try withServer(router, configuration: testConfiguration(reportingTo: log)) { server throws in
            let client = HTTPClient(port: server.boundPort)
            try client.sendRaw(bytes("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"))
            #expect(held.wait(for: 1))
            client.close()
            // The server has the client's FIN, which nobody reads while the request is suspended.
            #expect(
                waitUntil(pollingEvery: .milliseconds(10)) {
                    serverConnectionStates(port: server.boundPort).contains(.closeWait)
                })
            let (_, reply) = held.takeAll()[0]
            reply.send(HTTPResponse(status: 200, body: bytes("too late")))
            reply.send(HTTPResponse(status: 200, body: bytes("again")))
            // The late answer was queued and the request is over.
            #expect(log.wait(for: 1))
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong")
        }
    }

    @Test func stopWithASuspendedRequestWhoseClientLeft() throws {
        let held = ReplyBox()
        var router = makeRouter()
        router.addDeferred("GET", "/hold") { request, reply in held.append(request, reply) }
        let server = HTTPServer(configuration: testConfiguration(), responder: router, rejections: testRejections)
        try server.start()
        let client = HTTPClient(port: server.boundPort)
        try client.sendRaw(bytes("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"))
        #expect(held.wait(for: 1))
        client.close()
        let clock = ContinuousClock()
        let start = clock.now
        server.stop()
        #expect(clock.now - start < .seconds(3))
        held.takeAll()[0].reply.send(HTTPResponse(status: 200))
    }

    @Test func requestsSuspendingDuringStopAreAnswered503() throws {
        // respond() is still running when stop() begins; its suspension must not outlive the daemon.
        let entered = LockedValue(false)
        let release = LockedValue(false)
        var router = makeRouter()
        router.addDeferred("GET", "/late") { _, _ in
            entered.withLock { $0 = true }
            _ = waitUntil(timeout: .seconds(10)) { release.withLock { $0 } }
        }
        let server = HTTPServer(configuration: testConfiguration(), responder: router, rejections: testRejections)
        try server.start()
        let client = HTTPClient(port: server.boundPort)
        try client.sendRaw(bytes("GET /late HTTP/1.1\r\nHost: t\r\n\r\n"))
        #expect(waitUntil { entered.withLock { $0 } })
        startThread {
            // respond() returns once stop() has begun.
            _ = waitUntil { !server.dispatcher.admitsConnection() }
            release.withLock { $0 = true }
        }
        server.stop()
        // Either the 503 went out before the daemon stopped, or the connection was closed.
        do {
            let response = try client.readResponse()
            #expect(response.status == 503)
        } catch {
            #expect(error.code == .connectionClosed || error.code == .ioFailed)
        }
    }

    @Test func repliesAreReleasedOnceTheirRequestsComplete() throws {
        final class WeakReply: Sendable {
            nonisolated(unsafe) weak var reply: HTTPReply?
            init(_ reply: HTTPReply) { self.reply = reply }
        }
        let seen = LockedValue<[WeakReply]>([])
        var router = makeRouter()
        router.addDeferred("GET", "/now") { _, reply in
            seen.withLock { $0.append(WeakReply(reply)) }
            reply.send(HTTPResponse(status: 200))
        }
        router.addDeferred("GET", "/later") { _, reply in
            seen.withLock { $0.append(WeakReply(reply)) }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(10)) {
                reply.send(HTTPResponse(status: 200))
            }
        }
        try withServer(router) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for _ in 0..<20 {
                #expect(try client.send(path: "/now").status == 200)
                #expect(try client.send(path: "/later").status == 200)
            }
            client.close()
            _ = waitUntil { !seen.withLock { $0.contains { $0.reply != nil } } }
            #expect(seen.withLock { $0.count } == 40)
            #expect(seen.withLock { $0.filter { $0.reply != nil }.count } == 0)
        }
    }
}
