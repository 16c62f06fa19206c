import Foundation
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// An event stream follows one life of its session, from its creation to its deletion or
/// expiry; a stream on a session that does not exist waits for the next one. These servers keep
/// the default `--session-ttl`, so the expiry sweep runs once a minute: a session with `ttl: 1`
/// expires long before any sweep would find it.
@Suite("Event streams across a session's expiry and deletion")
struct SessionLifeStreamTests {
    @Test("at its expiry, not at the next sweep, the stream says sessionDeleted (expired) and ends")
    func expiryEndsTheStream() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID("ttl")
        let writer = server.client()
        #expect(try writer.call("PUT", "/v1/sessions/\(id)", json: ["ttl": 1]).status == 201)
        let watcher = server.client()
        let started = ContinuousClock.now
        #expect(try watcher.openStream(path: "/v1/sessions/\(id)/events/stream").status == 200)
        #expect(try watcher.nextEvent()?.event == "session")
        let ended = try #require(try watcher.nextEvent(timeout: 20))
        #expect(ended.event == "sessionDeleted")
        #expect(ended.id == nil)
        #expect(ended.data == ["type": "sessionDeleted", "sessionId": .string(id), "reason": "expired"])
        #expect(started.duration(to: .now) < .seconds(20), "the sweep runs after 60 s")
        #expect(try watcher.nextEvent() == nil)
        #expect(try writer.call("GET", "/v1/sessions/\(id)").status == 404)
    }

    @Test("after the expiry, streams on the missing session wait and get the new session from version 1")
    func newLifeAfterExpiry() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID("ttl")
        let path = "/v1/sessions/\(id)"
        let writer = server.client()
        #expect(try writer.call("PUT", path, json: ["ttl": 1]).status == 201)
        for destination in ["a", "b", "c"] {
            try writer.call("POST", "\(path)/presentations", json: ["destination": .string(destination)])
        }
        let old = server.client()
        _ = try old.openStream(path: "\(path)/events/stream")
        #expect(try old.nextEvent()?.id == "4")
        #expect(try old.nextEvent(timeout: 20)?.data["reason"] == "expired")

        // As a client follows its session: reconnects without Last-Event-ID, or with the last one.
        let fresh = server.client()
        let resumed = server.client()
        let fromZero = server.client()
        #expect(try fresh.openStream(path: "\(path)/events/stream").status == 200)
        #expect(try resumed.openStream(path: "\(path)/events/stream", headers: ["Last-Event-ID": "4"]).status == 200)
        #expect(try fromZero.openStream(path: "\(path)/events/stream", headers: ["Last-Event-ID": "0"]).status == 200)
        let made = try writer.call("POST", "\(path)/presentations", json: ["destination": "d"])
        #expect(made.json["session"]?["version"] == 1)
        for watcher in [fresh, resumed, fromZero] {
            let first = try #require(try watcher.nextEvent())
            #expect(first.event == "change")
            #expect(first.id == "1")
            #expect(
                first.data["events"]?.arrayValue?.compactMap { $0["type"]?.stringValue } == [
                    "sessionCreated", "presented",
                ])
            #expect(first.data["stack"] == [made.json["presentation"]?["id"] ?? .null])
        }
        try writer.call("POST", "\(path)/dismiss", json: [:])
        for watcher in [fresh, resumed, fromZero] {
            #expect(try watcher.nextEvent()?.id == "2")
        }
        // Opened after the new session was made, a stream starts from it as usual.
        let late = server.client()
        _ = try late.openStream(path: "\(path)/events/stream")
        let head = try #require(try late.nextEvent())
        #expect(head.event == "session")
        #expect(head.id == "2")
    }

    @Test("a change puts the expiry off: the stream ends at the new expiry, when the session reads 404")
    func changeDefersTheEnd() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID("ttl")
        let path = "/v1/sessions/\(id)"
        let writer = server.client()
        #expect(try writer.call("PUT", path, json: ["ttl": 2]).status == 201)
        let watcher = server.client()
        _ = try watcher.openStream(path: "\(path)/events/stream")
        #expect(try watcher.nextEvent()?.id == "1")
        // Half the TTL with nothing sent, then a change that gives the session 2 s more.
        #expect(throws: HTTPClientError.self) { try watcher.nextEvent(timeout: 1) }
        try writer.call("POST", "\(path)/presentations", json: ["destination": "a"])
        let changed = ContinuousClock.now
        #expect(try watcher.nextEvent()?.id == "2")
        let ended = try #require(try watcher.nextEvent(timeout: 20))
        #expect(ended.data == ["type": "sessionDeleted", "sessionId": .string(id), "reason": "expired"])
        #expect(changed.duration(to: .now) > .milliseconds(1500), "ended before the expiry the change set")
        #expect(try writer.call("GET", path).status == 404)
    }

    @Test("a stream on a session never made waits for it, whatever its Last-Event-ID, and starts at version 1")
    func neverMade() throws {
        let server = try ServerProcess()
        let path = "/v1/sessions/\(uniqueSessionID("later"))"
        let plain = server.client()
        let head = try plain.openStream(path: "\(path)/events/stream")
        #expect(head.status == 200)
        #expect(head.headers["Content-Type"] == "text/event-stream")
        #expect(head.headers["Cache-Control"] == "no-store")
        let resuming = server.client()
        #expect(try resuming.openStream(path: "\(path)/events/stream", headers: ["Last-Event-ID": "7"]).status == 200)
        #expect(try server.client().call("GET", "\(path)/events/stream", headers: ["Last-Event-ID": "x"]).status == 400)

        try server.client().call("PUT", path)
        for watcher in [plain, resuming] {
            let first = try #require(try watcher.nextEvent())
            #expect(first.event == "change")
            #expect(first.id == "1")
            #expect(first.data["events"]?.arrayValue?.first?["type"] == "sessionCreated")
        }
        try server.client().call("DELETE", path)
        for watcher in [plain, resuming] {
            #expect(try watcher.nextEvent()?.data["reason"] == "deleted")
            #expect(try watcher.nextEvent() == nil)
        }
    }

    @Test("a waiting stream keeps its credential's bounds: another session's token is refused, its own expires")
    func waitingStreamWithToken() throws {
        let server = try ServerProcess(arguments: [
            "--api-key", "admin-key", "--token-secret", "a-token-secret-of-thirty-two-bytes!", "--token-leeway", "0",
        ])
        let admin: HTTPHeaders = ["Authorization": "Bearer admin-key"]
        let mine = uniqueSessionID("mine")
        let other = uniqueSessionID("other")
        let minted = try server.client().call(
            "POST", "/v1/sessions/\(mine)/tokens", json: ["scope": "read", "ttl": 2], headers: admin)
        let token = try #require(minted.json["token"]?.stringValue)
        let refused = try server.client().call("GET", "/v1/sessions/\(other)/events/stream?access_token=\(token)")
        #expect(refused.status == 403)

        let watcher = server.client()
        #expect(try watcher.openStream(path: "/v1/sessions/\(mine)/events/stream?access_token=\(token)").status == 200)
        try server.client().call("PUT", "/v1/sessions/\(mine)", headers: admin)
        #expect(try watcher.nextEvent()?.id == "1")
        let ended = try #require(try watcher.nextEvent())
        #expect(ended.event == "tokenExpired")
        #expect(try watcher.nextEvent() == nil)
    }

    @Test("a minted token is accepted past its expiresAt for --token-leeway, as every token; its stream ends then")
    func mintedTokenKeepsTheLeeway() throws {
        let leeway = 2.0
        let server = try ServerProcess(arguments: [
            "--api-key", "admin-key", "--token-secret", "a-token-secret-of-thirty-two-bytes!", "--token-leeway", "2",
        ])
        let admin: HTTPHeaders = ["Authorization": "Bearer admin-key"]
        let path = "/v1/sessions/\(uniqueSessionID("leeway"))"
        try server.client().call("PUT", path, headers: admin)
        let minted = try server.client().call(
            "POST", "\(path)/tokens", json: ["scope": "read", "ttl": 1], headers: admin)
        let token = try #require(minted.json["token"]?.stringValue)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expiresAt = try #require(minted.json["expiresAt"]?.stringValue.flatMap(formatter.date(from:)))

        let watcher = server.client()
        #expect(try watcher.openStream(path: "\(path)/events/stream?access_token=\(token)").status == 200)
        #expect(try watcher.nextEvent()?.event == "session")
        #expect(try waitUntil(timeout: .seconds(5), pollingEvery: .milliseconds(20)) { Date() > expiresAt })
        #expect(try server.client().call("GET", "\(path)?access_token=\(token)").status == 200)
        let ended = try #require(try watcher.nextEvent(timeout: 10))
        #expect(ended.event == "tokenExpired")
        #expect(Date().timeIntervalSince(expiresAt) >= leeway - 0.1)
        #expect(try server.client().call("GET", "\(path)?access_token=\(token)").status == 401)
    }

    @Test("a long poll on a missing session waits for it: 200 once made, 404 when the wait ends first")
    func longPollWaitsForTheSession() throws {
        let server = try ServerProcess()
        let path = "/v1/sessions/\(uniqueSessionID("poll"))"
        let answer = LockedValue<JSONResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let response = try? server.client().call(
                "GET", path, headers: ["If-None-Match": "\"3\"", "Prefer": "wait=20"])
            answer.withLock { $0 = response }
            answered.signal()
        }
        let held = try waitUntil(pollingEvery: .milliseconds(20)) {
            metric(try server.client().send(method: "GET", path: "/metrics").text, "modalstack_long_polls_waiting") == 1
        }
        #expect(held)
        try server.client().call("PUT", path)
        #expect(answered.wait(timeout: .now() + 10) == .success)
        let response = try #require(answer.withLock { $0 })
        #expect(response.status == 200)
        #expect(response.json["version"] == 1)
        #expect(response.headers["ETag"] == "\"1\"")
        #expect(response.headers["Preference-Applied"] == "wait=20")

        let missing = try server.client().call(
            "GET", "/v1/sessions/\(uniqueSessionID("never"))?wait=1", headers: ["If-None-Match": "*"])
        #expect(missing.status == 404)
        #expect(missing.problemSlug == "session-not-found")
        #expect(missing.headers["Preference-Applied"] == "wait=1")
        // Without a wait, or without If-None-Match, a missing session is 404 at once.
        #expect(try server.client().call("GET", "/v1/sessions/\(uniqueSessionID("never"))?wait=5").status == 404)
    }

    @Test("a long poll held on a session that expires answers the session made again under its id, version 1 too")
    func longPollSeesANewLife() throws {
        let server = try ServerProcess()
        let path = "/v1/sessions/\(uniqueSessionID("poll"))"
        let writer = server.client()
        let first = try writer.call("PUT", path, json: ["ttl": 1])
        #expect(first.status == 201)
        let answer = LockedValue<JSONResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let response = try? server.client().call(
                "GET", path, headers: ["If-None-Match": "\"1\"", "Prefer": "wait=20"])
            answer.withLock { $0 = response }
            answered.signal()
        }
        let expired = try waitUntil(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            try writer.call("GET", path).status == 404
        }
        #expect(expired)
        let again = try writer.call("PUT", path)
        #expect(again.status == 201)
        #expect(answered.wait(timeout: .now() + 10) == .success)
        let response = try #require(answer.withLock { $0 })
        #expect(response.status == 200)
        #expect(response.json["version"] == 1)
        #expect(response.json["createdAt"] == again.json["createdAt"])
        #expect(response.json["createdAt"] != first.json["createdAt"])
    }
}
