import Glibc
import ModalStackTestSupport
import Testing

@testable import ModalStackHTTP

private let ipv6LoopbackAvailable: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

@Suite struct HTTPServerLifecycleTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("GET", "/ping") { request in
            HTTPResponse(status: 200, body: bytes("pong from \(request.remoteAddress ?? "?")"))
        }
        return router
    }

    @Test func portZeroBindsAnEphemeralPort() throws {
        try withServer(router()) { server throws in
            #expect(server.boundPort != 0)
            #expect(try HTTPClient(port: server.boundPort).send(path: "/ping").text == "pong from 127.0.0.1")
        }
    }

    @Test func portInUseIsATypedError() throws {
        try withServer(router()) { first throws in
            var configuration = testConfiguration()
            configuration.port = first.boundPort
            let second = HTTPServer(configuration: configuration, responder: router(), rejections: testRejections)
            let error = #expect(throws: HTTPServerError.self) { try second.start() }
            #expect(error?.code == .addressInUse)
            #expect(error?.message == "cannot bind 127.0.0.1:\(first.boundPort): address already in use")
            #expect(second.boundPort == 0)
        }
    }

    @Test(arguments: ["not-an-ip", "999.1.1.1", "example.com", ""])
    func invalidHostIsATypedError(host: String) {
        var configuration = testConfiguration()
        configuration.host = host
        let server = HTTPServer(configuration: configuration, responder: router(), rejections: testRejections)
        let error = #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(error?.code == .invalidHost)
        #expect(error?.message.contains("\"\(host)\"") == true)
    }

    @Test func addressOfAnotherMachineIsATypedError() {
        var configuration = testConfiguration()
        configuration.host = "192.0.2.1"  // TEST-NET-1, never local
        let server = HTTPServer(configuration: configuration, responder: router(), rejections: testRejections)
        let error = #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(error?.code == .addressNotAvailable)
    }

    @Test func startTwiceIsAnError() throws {
        try withServer(router()) { server throws in
            let error = #expect(throws: HTTPServerError.self) { try server.start() }
            #expect(error?.code == .alreadyStarted)
        }
    }

    @Test func stopReleasesThePortAndIsIdempotent() throws {
        let first = HTTPServer(configuration: testConfiguration(), responder: router(), rejections: testRejections)
        try first.start()
        let port = first.boundPort
        #expect(try HTTPClient(port: port).send(path: "/ping").status == 200)
        first.stop()
        first.stop()
        #expect(first.boundPort == 0)

        var configuration = testConfiguration()
        configuration.port = port
        let second = HTTPServer(configuration: configuration, responder: router(), rejections: testRejections)
        try second.start()
        #expect(second.boundPort == port)
        #expect(try HTTPClient(port: port).send(path: "/ping").status == 200)
        second.stop()
    }

    @Test func localhostMeansIPv4Loopback() throws {
        var configuration = testConfiguration()
        configuration.host = "localhost"
        try withServer(router(), configuration: configuration) { server throws in
            #expect(
                try HTTPClient(host: "127.0.0.1", port: server.boundPort).send(path: "/ping").text
                    == "pong from 127.0.0.1")
        }
    }

    @Test(.enabled(if: ipv6LoopbackAvailable)) func ipv6Loopback() throws {
        var configuration = testConfiguration()
        configuration.host = "::1"
        try withServer(router(), configuration: configuration) { server throws in
            #expect(try HTTPClient(host: "::1", port: server.boundPort).send(path: "/ping").text == "pong from ::1")
        }
    }

    @Test(.enabled(if: ipv6LoopbackAvailable)) func ipv6AnyAcceptsIPv4Too() throws {
        var configuration = testConfiguration()
        configuration.host = "::"
        try withServer(router(), configuration: configuration) { server throws in
            #expect(try HTTPClient(host: "::1", port: server.boundPort).send(path: "/ping").text == "pong from ::1")
            #expect(
                try HTTPClient(host: "127.0.0.1", port: server.boundPort).send(path: "/ping").text
                    == "pong from ::ffff:127.0.0.1")
        }
    }

    @Test func singleThreadConfigurationServes() throws {
        var configuration = testConfiguration()
        configuration.threadPoolSize = 1
        try withServer(router(), configuration: configuration) { server throws in
            let client = HTTPClient(port: server.boundPort)
            for _ in 0..<5 { #expect(try client.send(path: "/ping").status == 200) }
            #expect(client.connectCount == 1)
        }
    }

    @Test func newConnectionsAreRefusedAtOnceWhileStopWaits() throws {
        let streams = StreamBox()
        var router = router()
        router.addDeferred("GET", "/events") { request, reply in
            guard let stream = reply.startStream(status: 200, headers: ["Content-Type": "text/event-stream"]) else {
                return
            }
            streams.append(request, stream)
        }
        var configuration = testConfiguration(stopGracePeriod: .seconds(1))
        configuration.maxStreamBufferBytes = 64 << 20
        let server = HTTPServer(configuration: configuration, responder: router, rejections: testRejections)
        try server.start()
        let port = server.boundPort
        // A client that never reads its stream: far more is written than the kernel buffers hold, so
        // stop() waits its whole grace period for the stream's end to go out.
        let reader = HTTPClient(port: port)
        _ = try reader.openStream(path: "/events")
        #expect(try streams.started(0).write([UInt8](repeating: UInt8(ascii: "x"), count: 32 << 20)))
        let stopped = Counter()
        startThread {
            server.stop()
            stopped.increment()
        }
        #expect(waitUntil { !server.dispatcher.admitsConnection() })
        #expect(stopped.value == 0)

        let clock = ContinuousClock()
        let start = clock.now
        let error = #expect(throws: HTTPClientError.self) {
            try HTTPClient(port: port, timeoutSeconds: 5).send(path: "/ping")
        }
        #expect(error?.code == .connectionClosed || error?.code == .ioFailed, "\(String(describing: error))")
        #expect(clock.now - start < .milliseconds(500))
        #expect(waitUntil { stopped.value == 1 })
        reader.close()
    }
}
