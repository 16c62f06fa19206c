import Dispatch
import Foundation
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite("Versions, preconditions and idempotent retries over HTTP")
struct SyncEndpointTests {
    @Test("every session response carries ETag; If-None-Match answers 304 while unchanged")
    func etags() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let created = try client.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        #expect(created.headers["ETag"] == "\"1\"")
        let read = try client.call("GET", base)
        #expect(read.headers["ETag"] == "\"1\"")
        let unchanged = try client.call("GET", base, headers: ["If-None-Match": "\"1\""])
        #expect(unchanged.status == 304)
        #expect(unchanged.raw.isEmpty)
        #expect(unchanged.headers["ETag"] == "\"1\"")
        #expect(try client.call("GET", base, headers: ["If-None-Match": "W/\"1\", \"7\""]).status == 304)
        #expect(try client.call("GET", base, headers: ["If-None-Match": "\"0\""]).status == 200)
        #expect(try client.call("GET", base, headers: ["If-None-Match": "*"]).status == 304)
    }

    @Test("the other reads of a session honour If-None-Match: a presentation, a path entry, events, a transition")
    func conditionalReads() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let entry = try #require(
            try client.call("POST", "\(base)/path", json: ["destination": "home"]).headers["Location"])
        let presentation = try #require(
            try client.call("POST", "\(base)/presentations", json: ["destination": "settings"]).headers["Location"])
        let reads = [presentation, entry, "\(base)/events?after=0", "\(base)/transition?from=1"]
        for path in reads {
            let read = try client.call("GET", path)
            #expect(read.status == 200, "\(path)")
            #expect(read.headers["ETag"] == "\"2\"", "\(path)")
            let unchanged = try client.call("GET", path, headers: ["If-None-Match": "W/\"1\", \"2\""])
            #expect(unchanged.status == 304, "\(path)")
            #expect(unchanged.raw.isEmpty, "\(path)")
            #expect(unchanged.headers["ETag"] == "\"2\"", "\(path)")
            #expect(try client.call("GET", path, headers: ["If-None-Match": "\"1\""]).status == 200, "\(path)")
            let malformed = try client.call("GET", path, headers: ["If-None-Match": "\"2"])
            #expect(malformed.problemSlug == "invalid-header", "\(path)")
        }
        // A read that fails without the header fails the same with it (RFC 9110 §13.2.1).
        let failing = [
            ("\(base)/presentations/nope", "presentation-not-found"), ("\(base)/path/nope", "entry-not-found"),
            ("\(base)/events?after=9", "invalid-parameter"), ("\(base)/transition?from=9", "invalid-parameter"),
        ]
        for (path, slug) in failing {
            #expect(try client.call("GET", path, headers: ["If-None-Match": "\"2\""]).problemSlug == slug, "\(path)")
        }
        try client.call("POST", "\(base)/presentations", json: ["destination": "help"])
        for path in reads {
            let changed = try client.call("GET", path, headers: ["If-None-Match": "\"2\""])
            #expect(changed.status == 200, "\(path)")
            #expect(changed.headers["ETag"] == "\"3\"", "\(path)")
        }
    }

    @Test("a stale If-Match is a 412 with the current version, and nothing changes")
    func ifMatch() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try client.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        let stale = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "help"], headers: ["If-Match": "\"0\""])
        #expect(stale.status == 412)
        #expect(stale.problemSlug == "precondition-failed")
        #expect(stale.json["currentVersion"] == 1)
        #expect(try client.call("GET", base).json["version"] == 1)
        let fresh = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "help"], headers: ["If-Match": "\"1\""])
        #expect(fresh.status == 201)
        #expect(fresh.headers["ETag"] == "\"2\"")
        #expect(try client.call("POST", "\(base)/dismiss", json: [:], headers: ["If-Match": "\"1\""]).status == 412)
        #expect(try client.call("DELETE", base, headers: ["If-Match": "\"1\""]).status == 412)
        #expect(try client.call("POST", "\(base)/dismiss", json: [:], headers: ["If-Match": "*"]).status == 200)
        #expect(
            try client.call(
                "PUT", "/v1/sessions/\(uniqueSessionID())/stack", json: ["stack": []], headers: ["If-Match": "\"1\""]
            ).status == 412)
        #expect(try client.call("GET", base, headers: ["If-Match": "garbage"]).status == 200)
        #expect(try client.call("POST", "\(base)/dismiss", json: [:], headers: ["If-Match": "garbage"]).status == 400)
    }

    @Test(
        "--require-if-match refuses changes without If-Match, or with *, which names no version (428)",
        .enabled(if: ServerProcess.isLocal))
    func requireIfMatch() throws {
        let server = try endpointServer(arguments: ["--require-if-match", "true"])
        let client = server.client()
        let id = uniqueSessionID()
        #expect(try client.call("PUT", "/v1/sessions/\(id)").status == 201)
        let missing = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"])
        #expect(missing.status == 428)
        #expect(missing.problemSlug == "precondition-required")
        let wildcard: HTTPHeaders = ["If-Match": "*"]
        let anyVersion = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"], headers: wildcard)
        #expect(anyVersion.status == 428)
        #expect(anyVersion.problemSlug == "precondition-required")
        #expect(try client.call("DELETE", "/v1/sessions/\(id)", headers: wildcard).status == 428)
        #expect(try client.call("GET", "/v1/sessions/\(id)").json["version"] == 1)
        #expect(
            try client.call(
                "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "a"], headers: ["If-Match": "\"1\""]
            ).status == 201)
    }

    @Test("a retry sent the moment the answer arrives is a replay, never a 409 for a request still in flight")
    func retryRightAfterTheAnswer() throws {
        let server = try endpointServer()
        let prefix = uniqueSessionID("retry")
        // Eight clients at once, so that answers leave in batches while other requests arrive.
        let results = ThreadGroup(count: 8) { client -> [String] in
            let connection = server.client()
            var faults: [String] = []
            for index in 0..<60 {
                // A session each, so that every first request is a change (201) whose answer is stored.
                let path = "/v1/sessions/\(prefix)-\(client)-\(index)/presentations"
                let headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotency-Key": "k"]
                let body = JSONValue.object(["destination": "help"]).serialized()
                guard let first = try? connection.send(method: "POST", path: path, headers: headers, body: body),
                    let retry = try? connection.send(method: "POST", path: path, headers: headers, body: body)
                else { return faults + ["client \(client): the connection failed"] }
                if first.status != 201 || retry.status != 201 || retry.body != first.body {
                    faults.append("client \(client), request \(index): \(first.status) then \(retry.status)")
                }
            }
            return faults
        }
        let faults = results.join().flatMap { $0 }
        print("SyncEndpointTests.retryRightAfterTheAnswer: 480 immediate retries, \(faults.count) not replayed")
        #expect(faults.isEmpty, "\(faults.prefix(5))")
    }

    @Test("a retry with the same Idempotency-Key replays the stored response byte for byte, with no second change")
    func idempotentReplay() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let body: JSONValue = ["destination": "help", "payload": ["text": "Hi"]]
        let first = try client.send(
            method: "POST", path: "\(base)/presentations",
            headers: ["Content-Type": "application/json", "Idempotency-Key": "k-1"], body: body.serialized())
        let retry = try client.send(
            method: "POST", path: "\(base)/presentations",
            headers: ["Content-Type": "application/json", "Idempotency-Key": "k-1"], body: body.serialized())
        #expect(first.status == 201)
        #expect(retry.status == 201)
        #expect(retry.body == first.body)
        #expect(retry.headers["Location"] == first.headers["Location"])
        #expect(retry.headers["ETag"] == first.headers["ETag"])
        #expect(retry.headers["Idempotent-Replayed"] == "true")
        #expect(try client.call("GET", base).json["version"] == 1)
        let other = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "other"], headers: ["Idempotency-Key": "k-1"])
        #expect(other.status == 422)
        #expect(other.problemSlug == "idempotency-key-reused")
        #expect(
            try client.call(
                "POST", "\(base)/presentations", json: ["destination": "b"], headers: ["Idempotency-Key": "bad key"]
            ).status == 400)
    }

    @Test("stored idempotent responses survive a restart", .enabled(if: ServerProcess.isLocal))
    func idempotencyPersists() throws {
        let server = try ServerProcess()
        var client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let first = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "a"], headers: ["Idempotency-Key": "persist"])
        client.close()
        try server.restart()
        client = server.client()
        let retry = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "a"], headers: ["Idempotency-Key": "persist"])
        #expect(retry.raw == first.raw)
        #expect(try client.call("GET", base).json["version"] == 1)
    }

    @Test("a retry storm: the same idempotent present from 20 connections at once yields one presentation")
    func retryStorm() throws {
        let server = try endpointServer()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let body = (["destination": "paywall", "payload": ["plan": "pro"]] as JSONValue).serialized()
        let results = LockedValue<[(Int, [UInt8])]>([])
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            let client = server.client()
            defer { client.close() }
            guard
                let response = try? client.send(
                    method: "POST", path: "\(base)/presentations",
                    headers: ["Content-Type": "application/json", "Idempotency-Key": "storm"], body: body)
            else { return }
            results.withLock { $0.append((response.status, response.body)) }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 20)
        let created = all.filter { $0.0 == 201 }
        #expect(!created.isEmpty)
        #expect(all.allSatisfy { $0.0 == 201 || $0.0 == 409 })
        #expect(Set(created.map(\.1)).count == 1)
        let session = try server.client().call("GET", base)
        #expect(session.json["stack"]?.arrayValue?.count == 1)
        #expect(session.json["version"] == 1)
    }
}

@Suite("Watching, the event log and transition plans over HTTP")
struct WatchEndpointTests {
    @Test("a long poll is woken by a present from another connection")
    func longPollWakes() throws {
        let server = try endpointServer()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try server.client().call("PUT", base)
        let answer = LockedValue<JSONResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let response = try? server.client().call(
                "GET", base, headers: ["If-None-Match": "\"1\"", "Prefer": "wait=20"])
            answer.withLock { $0 = response }
            done.signal()
        }
        // Present only once the poll is held, as the server's own gauge says.
        let held = try waitUntil(timeout: .seconds(5), pollingEvery: .milliseconds(50)) {
            metric(try server.client().send(method: "GET", path: "/metrics").text, "modalstack_long_polls_waiting") == 1
        }
        #expect(held)
        #expect(answer.withLock { $0 } == nil)
        let presented = try server.client().call("POST", "\(base)/presentations", json: ["destination": "settings"])
        #expect(done.wait(timeout: .now() + 10) == .success)
        let response = try #require(answer.withLock { $0 })
        #expect(response.status == 200)
        #expect(response.json["version"] == 2)
        #expect(response.json == presented.json["session"])
        #expect(response.headers["Preference-Applied"] == "wait=20")
        #expect(response.headers["ETag"] == "\"2\"")
    }

    @Test("a long poll that sees no change ends with 304 after the wait; ?wait= works too")
    func longPollTimesOut() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try client.call("PUT", base)
        let started = Date()
        let response = try client.call("GET", "\(base)?wait=1", headers: ["If-None-Match": "\"1\""])
        #expect(response.status == 304)
        #expect(response.headers["Preference-Applied"] == "wait=1")
        #expect(Date().timeIntervalSince(started) >= 0.9)
        #expect(try client.call("GET", "\(base)?wait=soon", headers: ["If-None-Match": "\"1\""]).status == 400)
    }

    @Test("the event log pages through every change, with a next link")
    func eventLog() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try client.call("POST", "\(base)/presentations", json: ["destination": "a"])
        try client.call("POST", "\(base)/presentations", json: ["destination": "b", "style": "alert", "title": "t"])
        try client.call("POST", "\(base)/presentations", json: ["destination": "c"])
        try client.call("POST", "\(base)/dismiss", json: ["result": ["buttonId": "ok"]])
        var types: [String] = []
        var versions: [Int] = []
        var next: String? = "\(base)/events?after=0&limit=2"
        var pages = 0
        while let path = next {
            let page = try client.call("GET", path)
            #expect(page.status == 200)
            for event in page.json["events"]?.arrayValue ?? [] {
                types.append(event["type"]?.stringValue ?? "?")
                versions.append(event["version"]?.intValue ?? -1)
            }
            next = page.json["next"]?.stringValue
            pages += 1
        }
        #expect(types == ["sessionCreated", "presented", "presented", "queued", "dismissed", "promoted"])
        #expect(versions == [1, 1, 2, 3, 4, 4])
        #expect(pages == 3)
        #expect(try client.call("GET", "\(base)/events?limit=5000").status == 400)
        let beyond = try client.call("GET", "\(base)/events?after=5")
        #expect(beyond.status == 400)
        #expect(beyond.problemSlug == "invalid-parameter")
        #expect(try client.call("GET", "\(base)/events?after=4").json["after"] == 4)
    }

    @Test("every change answers with its transition; GET transition plans from any logged version")
    func transitions() throws {
        let server = try endpointServer(arguments: ServerProcess.isLocal ? ["--event-log-size", "3"] : [])
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let a = try client.call("POST", "\(base)/presentations", json: ["destination": "a"])
        let aID = try #require(a.json["presentation"]?["id"]?.stringValue)
        #expect(a.json["transition"] == [["present": .string(aID)]])
        let b = try client.call("POST", "\(base)/presentations", json: ["destination": "b"])
        let bID = try #require(b.json["presentation"]?["id"]?.stringValue)
        let deepLink = try client.call(
            "PUT", "\(base)/stack", json: ["stack": [["destination": "x"], ["destination": "y"]]])
        let newIDs = deepLink.json["session"]?["stack"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(
            deepLink.json["transition"]
                == .array(
                    [["dismiss": .string(bID)], ["dismiss": .string(aID)]] + newIDs.map { ["present": .string($0)] }))
        let fromOne = try client.call("GET", "\(base)/transition?from=1")
        #expect(
            fromOne.json["transition"] == .array([["dismiss": .string(aID)]] + newIDs.map { ["present": .string($0)] }))
        #expect(fromOne.json["to"] == 3)
        #expect(try client.call("GET", "\(base)/transition?from=3").json["transition"] == [])
        #expect(
            try client.call("GET", "\(base)/transition?from=0").json["transition"]
                == .array(newIDs.map { ["present": .string($0)] }))
        #expect(try client.call("GET", "\(base)/transition?from=9").status == 400)
        #expect(try client.call("GET", "\(base)/transition").status == 400)
        if ServerProcess.isLocal {
            for name in ["p", "q", "r"] {
                try client.call("POST", "\(base)/presentations", json: ["destination": .string(name)])
            }
            let gone = try client.call("GET", "\(base)/transition?from=1")
            #expect(gone.status == 410)
            #expect(gone.problemSlug == "version-gone")
            // The event log answers the same: what it no longer holds is gone, from the start it
            // says where it starts.
            let eventsGone = try client.call("GET", "\(base)/events?after=1")
            #expect(eventsGone.status == 410)
            #expect(eventsGone.problemSlug == "version-gone")
            let fromStart = try client.call("GET", "\(base)/events?after=0")
            #expect(fromStart.status == 200)
            #expect(fromStart.json["after"] == 3)
            #expect(fromStart.json["events"]?.arrayValue?.first?["version"] == 4)
            #expect(try client.call("GET", "\(base)/events?after=3").json["after"] == 3)
        }
    }
}
