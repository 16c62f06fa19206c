import Dispatch
import Foundation
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// Reads one sample from a Prometheus text exposition (`name{labels} value`).
func metric(_ text: String, _ series: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

/// Whether `/metrics` shows `count` sessions within 20 s: on PostgreSQL the gauge is read from the
/// database's statistics, which a connection reports up to 10 s after its commit.
func sessionsGauge(on client: some TestClient, reaches count: Double) throws -> Bool {
    try waitUntil(timeout: .seconds(20), pollingEvery: .milliseconds(50)) {
        metric(try client.send(path: "/metrics").text, "modalstack_sessions") == count
    }
}

@Suite("Operations over HTTP", .enabled(if: ServerProcess.isLocal, "starts servers with operations settings"))
struct OperationsTests {
    @Test("with API keys, /v1 needs a Bearer key: missing and wrong are 401, either of two keys works")
    func apiKeys() throws {
        let directory = try TemporaryDirectory()
        let keyFile = directory.appending("keys")
        try Data("# rotated in\nkey-three\n".utf8).write(to: URL(fileURLWithPath: keyFile))
        let server = try endpointServer(arguments: ["--api-key", "key-one, key-two", "--api-key-file", keyFile])
        let client = server.client()
        let path = "/v1/sessions/\(uniqueSessionID())"
        let missing = try client.call("PUT", path)
        #expect(missing.status == 401)
        #expect(missing.problemSlug == "unauthorized")
        #expect(missing.headers["WWW-Authenticate"] == #"Bearer realm="modalstack""#)
        let wrong = try client.call("PUT", path, headers: ["Authorization": "Bearer key-on"])
        #expect(wrong.status == 401)
        #expect(wrong.headers["WWW-Authenticate"]?.contains("invalid_token") == true)
        #expect(try client.call("PUT", path, headers: ["Authorization": "Basic a2V5LW9uZQ=="]).status == 401)
        #expect(try client.call("PUT", path, headers: ["Authorization": "Bearer key-one"]).status == 201)
        #expect(try client.call("GET", path, headers: ["Authorization": "Bearer key-two"]).status == 200)
        #expect(try client.call("GET", path, headers: ["Authorization": "bearer key-three"]).status == 200)
        #expect(try client.call("GET", "/livez").status == 200)
        #expect(try client.call("GET", "/metrics").status == 200)
        #expect(try client.call("GET", "/openapi.yaml").status == 200)
    }

    @Test("with API keys and tokens, a wrong key is not taken for a token; a write token reads what any client may")
    func keysAndTokens() throws {
        let server = try endpointServer(arguments: [
            "--api-key", "key-one", "--token-secret", "a-token-secret-of-thirty-two-bytes!",
        ])
        let client = server.client()
        let path = "/v1/sessions/\(uniqueSessionID())"
        let wrong = try client.call("PUT", path, headers: ["Authorization": "Bearer nope"])
        #expect(wrong.status == 401)
        #expect(wrong.json["detail"] == "the credential is neither a valid API key nor a well-formed client token")
        let inQuery = try client.call("GET", "\(path)?access_token=nope")
        #expect(inQuery.json["detail"] == "The token is not a well-formed compact JWS.")

        let minted = try client.call(
            "POST", "\(path)/tokens", json: ["scope": "write"], headers: ["Authorization": "Bearer key-one"])
        let writeOnly: HTTPHeaders = ["Authorization": "Bearer \(try #require(minted.json["token"]?.stringValue))"]
        #expect(try client.call("GET", "/v1/destinations", headers: writeOnly).status == 200)
        // Let in: without a catalog no route matches.
        #expect(try client.call("GET", "/v1/links/resolve?url=myapp://a", headers: writeOnly).problemSlug == "no-route")
        #expect(try client.call("GET", path, headers: writeOnly).status == 403)
        #expect(try client.call("PUT", path, headers: writeOnly).status == 201)
    }

    @Test("--auth-operations protects health and metrics too")
    func protectedOperations() throws {
        let server = try endpointServer(arguments: ["--api-key", "k", "--auth-operations", "true"])
        let client = server.client()
        #expect(try client.call("GET", "/metrics").status == 401)
        #expect(try client.call("GET", "/readyz", headers: ["Authorization": "Bearer k"]).status == 200)
    }

    @Test("metrics move when requests are made, with route templates and no session ids")
    func metricsMove() throws {
        let server = try ServerProcess()
        let client = server.client()
        let series =
            #"modalstack_http_requests_total{method="POST",route="/v1/sessions/{sessionId}/presentations",status="2xx"}"#
        let before = try client.send(method: "GET", path: "/metrics").text
        #expect(before.contains("# TYPE modalstack_http_request_duration_seconds histogram"))
        let id = uniqueSessionID()
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"])
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "b"])
        try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:])
        // A request is counted once it is done, an event once its commit is: either may come just after the answer.
        var after = try client.send(method: "GET", path: "/metrics")
        let counted = try waitUntil(pollingEvery: .milliseconds(20)) {
            after = try client.send(method: "GET", path: "/metrics")
            return (metric(after.text, series) ?? 0) - (metric(before, series) ?? 0) >= 2
                && (metric(after.text, #"modalstack_presentation_events_total{event="presented"}"#) ?? 0) >= 2
                && (metric(after.text, #"modalstack_presentation_events_total{event="dismissed"}"#) ?? 0) >= 1
        }
        #expect(counted, "the three requests were not all counted within 5 s")
        #expect(after.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect((metric(after.text, series) ?? 0) - (metric(before, series) ?? 0) == 2)
        #expect(metric(after.text, #"modalstack_presentation_events_total{event="presented"}"#) == 2)
        #expect(metric(after.text, #"modalstack_presentation_events_total{event="dismissed"}"#) == 1)
        #expect(try sessionsGauge(on: client, reaches: 1))
        #expect((metric(after.text, "modalstack_db_commit_duration_seconds_count") ?? 0) >= 3)
        #expect((metric(after.text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect(!after.text.contains(id))
    }

    @Test(
        "every navigation event has its series from the start, at 0; a replaced stack counts what it presented too")
    func presentationEventSeries() throws {
        let server = try endpointServer()
        let client = server.client()
        func events(_ kind: SessionEvent.Kind) throws -> Double? {
            metric(
                try client.send(method: "GET", path: "/metrics").text,
                #"modalstack_presentation_events_total{event="\#(kind.rawValue)"}"#)
        }
        for kind in SessionEvent.Kind.presentationEvents {
            #expect(try events(kind) == 0, "\(kind)")
        }
        let replaced = try client.call(
            "PUT", "/v1/sessions/\(uniqueSessionID())/stack", json: ["stack": [["destination": "a"]]])
        try #require(replaced.status == 200)
        // Counted once the commit is done, which may be just after the answer went out.
        _ = try waitUntil { try events(.replaced) != 0 }
        #expect(try events(.replaced) == 1)
        #expect(try events(.presented) == 1, "the replace's record says what it presented")
        #expect(try events(.pushed) == 0)
    }

    @Test("one structured log line per request, with the request id accepted or made, and echoed")
    func accessLog() throws {
        let server = try ServerProcess(capturingOutput: true)
        let client = server.client()
        let given = try client.call(
            "GET", "/v1/sessions/\(uniqueSessionID())", headers: ["X-Request-Id": "req-given-1"])
        #expect(given.headers["X-Request-Id"] == "req-given-1")
        let made = try client.call("PUT", "/v1/sessions/\(uniqueSessionID())")
        let madeID = try #require(made.headers["X-Request-Id"])
        // A request's line is written once it is done, which may be just after its answer went out.
        var lines: [JSONValue] = []
        let logged = waitUntil(pollingEvery: .milliseconds(10)) {
            lines = server.outputLines().compactMap { try? JSONParser.parse($0) }
            return lines.contains { $0["requestId"] == "req-given-1" }
                && lines.contains { $0["requestId"] == .string(madeID) }
        }
        #expect(logged, "the two requests' log lines were not written within 5 s")
        let first = try #require(lines.first { $0["requestId"] == "req-given-1" })
        #expect(first["method"] == "GET")
        #expect(first["route"] == "/v1/sessions/{sessionId}")
        #expect(first["status"] == 404)
        #expect(first["level"] == "info")
        #expect(first["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) != nil)
        #expect(first["durationMs"]?.doubleValue != nil)
        #expect((first["bytes"]?.intValue ?? 0) > 0)
        #expect(lines.contains { $0["requestId"] == .string(madeID) && $0["status"] == 201 })
    }

    @Test("sessions idle past their TTL read as 404 and are swept, on the server's clock")
    func expiry() throws {
        let time = ManualTime()
        let server = try InProcessServer(arguments: ["--session-ttl", "1"], time: time)
        let client = server.client()
        let short = uniqueSessionID()
        let long = uniqueSessionID()
        #expect(try client.call("PUT", "/v1/sessions/\(long)", json: ["ttl": 3600]).json["ttl"] == 3600)
        try client.call("POST", "/v1/sessions/\(short)/presentations", json: ["destination": "a"])
        // A read does not keep a session alive, so asking is no change to what is tested.
        time.advance(by: .milliseconds(999))
        #expect(try client.call("GET", "/v1/sessions/\(short)").status == 200)
        #expect(try sessionsGauge(on: client, reaches: 2))
        time.advance(by: .milliseconds(2))
        #expect(try client.call("GET", "/v1/sessions/\(short)").status == 404)
        #expect(try client.call("GET", "/v1/sessions/\(long)").status == 200)

        // The sweep runs every max(ttl / 4, 1) s on the same clock; its delete commits in the background.
        time.advance(by: .seconds(1))
        #expect(try sessionsGauge(on: client, reaches: 1))
        let fresh = try client.call("POST", "/v1/sessions/\(short)/presentations", json: ["destination": "b"])
        #expect(fresh.json["session"]?["version"] == 1)
    }

    @Test("SIGTERM: waiting long polls answer 304, no acknowledged write is lost, exit status 0")
    func gracefulStop() throws {
        let server = try ServerProcess(arguments: ["--event-log-size", "1000000"])
        let base = "/v1/sessions/\(uniqueSessionID())"
        try server.client().call("PUT", base)
        let pollStatus = LockedValue<Int?>(nil)
        let pollDone = DispatchSemaphore(value: 0)
        let heldID = "held-session"
        try server.client().call("PUT", "/v1/sessions/\(heldID)")
        Thread.detachNewThread {
            let response = try? server.client().call(
                "GET", "/v1/sessions/\(heldID)", headers: ["If-None-Match": "\"1\"", "Prefer": "wait=30"])
            pollStatus.withLock { $0 = response?.status }
            pollDone.signal()
        }
        let acknowledged = LockedValue<[String]>([])
        let stopWriting = LockedValue(false)
        let writerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let client = server.client()
            var index = 0
            while !stopWriting.withLock({ $0 }) {
                let key = "k\(index)"
                guard
                    let response = try? client.call(
                        "POST", "\(base)/presentations", json: ["destination": "d", "key": .string(key)]),
                    response.status == 201
                else { break }
                acknowledged.withLock { $0.append(key) }
                guard (try? client.call("POST", "\(base)/dismiss", json: [:]))?.status == 200 else { break }
                index += 1
            }
            writerDone.signal()
        }
        // SIGTERM once the long poll is held and the writer is under way, so that it lands amid the writes.
        let observer = server.client()
        func longPollsHeld() throws -> Double? {
            metric(try observer.send(method: "GET", path: "/metrics").text, "modalstack_long_polls_waiting")
        }
        let underway = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            try acknowledged.withLock { $0.count } >= 20 && longPollsHeld() == 1
        }
        observer.close()
        #expect(underway, "within 10 s, the long poll was not held or the writer had not 20 writes acknowledged")
        #expect(server.stop(signal: SIGTERM) == 0)
        stopWriting.withLock { $0 = true }
        #expect(writerDone.wait(timeout: .now() + 10) == .success)
        #expect(pollDone.wait(timeout: .now() + 10) == .success)
        #expect(pollStatus.withLock { $0 } == 304)
        try server.start()
        let presentedKeys = Set(
            try allEvents(server.client(), base).filter { $0["type"] == "presented" }.compactMap {
                $0["presentation"]?["key"]?.stringValue
            })
        let acked = acknowledged.withLock { $0 }
        #expect(!acked.isEmpty)
        #expect(Set(acked).isSubset(of: presentedKeys))
    }

    @Test(
        "readiness during a drain: 503 at once after SIGTERM while requests are still served through --shutdown-delay, then exit 0 with the writes kept"
    )
    func readinessDuringDrain() throws {
        let server = try ServerProcess(arguments: ["--shutdown-delay", "2"])
        let base = "/v1/sessions/\(uniqueSessionID("drain"))"
        #expect(try server.client().call("GET", "/readyz").status == 200)
        #expect(try server.client().call("PUT", base).status == 201)
        let signalled = ContinuousClock.now
        server.send(SIGTERM)
        // Each check on a new connection: the listener still accepts during the delay.
        var readiness = try server.client().call("GET", "/readyz")
        while readiness.status == 200 && ContinuousClock.now - signalled < .seconds(1) {
            readiness = try server.client().call("GET", "/readyz")
        }
        #expect(readiness.status == 503)
        #expect(String(decoding: readiness.raw, as: UTF8.self).contains("shutting down"))
        #expect(try server.client().call("GET", "/livez").status == 200)
        let write = try server.client().call("POST", "\(base)/presentations", json: ["destination": "during-drain"])
        #expect(write.status == 201)
        #expect(ContinuousClock.now - signalled < .seconds(2), "the checks took longer than the delay")
        #expect(server.waitForExit() == 0)
        #expect(ContinuousClock.now - signalled >= .seconds(2), "the server stopped before --shutdown-delay was over")

        try server.start()
        let state = try server.client().call("GET", base)
        #expect(state.json["stack"]?.arrayValue?.first?["destination"] == "during-drain")
    }
}

/// Every event of a session's log, following the `next` links.
func allEvents(_ client: HTTPClient, _ base: String) throws -> [JSONValue] {
    var events: [JSONValue] = []
    var next: String? = "\(base)/events?limit=1000"
    while let path = next {
        let page = try client.call("GET", path)
        events += page.json["events"]?.arrayValue ?? []
        next = page.json["next"]?.stringValue
    }
    return events
}
