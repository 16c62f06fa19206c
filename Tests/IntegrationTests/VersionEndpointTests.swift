import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite("Any version of a session over HTTP")
struct VersionEndpointTests {
    /// What `GET` answered right after each change: its body and `ETag`, by version.
    private struct Recorded {
        var bodies: [Int64: [UInt8]] = [:]
        var tags: [Int64: String] = [:]

        mutating func take(_ client: some TestClient, _ base: String) throws -> Int64 {
            let read = try client.call("GET", base)
            let version = Int64(try #require(read.json["version"]?.intValue))
            #expect(bodies[version] == nil, "version \(version) recorded twice: a change that changed nothing")
            bodies[version] = read.raw
            tags[version] = read.headers["ETag"]
            return version
        }
    }

    /// A session through presents, a queue and its promotion, updates, pushes and pops in a
    /// container and in the root, a whole navigation set and a dismiss of everything; `GET` is
    /// recorded after each change.
    private func eventfulSession(_ client: some TestClient, _ base: String) throws -> Recorded {
        var recorded = Recorded()
        try client.call("PUT", base)
        _ = try recorded.take(client, base)
        let sheet = try #require(
            try client.call("POST", "\(base)/presentations", json: ["destination": "settings", "payload": ["tab": 1]])
                .json["presentation"]?["id"]?.stringValue)
        _ = try recorded.take(client, base)
        let changes: [(String, String, JSONValue)] = [
            ("POST", "\(base)/path", ["destination": "home", "level": "root"]),
            ("POST", "\(base)/path", ["destination": "privacy", "level": .string(sheet)]),
            ("POST", "\(base)/path", ["destination": "profile", "payload": ["userId": 7], "level": .string(sheet)]),
            ("POST", "\(base)/presentations", ["destination": "delete", "style": "alert", "title": "Delete?"]),
            ("POST", "\(base)/presentations", ["destination": "help"]),  // queued behind the alert
            ("PATCH", "\(base)/presentations/\(sheet)", ["payload": ["tab": 2]]),
            ("POST", "\(base)/path/pop", ["level": .string(sheet)]),
            ("POST", "\(base)/dismiss", ["result": ["buttonId": "ok"]]),  // the alert; help is promoted
            ("POST", "\(base)/path", ["destination": "about", "level": "root"]),
            (
                "PUT", "\(base)/navigation",
                [
                    "path": [["destination": "home"]],
                    "stack": [["destination": "onboarding", "path": [["destination": "step2"]]]],
                ]
            ),
            ("POST", "\(base)/path/pop", ["level": "root"]),
            ("POST", "\(base)/dismiss", ["all": true]),
        ]
        for (method, path, body) in changes {
            let answer = try client.call(method, path, json: body)
            #expect((200...202).contains(answer.status), "\(method) \(path): \(answer.status) \(answer.json)")
            _ = try recorded.take(client, base)
        }
        return recorded
    }

    @Test("every version answers the body GET gave at that version, byte for byte, with its ETag")
    func everyVersion() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let recorded = try eventfulSession(client, base)
        let current = try #require(recorded.bodies.keys.max())
        #expect(recorded.bodies.count == 14 && current == 14)
        let json = recorded.bodies.mapValues { (try? JSONParser.parse($0)) ?? .null }
        // The walk did what it says: a queue, a promotion, paths in a container and in the root.
        #expect(json[7]?["queue"]?.arrayValue?.count == 1)
        #expect(json[10]?["queue"]?.arrayValue?.isEmpty == true && json[10]?["stack"]?.arrayValue?.count == 2)
        #expect(json[5]?["stack"]?.arrayValue?.first?["path"]?.arrayValue?.count == 2)
        #expect(json[11]?["path"]?.arrayValue?.count == 2)
        for version in 1...current {
            let answer = try client.call("GET", "\(base)/versions/\(version)")
            #expect(answer.status == 200, "version \(version): \(answer.json)")
            #expect(answer.raw == recorded.bodies[version], "version \(version) differs from what GET answered")
            #expect(answer.headers["ETag"] == recorded.tags[version], "version \(version)")
            #expect(answer.headers["Content-Type"] == "application/json", "version \(version)")
            let unchanged = try client.call(
                "GET", "\(base)/versions/\(version)", headers: ["If-None-Match": "\"\(version)\""])
            #expect(unchanged.status == 304, "version \(version)")
            #expect(unchanged.raw.isEmpty)
            #expect(unchanged.headers["ETag"] == "\"\(version)\"")
        }
        // HEAD answers as GET does, without the body.
        let head = try client.call("HEAD", "\(base)/versions/3")
        #expect(head.status == 200)
        #expect(head.headers["ETag"] == "\"3\"")
        #expect(head.raw.isEmpty)
        // A version the client does not have is answered whole, whatever it lists.
        #expect(
            try client.call("GET", "\(base)/versions/3", headers: ["If-None-Match": "\"14\""]).raw == recorded.bodies[3]
        )
    }

    @Test("a version not reached yet is 404 version-not-found; an unknown session the 404 GET gives")
    func notFound() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        try client.call("POST", "\(base)/presentations", json: ["destination": "a"])
        try client.call("POST", "\(base)/presentations", json: ["destination": "b"])
        let beyond = try client.call("GET", "\(base)/versions/3")
        #expect(beyond.status == 404)
        #expect(beyond.problemSlug == "version-not-found")
        #expect(beyond.json["currentVersion"] == 2)
        #expect(try client.call("GET", "\(base)/versions/\(Int64.max)").problemSlug == "version-not-found")

        let unknown = "/v1/sessions/\(uniqueSessionID())"
        let get = try client.call("GET", unknown)
        let version = try client.call("GET", "\(unknown)/versions/1")
        #expect(version.status == 404)
        #expect(version.problemSlug == "session-not-found")
        #expect(version.raw == get.raw)

        #expect(try client.call("DELETE", base).status == 204)
        #expect(try client.call("GET", "\(base)/versions/1").problemSlug == "session-not-found")
    }

    @Test("a version that is not a whole number from 1, in plain digits, is 400 invalid-parameter")
    func badVersion() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try client.call("PUT", base)
        for text in ["0", "-1", "+1", "01", "1.0", "1e2", "one", "%201", "9223372036854775808", "99999999999999999999"]
        {
            let answer = try client.call("GET", "\(base)/versions/\(text)")
            #expect(answer.status == 400, "\(text)")
            #expect(answer.problemSlug == "invalid-parameter", "\(text)")
        }
        // The path is checked before the store is read: a bad version of no session is still a 400.
        #expect(try client.call("GET", "/v1/sessions/\(uniqueSessionID())/versions/0").status == 400)
        #expect(try client.call("GET", "/v1/sessions/%20/versions/1").problemSlug == "invalid-session-id")
        #expect(try client.call("GET", "\(base)/versions/1", headers: ["If-None-Match": "\"1"]).status == 400)
    }

    @Test(
        "past the event log a version is 410 version-gone; the log's versions are still served",
        .enabled(if: ServerProcess.isLocal, "sets --event-log-size"))
    func pastTheLog() throws {
        let server = try endpointServer(arguments: ["--event-log-size", "3"])
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        var recorded = Recorded()
        for index in 1...10 {
            try client.call("POST", "\(base)/presentations", json: ["destination": .string("screen\(index)")])
            _ = try recorded.take(client, base)
        }
        for version in 1...7 {
            let gone = try client.call("GET", "\(base)/versions/\(version)")
            #expect(gone.status == 410, "version \(version)")
            #expect(gone.problemSlug == "version-gone", "version \(version)")
        }
        #expect(try client.call("GET", "\(base)/versions/10").raw == recorded.bodies[10])
        // The log holds the changes that made 8, 9 and 10: each is rebuilt exactly.
        for version in Int64(8)...9 {
            let answer = try client.call("GET", "\(base)/versions/\(version)")
            #expect(answer.status == 200, "version \(version): \(answer.json)")
            #expect(answer.raw == recorded.bodies[version], "version \(version)")
        }
    }

    @Test(
        "a session's versions are read with the credentials that read the session",
        .enabled(if: ServerProcess.isLocal, "starts a server with credentials"))
    func accessControl() throws {
        let key: HTTPHeaders = ["Authorization": "Bearer admin-key"]
        let server = try endpointServer(arguments: [
            "--api-key", "admin-key", "--token-secret", "a-token-secret-of-thirty-two-bytes!",
        ])
        let client = server.client()
        let mine = "/v1/sessions/\(uniqueSessionID())"
        let theirs = "/v1/sessions/\(uniqueSessionID())"
        for base in [mine, theirs] {
            try client.call("POST", "\(base)/presentations", json: ["destination": "a"], headers: key)
            try client.call("POST", "\(base)/presentations", json: ["destination": "b"], headers: key)
        }
        let token = try #require(
            try client.call("POST", "\(mine)/tokens", json: ["scope": "read"], headers: key).json["token"]?.stringValue)
        let bearer: HTTPHeaders = ["Authorization": "Bearer \(token)"]
        #expect(try client.call("GET", "\(mine)/versions/1", headers: bearer).status == 200)
        #expect(try client.call("GET", "\(mine)/versions/1?access_token=\(token)").status == 200)
        #expect(try client.call("GET", "\(theirs)/versions/1", headers: key).status == 200)

        let refused = try client.call("GET", "\(theirs)/versions/1", headers: bearer)
        #expect(refused.status == 403)
        #expect(refused.problemSlug == "forbidden")
        #expect(refused.raw == (try client.call("GET", theirs, headers: bearer)).raw)
        let anonymous = try client.call("GET", "\(mine)/versions/1")
        #expect(anonymous.status == 401)
        #expect(anonymous.raw == (try client.call("GET", mine)).raw)
        // Refused before the version is read: no answer tells a stranger which versions exist.
        #expect(try client.call("GET", "\(theirs)/versions/0", headers: bearer).status == 403)
        #expect(try client.call("GET", "\(theirs)/versions/99", headers: bearer).status == 403)
    }

    @Test("an expired session's versions are the 404 GET gives", .enabled(if: ServerProcess.isLocal))
    func expired() throws {
        let time = ManualTime()
        let server = try InProcessServer(arguments: ["--session-ttl", "1"], time: time)
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        try client.call("POST", "\(base)/presentations", json: ["destination": "a"])
        try client.call("POST", "\(base)/presentations", json: ["destination": "b"])
        #expect(try client.call("GET", "\(base)/versions/1").status == 200)
        time.advance(by: .milliseconds(1001))
        let expired = try client.call("GET", "\(base)/versions/1")
        #expect(expired.status == 404)
        #expect(expired.problemSlug == "session-not-found")
        #expect(try client.call("GET", "\(base)/versions/2").raw == (try client.call("GET", base)).raw)
    }
}
