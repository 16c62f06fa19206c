import Foundation
import Glibc
import ModalStackClient
import ModalStackTestSupport
import Synchronization
import Testing

// What the client's tests against a server share: the servers they run against, helpers, and a
// proxy that cuts connections.

// MARK: - A server per suite

/// The server of the suite that runs: set by ``RunningServer`` for every test inside it.
enum TestServer {
    @TaskLocal static var current: ServerProcess?
}

/// A suite trait that starts one server for the whole suite (its nested suites included, unless
/// they start their own) and stops it when the last test is done.
struct RunningServer: SuiteTrait, TestScoping {
    var arguments: [String]

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let server = try ServerProcess(arguments: arguments)
        try await TestServer.$current.withValue(server) { try await function() }
        withExtendedLifetime(server) {}  // its deinit kills the process
    }
}

extension Trait where Self == RunningServer {
    /// One server for the suite, started with `arguments`.
    static func server(_ arguments: [String]) -> Self { RunningServer(arguments: arguments) }
}

/// A session id of its own for one test: `label` and a random suffix.
func uniqueSessionID(_ label: String) -> String { "\(label)-\(UUID().uuidString.prefix(8).lowercased())" }

/// The refusal `body` must throw.
func refusal(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> some Any
) async throws -> ModalStackError {
    try #require(
        await #expect(throws: ModalStackError.self, sourceLocation: sourceLocation) { _ = try await body() },
        sourceLocation: sourceLocation)
}

/// Polls `condition` every 10 ms until it holds (true) or `timeout` has passed (false); on the
/// caller's actor, so a main-actor test may poll its model.
nonisolated(nonsending) func eventually(
    timeout: Duration = .seconds(5), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now > deadline { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}

// MARK: - Requests the model suites present

/// A medium-detent sheet showing `destination`.
func sheetRequest(_ destination: String, locked: Bool = false) -> PresentRequest {
    PresentRequest(destination: destination, style: .sheet(detents: [.medium]), locked: locked)
}

/// An alert with a destructive and a cancel button.
let confirmDeleteAlert = PresentRequest(
    destination: "confirm-delete",
    style: .alert(
        title: "Delete?",
        buttons: [
            .init(id: "delete", label: "Delete", role: .destructive), .init(id: "keep", label: "Keep", role: .cancel),
        ]))

// MARK: - A proxy that cuts connections

/// The head of an HTTP/1.1 message the proxy passed on: its first line and its header fields.
struct MessageHead: Sendable, CustomStringConvertible {
    var startLine: String
    var fields: [(name: String, value: String)]

    /// The value of the first field called `name` (case-insensitive).
    func value(_ name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// A response's status code.
    var status: Int? { startLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } }

    var description: String { startLine }
}

/// A TCP proxy on 127.0.0.1 in front of a server. For the first `cuts` requests it forwards, it reads
/// the server's whole response, then closes the client's connection without relaying it: the change
/// was committed, but the client saw the connection close. Later requests are relayed as they are.
final class CuttingProxy: Sendable {
    /// One request forwarded, the response the server gave, and whether the client got it.
    struct Exchange: Sendable {
        var request: MessageHead
        var response: MessageHead
        var relayed: Bool
    }

    let port: UInt16
    private let core: Core

    /// - Parameter streamAnswer: what the proxy answers an event-stream request with itself, instead of
    ///   forwarding it (as a proxy that does not pass streams through would); nil forwards them too.
    init(forwardingTo upstreamPort: UInt16, cuttingFirst cuts: Int, streamAnswer: String? = nil) throws {
        let listener = try openListener()
        port = try boundPort(of: listener)
        core = Core(
            listener: listener, upstreamPort: upstreamPort, cuts: cuts,
            streamAnswer: streamAnswer.map { Array($0.utf8) })
        let core = core
        startThread { core.acceptLoop() }
    }

    deinit { core.stop() }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Every exchange so far, in order.
    var exchanges: [Exchange] { core.state.withLock { $0.exchanges } }

    /// What the proxy's threads share.
    private final class Core: Sendable {
        struct State {
            var cutsLeft: Int
            var exchanges: [Exchange] = []
            var sockets: Set<Int32> = []
            var stopped = false
        }

        let listener: Int32
        let upstreamPort: UInt16
        let streamAnswer: [UInt8]?
        let state: Mutex<State>

        init(listener: Int32, upstreamPort: UInt16, cuts: Int, streamAnswer: [UInt8]?) {
            self.listener = listener
            self.upstreamPort = upstreamPort
            self.streamAnswer = streamAnswer
            state = Mutex(State(cutsLeft: cuts))
        }

        /// Serves each connection on a thread of its own until ``stop()``; closes the listener at the end
        /// (not before: its descriptor must not be reused while this thread may still call accept on it).
        func acceptLoop() {
            defer { Glibc.close(listener) }
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // stopped
                }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)  // kept from servers the tests start
                guard track(client) else { return }
                startThread { self.serve(client) }
            }
        }

        /// Passes requests and responses between `clientSocket` and a connection of its own to the server.
        private func serve(_ clientSocket: Int32) {
            defer { untrackAndClose(clientSocket) }
            guard let upstreamSocket = try? connectToLoopback(port: upstreamPort), track(upstreamSocket) else { return }
            defer { untrackAndClose(upstreamSocket) }
            var client = MessageReader(socket: clientSocket)
            var server = MessageReader(socket: upstreamSocket)
            while let request = client.next(isResponse: false) {
                if let streamAnswer, request.head.startLine.contains("/events/stream") {
                    _ = sendAll(clientSocket, streamAnswer)
                    return
                }
                guard sendAll(upstreamSocket, request.bytes), let response = server.next(isResponse: true) else {
                    return
                }
                let cut = state.withLock { state in
                    let cut = state.cutsLeft > 0
                    if cut { state.cutsLeft -= 1 }
                    state.exchanges.append(Exchange(request: request.head, response: response.head, relayed: !cut))
                    return cut
                }
                if cut || !sendAll(clientSocket, response.bytes) { return }
            }
        }

        private func track(_ socket: Int32) -> Bool {
            let open = state.withLock { state in
                if !state.stopped { state.sockets.insert(socket) }
                return !state.stopped
            }
            if !open { Glibc.close(socket) }
            return open
        }

        private func untrackAndClose(_ socket: Int32) {
            state.withLock { _ = $0.sockets.remove(socket) }
            Glibc.close(socket)
        }

        /// Shuts the listener and every connection down: the threads then end and close them. Under the
        /// lock, so that no socket is closed (and its descriptor reused) in between.
        func stop() {
            state.withLock { state in
                state.stopped = true
                shutdown(listener, Int32(SHUT_RDWR))  // wakes accept
                for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
            }
        }
    }
}

/// Reads whole HTTP/1.1 messages framed by `Content-Length` (all the proxy needs: the server's
/// answers to single requests have one, and the client's requests have small bodies).
private struct MessageReader {
    let socket: Int32
    var buffer: [UInt8] = []

    /// The next message and its bytes as read; nil when the connection closed first.
    mutating func next(isResponse: Bool) -> (head: MessageHead, bytes: [UInt8])? {
        guard let headEnd = headLength() else { return nil }
        let lines = String(decoding: buffer[..<(headEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        let fields = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let head = MessageHead(startLine: lines.first ?? "", fields: fields)
        guard head.value("Transfer-Encoding") == nil else { return nil }  // chunked: not needed, not read
        let noBody = isResponse && [204, 304].contains(head.status ?? 0)
        let length = noBody ? 0 : head.value("Content-Length").flatMap { Int($0) } ?? 0
        while buffer.count < headEnd + length {
            guard fill() else { return nil }
        }
        let bytes = Array(buffer[..<(headEnd + length)])
        buffer.removeFirst(headEnd + length)
        return (head, bytes)
    }

    /// The length of the head (up to its empty line), reading until it is all there; nil when the
    /// connection closed first.
    private mutating func headLength() -> Int? {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = buffer.firstRange(of: terminator)?.upperBound { return end }
            guard fill() else { return nil }
        }
    }

    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer += chunk[..<count]
            return true
        }
    }
}

private struct SocketError: Error, CustomStringConvertible {
    var call: String
    var code = errno
    var description: String { "\(call): \(String(cString: strerror(code)))" }
}

private func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

private func newSocket() throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard socket >= 0 else { throw SocketError(call: "socket") }
    return socket
}

private func openListener() throws -> Int32 {
    let socket = try newSocket()
    var address = loopback(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, listen(socket, 16) == 0 else {
        let error = SocketError(call: "bind/listen")
        Glibc.close(socket)
        throw error
    }
    return socket
}

private func boundPort(of socket: Int32) throws -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let status = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard status == 0 else { throw SocketError(call: "getsockname") }
    return UInt16(bigEndian: address.sin_port)
}

private func connectToLoopback(port: UInt16) throws -> Int32 {
    let socket = try newSocket()
    var address = loopback(port: port)
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard status == 0 else {
        let error = SocketError(call: "connect")
        Glibc.close(socket)
        throw error
    }
    return socket
}

/// Writes all of `bytes`; false when the connection failed.
private func sendAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}
