import Foundation
import Glibc
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// Bad requests on raw sockets: each must get the right 4xx or a dropped connection, the server
/// must answer a normal request right after each, and its memory must come back to its baseline.
@Suite(
    "Hostile input", .enabled(if: ServerProcess.isLocal, "starts its own servers and reads their memory"), .serialized)
struct HostileInputTests {
    /// How much the resident set may grow over the corpus (allocator caches, SQLite's page cache).
    static let rssAllowanceKiB = 16 * 1024

    @Test(
        "a corpus of bad requests: the right 4xx or a dropped connection each time, the server answering right after, memory back to its baseline"
    )
    func corpus() throws {
        // A short idle timeout, so that requests the server rightly waits on (a body that never comes)
        // are dropped quickly.
        let server = try ServerProcess(arguments: ["--connection-timeout", "3"])
        let pid = try #require(server.processID)
        let control = server.client()
        let controlID = uniqueSessionID("control")
        try warmUp(server, controlID: controlID)
        let controlState = try control.call("GET", "/v1/sessions/\(controlID)")
        try #require(controlState.status == 200)
        let baseline = try #require(residentKiB(of: pid))

        let victimID = uniqueSessionID("victim")
        #expect(try control.call("PUT", "/v1/sessions/\(victimID)").status == 201)
        let corpus = HostileRequest.corpus(victimID: victimID, controlID: controlID)
        var peak = baseline
        for hostile in corpus {
            var faults = try hostile.run(port: server.port).map { "\(hostile.name): \($0)" }
            if let check = hostile.afterwards, let fault = try check(server.client()) {
                faults.append("\(hostile.name): \(fault)")
            }
            if let knownIssue = hostile.knownIssue {
                withKnownIssue(Comment(rawValue: knownIssue), isIntermittent: true) {
                    for fault in faults { Issue.record(Comment(rawValue: fault)) }
                }
            } else {
                for fault in faults { Issue.record(Comment(rawValue: fault)) }
            }
            // The server is up and answers a normal request right after.
            try #require(isProcessAlive(pid), "the server died after \(hostile.name)")
            let probe = server.client()
            #expect(try probe.call("GET", "/livez").status == 200, "no /livez after \(hostile.name)")
            let state = try probe.call("GET", "/v1/sessions/\(controlID)")
            #expect(
                state.status == 200 && state.raw == controlState.raw,
                "the control session changed after \(hostile.name)")
            peak = max(peak, residentKiB(of: pid) ?? 0)
        }

        // Normal traffic after the corpus, then the memory.
        try warmUp(server, controlID: nil)
        let after = try #require(residentKiB(of: pid))
        print(
            "HostileInputTests: \(corpus.count) hostile requests; RSS baseline \(baseline) KiB, peak \(peak) KiB, "
                + "after \(after) KiB (\(after - baseline >= 0 ? "+" : "")\(after - baseline) KiB)")
        #expect(after <= baseline + Self.rssAllowanceKiB, "RSS grew from \(baseline) KiB to \(after) KiB")
    }

    @Test(
        "slowloris: a client trickling its headers or its body is dropped once the connection timeout has passed, while others are served"
    )
    func slowloris() throws {
        let server = try ServerProcess(arguments: ["--connection-timeout", "2"])
        let port = server.port
        // Control: a connection that sends nothing is dropped by the 2 s timeout.
        let idle = try RawConnection(port: port)
        if case .timedOut = idle.readUntilClosed(seconds: 10) {
            Issue.record("an idle connection was still open 10 s after a 2 s connection timeout")
        }

        // One byte every 0.5 s, for up to 5 times the timeout: of a header, and of a body.
        let id = uniqueSessionID("busy")
        let trickles = [
            (
                head: "GET /livez HTTP/1.1\r\nHost: slow\r\n",
                trickled: "X-Slow-Header: \(String(repeating: "a", count: 64))\r\n"
            ),
            (
                head:
                    "POST /v1/sessions/\(id)/presentations HTTP/1.1\r\nHost: slow\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n",
                trickled: "{\"destination\": \"\(String(repeating: "s", count: 64))\"}"
            ),
        ]
        let slow = ThreadGroup(count: trickles.count) { index -> (closed: Bool, bytes: Int, seconds: Double) in
            guard let connection = try? RawConnection(port: port) else { return (false, 0, 0) }
            let started = ContinuousClock.now
            connection.write(trickles[index].head)
            for (sent, byte) in trickles[index].trickled.utf8.prefix(20).enumerated() {
                guard connection.write([byte]) else { return (true, sent, elapsed(since: started)) }
                if case .closed = connection.readUntilClosed(seconds: 0.5) {
                    return (true, sent + 1, elapsed(since: started))
                }
            }
            return (false, 20, elapsed(since: started))
        }
        // Meanwhile other clients are served normally, one of them on a single keep-alive connection
        // that sends a request every 0.5 s for longer than the timeout.
        let keptAlive = try RawConnection(port: port)
        var keptAliveAnswers = 0
        for index in 0..<10 {
            let fresh = server.client()
            #expect(try fresh.call("GET", "/livez").status == 200)
            #expect(
                try fresh.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": .string("d\(index)")])
                    .status == (index < 8 ? 201 : 202))
            keptAlive.write("GET /livez HTTP/1.1\r\nHost: kept\r\n\r\n")
            if keptAlive.readResponse(seconds: 2).response?.status == 200 { keptAliveAnswers += 1 }
            usleep(500_000)  // the input, not a wait for a state: idle 0.5 s, under the 2 s timeout
        }
        #expect(keptAliveAnswers == 10, "a keep-alive connection sending a request every 0.5 s was cut off")
        let outcomes = slow.join()
        for (outcome, kind) in zip(outcomes, ["header", "body"]) {
            print(
                "HostileInputTests.slowloris: trickled \(kind): closed \(outcome.closed) after \(outcome.bytes) bytes, \(String(format: "%.1f", outcome.seconds)) s"
            )
            #expect(
                outcome.closed && outcome.seconds < 4.5,
                "a client trickling its \(kind) one byte every 0.5 s was still connected after \(String(format: "%.1f", outcome.seconds)) s with --connection-timeout 2"
            )
        }
        // The trickled body was never taken: only the ten fast presentations are there.
        let state = try server.client().call("GET", "/v1/sessions/\(id)")
        let text = String(decoding: state.raw, as: UTF8.self)
        #expect(state.status == 200 && text.contains("\"d9\"") && !text.contains("sss"))
    }

    @Test("a long poll and an idle stream outlive the connection timeout: a request being answered has no deadline")
    func longPollOutlivesTimeout() throws {
        let server = try ServerProcess(arguments: ["--connection-timeout", "1"])
        let id = uniqueSessionID("held")
        let client = server.client()
        #expect(try client.call("PUT", "/v1/sessions/\(id)").status == 201)
        let started = ContinuousClock.now
        let response = try client.call(
            "GET", "/v1/sessions/\(id)", headers: ["If-None-Match": "\"1\"", "Prefer": "wait=3"])
        #expect(
            response.status == 304 && elapsed(since: started) >= 2.5,
            "a 3 s long poll ended with \(response.status) after \(elapsed(since: started)) s")

        let stream = try RawConnection(port: server.port)
        stream.write("GET /v1/sessions/\(id)/events/stream HTTP/1.1\r\nHost: s\r\nAccept: text/event-stream\r\n\r\n")
        if case .closed = stream.readUntilClosed(seconds: 3) {
            Issue.record("an event stream was closed within 3 s with --connection-timeout 1")
        }
    }

    @Test("500 idle connections: a normal request still works, and the memory comes back once they close")
    func idleConnections() throws {
        let server = try ServerProcess()
        let pid = try #require(server.processID)
        try warmUp(server, controlID: nil)
        let baseline = try #require(residentKiB(of: pid))
        var connections: [RawConnection] = []
        for index in 0..<500 {
            let connection = try RawConnection(port: server.port)
            // Half send nothing, half send the start of a request head and stop.
            if index.isMultiple(of: 2) { connection.write("GET /livez HTTP/1.1\r\nHo") }
            connections.append(connection)
        }
        let client = server.client()
        #expect(try client.call("GET", "/livez").status == 200)
        let id = uniqueSessionID("idle")
        #expect(try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"]).status == 201)
        #expect(try server.client().call("GET", "/v1/sessions/\(id)").status == 200)
        let held = residentKiB(of: pid) ?? 0
        connections.removeAll()
        try warmUp(server, controlID: nil)
        #expect(try server.client().call("GET", "/livez").status == 200)
        let after = try #require(residentKiB(of: pid))
        print(
            "HostileInputTests.idleConnections: RSS baseline \(baseline) KiB, with 500 idle connections \(held) KiB, after closing them \(after) KiB"
        )
        #expect(after <= baseline + Self.rssAllowanceKiB)
    }

    @Test("half-closed sockets: the response still arrives, or the connection closes cleanly")
    func halfClosed() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID("half")
        let requests: [(name: String, bytes: [UInt8], expected: [Int])] = [
            ("GET /livez", Array("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n".utf8), [200]),
            (
                "POST with a body", HostileRequest.post("/v1/sessions/\(id)/presentations", #"{"destination":"half"}"#),
                [201]
            ),
            (
                "two pipelined GETs",
                Array("GET /livez HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), [200, 200]
            ),
        ]
        for request in requests {
            let connection = try RawConnection(port: server.port)
            connection.write(request.bytes)
            connection.shutdownWrite()
            let (responses, closed) = connection.readResponses(count: request.expected.count, seconds: 15)
            if responses.count == request.expected.count {
                #expect(responses.map(\.status) == request.expected, "\(request.name)")
            } else if !closed {
                Issue.record(
                    "\(request.name): \(responses.count) of \(request.expected.count) responses, and the connection still open after 15 s"
                )
            } else {
                // Closed cleanly: whatever came must be complete, right answers.
                #expect(responses.map(\.status) == Array(request.expected.prefix(responses.count)), "\(request.name)")
            }
            #expect(try server.client().call("GET", "/livez").status == 200)
        }
        // The POST was either applied once or not at all.
        let session = try server.client().call("GET", "/v1/sessions/\(id)")
        #expect(session.status == 404 || session.json["version"]?.intValue == 1)
    }

    @Test(
        "a client that half-closes is dropped at once, not at the connection timeout: in its headers, in its body, or after a whole request (once answered)"
    )
    func halfClosedDroppedAtOnce() throws {
        // A timeout far beyond the wait below: a connection closed in time was not closed by it.
        let server = try ServerProcess(arguments: ["--connection-timeout", "30"])
        let id = uniqueSessionID("cut")
        let requests: [(kind: String, bytes: [UInt8], answered: Bool)] = [
            ("headers cut off", Array("GET /livez HTTP/1.1\r\nHost: x\r\nX-Cut: abc".utf8), false),
            (
                "a body shorter than its Content-Length",
                HostileRequest.request(
                    "POST", "/v1/sessions/\(id)/presentations", headers: ["Content-Type: application/json"],
                    body: Array(#"{"destination""#.utf8), contentLength: 100),
                false
            ),
            ("a whole request", Array("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n".utf8), true),
        ]
        for request in requests {
            var connections: [RawConnection] = []
            for _ in 0..<40 {
                let connection = try RawConnection(port: server.port)
                connection.write(request.bytes)
                connection.shutdownWrite()
                connections.append(connection)
            }
            // 5 s for all of them, and at least 0.1 s each to show a close already made.
            let deadline = ContinuousClock.now.advanced(by: .seconds(5))
            var stillOpen = 0
            var answered = 0
            for connection in connections {
                let left = ContinuousClock.now.duration(to: deadline).components
                let received: [UInt8]
                switch connection.readUntilClosed(
                    seconds: max(0.1, Double(left.seconds) + Double(left.attoseconds) / 1e18))
                {
                case .closed(let bytes): received = bytes
                case .timedOut(let bytes):
                    received = bytes
                    stillOpen += 1
                }
                if RawResponse(received)?.status == 200 { answered += 1 }
            }
            #expect(stillOpen == 0, "\(request.kind): \(stillOpen) of 40 half-closed connections still open after 5 s")
            if request.answered {
                #expect(answered == 40, "\(request.kind): \(answered) of 40 answered")
            }
        }
        #expect(try server.client().call("GET", "/v1/sessions/\(id)").status == 404)
    }

    /// Normal traffic, so that allocator pools and SQLite's cache are warm before a baseline.
    private func warmUp(_ server: ServerProcess, controlID: String?) throws {
        let client = server.client()
        if let controlID {
            #expect(
                try client.call("POST", "/v1/sessions/\(controlID)/presentations", json: ["destination": "settings"])
                    .status == 201)
        }
        for index in 0..<150 {
            let id = "warm-\(index % 30)"
            let present = try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: [
                    "destination": .string("w\(index)"),
                    "payload": ["text": .string(String(repeating: "x", count: 2000))],
                ])
            #expect([201, 202].contains(present.status))
            #expect(try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:]).status == 200)
            #expect(try client.call("GET", "/v1/sessions/\(id)/events?limit=50").status == 200)
        }
    }
}

private func elapsed(since start: ContinuousClock.Instant) -> Double {
    let components = (ContinuousClock.now - start).components
    return Double(components.seconds) + Double(components.attoseconds) / 1e18
}

/// One hostile request and what it may get back.
struct HostileRequest: Sendable {
    let name: String
    /// A gap the server is known to have, reported as a known issue rather than a failure.
    var knownIssue: String?
    /// Sent at once after connecting.
    var bytes: [UInt8]
    /// Sent next; the server may have answered and closed already (a write then fails, which is fine).
    var rest: [UInt8] = []
    /// `shutdown(SHUT_WR)` after sending.
    var halfClose = false
    /// The statuses that are right.
    var statuses: Set<Int>
    /// The problem slug expected when the answer is `application/problem+json`.
    var slug: String?
    /// Whether closing the connection without an answer is right too.
    var mayDrop = false
    /// Whether the server must not answer anything after the first response on this connection
    /// (request smuggling: bytes after an ambiguous body taken as another request).
    var singleResponse = false
    /// A check of the server's state afterwards; returns a fault or nil.
    var afterwards: (@Sendable (HTTPClient) throws -> String?)?
    /// A check of the response itself; returns a fault or nil.
    var check: (@Sendable (RawResponse) -> String?)?

    /// Sends the request and returns what is wrong with the outcome.
    func run(port: UInt16) throws -> [String] {
        let connection = try RawConnection(port: port)
        let sent = connection.write(bytes)
        if sent && !rest.isEmpty { connection.write(rest) }
        if halfClose { connection.shutdownWrite() }
        let (response, closed) = connection.readResponse(seconds: 15)
        guard let response, response.isComplete else {
            if closed {
                return mayDrop ? [] : ["the connection was dropped without an answer; expected \(statuses.sorted())"]
            }
            return [
                "no answer, and the connection was still open after 15 s (expected \(statuses.sorted())\(mayDrop ? " or a drop" : ""))"
            ]
        }
        var faults: [String] = []
        let body = String(decoding: response.body.prefix(300), as: UTF8.self)
        if !statuses.contains(response.status) {
            faults.append(
                "answered \(response.status) \(body); expected \(statuses.sorted())\(mayDrop ? " or a dropped connection" : "")"
            )
        }
        if response.status >= 500 && response.status != 501 && response.status != 505 && response.status != 503 {
            faults.append("a server error: \(response.status) \(body)")
        }
        if let slug, response.headers["Content-Type"] == "application/problem+json" {
            let type = response.json["type"]?.stringValue
            if type != "/problems/\(slug)" {
                faults.append("problem type \(type ?? "none"), expected /problems/\(slug)")
            }
        }
        if body.contains("root:x:0:0") { faults.append("the answer holds /etc/passwd") }
        if let check, let fault = check(response) { faults.append(fault) }
        if singleResponse {
            var extra = response.trailing
            if !closed {
                switch connection.readUntilClosed(seconds: 10) {
                case .closed(let more), .timedOut(let more): extra += more
                }
            }
            if let second = RawResponse(extra) {
                faults.append(
                    "a second response came on the same connection (\(second.status) \(String(decoding: second.body.prefix(160), as: UTF8.self))): the bytes after the ambiguous body were taken as another request"
                )
            }
        }
        return faults
    }

    // MARK: Building requests

    static func request(
        _ method: String, _ target: String, headers: [String] = [], body: [UInt8] = [], contentLength: Int? = nil
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: hostile\r\n"
        for header in headers { head += header + "\r\n" }
        if !body.isEmpty || contentLength != nil { head += "Content-Length: \(contentLength ?? body.count)\r\n" }
        return Array(head.utf8) + Array("\r\n".utf8) + body
    }

    static func post(_ target: String, _ body: [UInt8], contentType: String? = "application/json") -> [UInt8] {
        request("POST", target, headers: contentType.map { ["Content-Type: \($0)"] } ?? [], body: body)
    }

    static func post(_ target: String, _ body: String, contentType: String? = "application/json") -> [UInt8] {
        post(target, Array(body.utf8), contentType: contentType)
    }

    static func chunked(_ body: [UInt8], chunkSize: Int = 64 * 1024) -> [UInt8] {
        var bytes: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let end = min(offset + chunkSize, body.count)
            bytes += Array(String(end - offset, radix: 16).utf8) + [13, 10] + body[offset..<end] + [13, 10]
            offset = end
        }
        return bytes + Array("0\r\n\r\n".utf8)
    }

    // MARK: The corpus

    /// libmicrohttpd 0.9.75 hands header values over as C strings, so a raw NUL cuts them short
    /// before the server sees them (the request line's NULs are caught: see RequestDispatcher).
    static let nulCutsShort = "libmicrohttpd cuts header values at a raw NUL before the server sees them"

    static func corpus(victimID: String, controlID: String) -> [HostileRequest] {
        var corpus: [HostileRequest] = []
        let present = "/v1/sessions/\(uniqueSessionID("hostile"))/presentations"
        func add(
            _ name: String, _ bytes: [UInt8], rest: [UInt8] = [], halfClose: Bool = false, _ statuses: Set<Int>,
            slug: String? = nil,
            mayDrop: Bool = false, singleResponse: Bool = false,
            afterwards: (@Sendable (HTTPClient) throws -> String?)? = nil,
            check: (@Sendable (RawResponse) -> String?)? = nil, knownIssue: String? = nil
        ) {
            corpus.append(
                HostileRequest(
                    name: name, knownIssue: knownIssue, bytes: bytes, rest: rest, halfClose: halfClose,
                    statuses: statuses, slug: slug, mayDrop: mayDrop,
                    singleResponse: singleResponse, afterwards: afterwards, check: check))
        }
        /// The session must not exist: a refused request changes nothing.
        func absent(_ target: String) -> @Sendable (HTTPClient) throws -> String? {
            let path = target.replacingOccurrences(of: "/presentations", with: "")
            return { client in
                let status = try client.call("GET", path).status
                return status == 404 ? nil : "\(path) answers \(status) after a refused request; expected 404"
            }
        }

        // Malformed and truncated JSON.
        for body in [
            "{", #"{"destination":"#, #"{"destination":"a""#, #"{"destination":"a",}"#, "[1,2", "nul", #""abc"#,
            #"{"a":1}}"#,
            "{'destination':'a'}", #"{"destination":"a"} trailing"#, #"{"destination" "a"}"#, "", " ",
            #"{"destination":"a","payload":{"x":[1,2,]}}"#, #"{"destination":"a","payload":{"x":01}}"#,
            #"{"destination":"a","payload":{"x":.5}}"#,
            #"{"destination":"a","payload":{"x":NaN}}"#, #"{"destination":"a","payload":{"x":"\x"}}"#,
            #"{"destination":"a","payload":{"x":"\ud800"}}"#,
        ] {
            add(
                "malformed JSON \(body.debugDescription)", post(present, body), [400], slug: "malformed-json",
                afterwards: absent(present))
        }
        add(
            "a byte order mark before the JSON", post(present, "\u{FEFF}" + #"{"destination":"a"}"#), [400],
            slug: "malformed-json", afterwards: absent(present))
        // A body shorter than announced, then the client stops sending.
        add(
            "a body cut short (Content-Length 100, 14 bytes, then half-closed)",
            request(
                "POST", present, headers: ["Content-Type: application/json"], body: Array(#"{"destination""#.utf8),
                contentLength: 100),
            halfClose: true, [400], mayDrop: true, afterwards: absent(present))
        add(
            "a body cut short, the connection left open",
            request(
                "POST", present, headers: ["Content-Type: application/json"], body: Array(#"{"destination""#.utf8),
                contentLength: 100),
            [400, 408], mayDrop: true, afterwards: absent(present))

        // Large bodies: refused from the head, or after reading at most a little.
        let jsonStart = Array(#"{"destination":"a","payload":{"t":""#.utf8)
        add(
            "a 1 MB body announced by Content-Length (16 KiB sent)",
            request("POST", present, headers: ["Content-Type: application/json"], contentLength: 1_000_000),
            rest: jsonStart + Array(repeating: UInt8(ascii: "x"), count: 16 * 1024), [413], slug: "body-too-large",
            mayDrop: true,
            afterwards: absent(present))
        add(
            "a 100 MB body announced by Content-Length (16 KiB sent)",
            request("POST", present, headers: ["Content-Type: application/json"], contentLength: 100 * 1024 * 1024),
            rest: jsonStart + Array(repeating: UInt8(ascii: "x"), count: 16 * 1024), [413], slug: "body-too-large",
            mayDrop: true,
            afterwards: absent(present))
        let megabyte =
            jsonStart + Array(repeating: UInt8(ascii: "x"), count: 1_000_000 - jsonStart.count - 3)
            + Array(#""}}"#.utf8)
        add(
            "a chunked 1 MB body",
            request("POST", present, headers: ["Content-Type: application/json", "Transfer-Encoding: chunked"]),
            rest: chunked(megabyte), [413], slug: "body-too-large", mayDrop: true, afterwards: absent(present))

        // Deep nesting.
        add(
            "60,000 nested [ within the 64 KiB limit", post(present, String(repeating: "[", count: 60_000)), [400],
            slug: "malformed-json",
            afterwards: absent(present))
        add(
            "100,000 nested [ past the 64 KiB limit", post(present, String(repeating: "[", count: 100_000)), [413],
            slug: "body-too-large",
            mayDrop: true, afterwards: absent(present))
        add(
            "10,000 nested objects in the payload",
            post(present, #"{"destination":"a","payload":"# + String(repeating: #"{"a":"#, count: 10_000)), [400],
            slug: "malformed-json",
            afterwards: absent(present))

        // Invalid UTF-8.
        for (label, bad) in [
            ("an overlong NUL C0 80", [0xC0, 0x80]), ("a UTF-16 surrogate ED A0 80", [0xED, 0xA0, 0x80]),
            ("a lone FF", [0xFF]),
            ("a lone continuation byte 80", [0x80]), ("a cut sequence E2 82", [0xE2, 0x82]),
            ("a 5-byte form F8 88 80 80 80", [0xF8, 0x88, 0x80, 0x80, 0x80]),
            ("past U+10FFFF F4 90 80 80", [0xF4, 0x90, 0x80, 0x80]),
        ] as [(String, [UInt8])] {
            let body = Array(#"{"destination":"a","payload":{"t":"x"#.utf8) + bad + Array(#""}}"#.utf8)
            add(
                "invalid UTF-8 in a string: \(label)", post(present, body), [400], slug: "malformed-json",
                afterwards: absent(present))
            let inKey = Array(#"{"destination":"a","payload":{""#.utf8) + bad + Array(#"":1}}"#.utf8)
            add(
                "invalid UTF-8 in a key: \(label)", post(present, inKey), [400], slug: "malformed-json",
                afterwards: absent(present))
        }

        // NUL bytes.
        add(
            "a raw NUL in a JSON string", post(present, Array(#"{"destination":"a"#.utf8) + [0] + Array(#"b"}"#.utf8)),
            [400],
            slug: "malformed-json", afterwards: absent(present))
        add(
            "a raw NUL between JSON tokens", post(present, Array(#"{"destination":"a"}"#.utf8) + [0]), [400],
            slug: "malformed-json",
            afterwards: absent(present))
        add(
            "an escaped NUL in the destination", post(present, #"{"destination":"a\u0000b"}"#), [422],
            slug: "validation-failed",
            afterwards: absent(present))
        let nulSession = uniqueSessionID("nul")
        add(
            "an escaped NUL in the payload is kept",
            post("/v1/sessions/\(nulSession)/presentations", #"{"destination":"a","payload":{"t":"a\u0000b"}}"#),
            [201],
            afterwards: { client in
                let text = try client.call("GET", "/v1/sessions/\(nulSession)").json["stack"]?.arrayValue?.first?[
                    "payload"]?["t"]?.stringValue
                return text == "a\u{0}b"
                    ? nil : "the payload reads back as \(text.debugDescription), sent \"a\\u0000b\""
            })
        add("%00 in the session id", request("GET", "/v1/sessions/a%00b"), [400], slug: "invalid-session-id")
        add(
            "a raw NUL in the path of a DELETE (must not delete the session before it)",
            request("DELETE", "/v1/sessions/\(victimID)").replacingPathEnd(with: [0] + Array("/../\(controlID)".utf8)),
            [400], slug: "invalid-request-line",
            afterwards: { client in
                let status = try client.call("GET", "/v1/sessions/\(victimID)").status
                return status == 200
                    ? nil
                    : "the session \(victimID) answers \(status): the request was taken for DELETE /v1/sessions/\(victimID)"
            })
        // RFC 9110 §5.5: a NUL in a field value must be rejected or replaced by a space, never cut
        // the value short. X-Request-Id is echoed, which shows what the server took.
        add(
            "a raw NUL in a header value", request("GET", "/livez", headers: ["X-Request-Id: reqid-abc\u{0}-rest"]),
            [200, 400], mayDrop: true,
            check: { response in
                response.headers["X-Request-Id"] == "reqid-abc"
                    ? "the value was cut at the NUL: X-Request-Id came back as \"reqid-abc\" (expected a 400, or the NUL replaced by a space)"
                    : nil
            },
            knownIssue: nulCutsShort)
        add("a raw NUL in a header name", request("GET", "/livez", headers: ["X-Te\u{0}st: ab"]), [400], mayDrop: true)

        // Huge numbers.
        let hugeSession = uniqueSessionID("huge")
        add(
            "1e999999 in a payload, beyond a double", post(present, #"{"destination":"a","payload":{"n":1e999999}}"#),
            [400], slug: "malformed-json", afterwards: absent(present))
        add(
            "-1e-999999 in a payload, below a double's precision, is kept as written",
            post(
                "/v1/sessions/\(hugeSession)/presentations", #"{"destination":"a","payload":{"m":-1e-999999}}"#),
            [201],
            afterwards: { client in
                let response = try client.call("GET", "/v1/sessions/\(hugeSession)")
                let payload = response.json["stack"]?.arrayValue?.first?["payload"]
                return payload?["m"] == .number("-1e-999999")
                    ? nil : "the payload reads back as \(payload.map { $0.jsonText } ?? "nothing")"
            })
        add(
            "a 100-digit number",
            post(present, #"{"destination":"a","payload":{"n":"# + String(repeating: "9", count: 100) + "}}"), [400],
            slug: "malformed-json", afterwards: absent(present))
        add(
            "count 1e999999 in a dismiss", post("/v1/sessions/\(controlID)/dismiss", #"{"count":1e999999}"#), [400],
            slug: "malformed-json")
        add(
            "count 18446744073709551617 in a dismiss",
            post("/v1/sessions/\(controlID)/dismiss", #"{"count":18446744073709551617}"#), [422],
            slug: "validation-failed")
        add(
            "a progress total of 1e308 and completed 1e999999",
            post(
                "/v1/sessions/\(uniqueSessionID("progress"))/presentations",
                #"{"destination":"a","style":"progress","total":1e308,"completed":1e999999}"#),
            [400], slug: "malformed-json")

        // Duplicate keys.
        add(
            "duplicate keys", post(present, #"{"destination":"a","destination":"b"}"#), [400], slug: "malformed-json",
            afterwards: absent(present))
        add(
            "duplicate keys in the payload", post(present, #"{"destination":"a","payload":{"k":1,"k":1}}"#), [400],
            slug: "malformed-json",
            afterwards: absent(present))
        add(
            "duplicate keys spelled differently (\\u0061)",
            post(present, #"{"destination":"a","\u0064estination":"b"}"#), [400],
            slug: "malformed-json", afterwards: absent(present))

        // Content types.
        for contentType in [
            "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx",
            "application/json-seq",
            "text/json", "application/xml", "*/*", "",
        ] {
            add(
                "Content-Type \(contentType.debugDescription)",
                post(present, #"{"destination":"a"}"#, contentType: contentType), [415],
                slug: "unsupported-media-type", afterwards: absent(present))
        }
        add(
            "no Content-Type", post(present, #"{"destination":"a"}"#, contentType: nil), [415],
            slug: "unsupported-media-type",
            afterwards: absent(present))

        // Absurd headers.
        add(
            "a 100 KB header value",
            request("GET", "/livez", headers: ["X-Big: " + String(repeating: "a", count: 100_000)]), [431],
            mayDrop: true)
        add(
            "1000 headers", request("GET", "/livez", headers: (0..<1000).map { "X-Header-\($0): value-\($0)" }), [431],
            mayDrop: true)
        add(
            "a 100 KB If-Match",
            request(
                "POST", present,
                headers: [
                    "Content-Type: application/json", "If-Match: \"" + String(repeating: "1", count: 100_000) + "\"",
                ], body: Array(#"{"destination":"a"}"#.utf8)),
            [400, 431], mayDrop: true, afterwards: absent(present))
        add(
            "a 300-character Idempotency-Key",
            request(
                "POST", present,
                headers: ["Content-Type: application/json", "Idempotency-Key: " + String(repeating: "k", count: 300)],
                body: Array(#"{"destination":"a"}"#.utf8)),
            [400], slug: "invalid-header", afterwards: absent(present))
        add(
            "If-Match that is not an entity tag",
            request(
                "POST", "/v1/sessions/\(controlID)/dismiss",
                headers: ["Content-Type: application/json", "If-Match: 1; DROP TABLE sessions"], body: Array("{}".utf8)),
            [400, 412], afterwards: nil)
        add(
            "a header line without a colon", request("GET", "/livez", headers: ["This is not a header"]), [400],
            mayDrop: true)
        add(
            "a Content-Length that is not a number",
            request("POST", present, headers: ["Content-Type: application/json", "Content-Length: abc"]), [400],
            mayDrop: true)
        add(
            "a negative Content-Length",
            request("POST", present, headers: ["Content-Type: application/json", "Content-Length: -1"]), [400],
            mayDrop: true)
        add(
            "a Content-Length of 2^64",
            request(
                "POST", present, headers: ["Content-Type: application/json", "Content-Length: 18446744073709551616"]),
            [400, 413], mayDrop: true)

        // Request smuggling: an ambiguous body length must not let the rest become another request.
        let smuggled = "GET /v1/sessions/\(controlID) HTTP/1.1\r\nHost: smuggled\r\n\r\n"
        add(
            "two Content-Length headers that differ",
            Array(
                "POST \(present) HTTP/1.1\r\nHost: hostile\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n\(smuggled)"
                    .utf8),
            [400], slug: "ambiguous-body-length", mayDrop: true, singleResponse: true, afterwards: absent(present))
        add(
            "Content-Length and Transfer-Encoding: chunked together",
            Array(
                "POST \(present) HTTP/1.1\r\nHost: hostile\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggled)"
                    .utf8),
            [400], slug: "ambiguous-body-length", mayDrop: true, singleResponse: true, afterwards: absent(present))
        add(
            "Transfer-Encoding other than chunked",
            Array(
                "POST \(present) HTTP/1.1\r\nHost: hostile\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{}"
                    .utf8),
            [400, 411, 501], mayDrop: true, afterwards: absent(present))

        // Path traversal and odd paths.
        for target in [
            "/v1/sessions/../../etc/passwd", "/../../etc/passwd", "/openapi.yaml/../../../etc/passwd",
            "/v1/sessions/a/../../../../etc/passwd",
        ] {
            add("path traversal \(target)", request("GET", target), [404], slug: "not-found")
        }
        for target in [
            "/v1/sessions/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/v1/sessions/..%2F..%2Fetc%2Fpasswd",
            "/v1/sessions/%2e%2e%5c%2e%2e%5cetc%5cpasswd",
        ] {
            add("path traversal \(target)", request("GET", target), [400], slug: "invalid-session-id")
        }
        add(
            "%2e%2e as a session id (a dot segment: no id)", request("GET", "/v1/sessions/%2e%2e/events"), [400],
            slug: "invalid-session-id")
        add(
            "a path that is not origin-form", request("GET", "http://evil.example/../../etc/passwd"), [400, 404],
            mayDrop: true)
        add("an asterisk target", request("GET", "*"), [400, 404], mayDrop: true)

        // SQL-looking ids and values.
        for id in [
            "1'%20OR%20'1'%3D'1", "x;DROP%20TABLE%20sessions;--", "x%27)%3B--", "%22%20OR%201%3D1%20--",
            "a%20UNION%20SELECT%20*%20FROM%20sessions",
        ] {
            add("SQL in the session id \(id)", request("GET", "/v1/sessions/\(id)"), [400], slug: "invalid-session-id")
            add(
                "SQL in the session id of a write \(id)",
                post("/v1/sessions/\(id)/presentations", #"{"destination":"a"}"#), [400],
                slug: "invalid-session-id")
        }
        add(
            "SQL in the destination", post(present, #"{"destination":"a'); DROP TABLE sessions;--"}"#), [422],
            slug: "validation-failed",
            afterwards: absent(present))
        let sqlSession = uniqueSessionID("sql")
        let sqlText = "'; DELETE FROM sessions; SELECT '"
        add(
            "SQL in the payload is stored as text",
            post(
                "/v1/sessions/\(sqlSession)/presentations",
                #"{"destination":"a","payload":{"q":"'; DELETE FROM sessions; SELECT '"}}"#),
            [201],
            afterwards: { client in
                let text = try client.call("GET", "/v1/sessions/\(sqlSession)").json["stack"]?.arrayValue?.first?[
                    "payload"]?["q"]?.stringValue
                return text == sqlText ? nil : "the payload reads back as \(text.debugDescription)"
            })
        add(
            "SQL in a query parameter", request("GET", "/v1/sessions/\(controlID)/events?after=0%20OR%201%3D1"), [400],
            slug: "invalid-parameter")
        add(
            "a limit of 10^20", request("GET", "/v1/sessions/\(controlID)/events?limit=100000000000000000000"), [400],
            slug: "invalid-parameter")
        add(
            "a negative after", request("GET", "/v1/sessions/\(controlID)/events?after=-1"), [400],
            slug: "invalid-parameter")

        // Long targets.
        add(
            "a 20 KB URL", request("GET", "/v1/sessions/" + String(repeating: "a", count: 20_000)), [414], mayDrop: true
        )
        add(
            "a 20 KB query string",
            request("GET", "/v1/sessions/\(controlID)/events?x=" + String(repeating: "a", count: 20_000)), [414],
            mayDrop: true)
        add(
            "a 129-character session id", request("GET", "/v1/sessions/" + String(repeating: "a", count: 129)), [400],
            slug: "invalid-session-id")

        // Not HTTP/1.1 at all.
        add(
            "a TLS ClientHello",
            [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + Array(repeating: 0, count: 64), [400],
            mayDrop: true)
        add("the HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), [400, 505], mayDrop: true)
        add("HTTP/0.9", Array("GET /livez\r\n".utf8), rest: [], halfClose: true, [400, 505], mayDrop: true)
        add("HTTP/9.9", Array("GET /livez HTTP/9.9\r\nHost: x\r\n\r\n".utf8), [400, 505], mayDrop: true)
        add(
            "a control character in the method", Array("GE\u{1}T /livez HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            [400, 405, 501], mayDrop: true)
        add("a lone LF request head", Array("GET /livez HTTP/1.1\nHost: x\n\n".utf8), [200, 400], mayDrop: true)
        add("binary garbage", (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }, [400], mayDrop: true)
        return corpus
    }
}

extension Array where Element == UInt8 {
    /// `METHOD /path HTTP/1.1…` with `bytes` inserted right after the path.
    fileprivate func replacingPathEnd(with bytes: [UInt8]) -> [UInt8] {
        guard let firstSpace = firstIndex(of: UInt8(ascii: " ")),
            let secondSpace = self[(firstSpace + 1)...].firstIndex(of: UInt8(ascii: " "))
        else { return self }
        return Array(self[..<secondSpace]) + bytes + Array(self[secondSpace...])
    }
}
