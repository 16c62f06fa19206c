import Foundation
import ModalStackTestSupport
import Testing

/// Whether this machine has the IPv6 loopback address (a container may not).
private let ipv6LoopbackListed =
    (try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8))?.contains("00000000000000000000000000000001 ")
    ?? false

/// `modalstack healthcheck` against servers it starts: exit 0 only when `/livez` answers 200.
@Suite("modalstack healthcheck", .enabled(if: ServerProcess.isLocal, "starts, stops and pauses servers"))
struct HealthCheckTests {
    private func healthCheck(host: String, port: UInt16) throws -> (status: Int32, output: String) {
        try ServerProcess.runUntilExit(["healthcheck", "--host", host, "--port", String(port)])
    }

    @Test("a live server: exit 0, by its address, by a name, and by the any-address it could listen on")
    func liveServer() throws {
        let server = try ServerProcess()
        for host in ["127.0.0.1", "localhost", "0.0.0.0"] {
            let (status, output) = try healthCheck(host: host, port: server.port)
            #expect(status == 0, "\(host): \(output)")
        }
    }

    @Test("a server on ::1 is checked over IPv6", .enabled(if: ipv6LoopbackListed))
    func ipv6Server() throws {
        let server = try ServerProcess(arguments: ["--host", "::1"])
        let (status, output) = try healthCheck(host: "::1", port: server.port)
        #expect(status == 0, "\(output)")
    }

    @Test("nothing listening: exit 1, saying that the connection was refused")
    func nothingListening() throws {
        let server = try ServerProcess()
        let port = server.port
        server.stop()
        let (status, output) = try healthCheck(host: "127.0.0.1", port: port)
        #expect(status == 1)
        #expect(output.contains("healthcheck: cannot connect to 127.0.0.1:\(port): Connection refused"), "\(output)")
    }

    @Test("a server that takes the connection and never answers: exit 1 after the 2 s timeout")
    func silentServer() throws {
        let server = try ServerProcess()
        // A stopped process's listening socket still completes handshakes; nothing reads the request.
        server.send(SIGSTOP)
        defer { server.send(SIGCONT) }
        let clock = ContinuousClock()
        let start = clock.now
        let (status, output) = try healthCheck(host: "127.0.0.1", port: server.port)
        let elapsed = clock.now - start
        #expect(status == 1)
        #expect(output.contains("healthcheck: no data from 127.0.0.1:\(server.port) within 2.0 s"), "\(output)")
        #expect(elapsed >= .seconds(2) && elapsed < .seconds(10), "\(elapsed)")
    }

    @Test("with --auth-operations it sends the server's first API key, from a flag, a variable or a file")
    func operationsKey() throws {
        let directory = try TemporaryDirectory()
        let keyFile = directory.appending("keys")
        try Data("# the operations key\nfile-key\n".utf8).write(to: URL(fileURLWithPath: keyFile))
        let server = try ServerProcess(arguments: [
            "--api-key", "flag-key", "--api-key-file", keyFile, "--auth-operations", "true",
        ])
        let target = ["healthcheck", "--host", "127.0.0.1", "--port", String(server.port)]
        let withoutKey = try ServerProcess.runUntilExit(target)
        #expect(withoutKey.status == 1)
        #expect(withoutKey.output.contains("/livez answered 401"), "\(withoutKey.output)")
        let flag = try ServerProcess.runUntilExit(target + ["--api-key", "flag-key", "--auth-operations"])
        #expect(flag.status == 0, "\(flag.output)")
        let variables = try ServerProcess.runUntilExit(
            target, environment: ["MODALSTACK_API_KEY_FILE": keyFile, "MODALSTACK_AUTH_OPERATIONS": "true"])
        #expect(variables.status == 0, "\(variables.output)")
        let wrong = try ServerProcess.runUntilExit(target + ["--api-key", "wrong-key", "--auth-operations"])
        #expect(wrong.status == 1)
    }
}
