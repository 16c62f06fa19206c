import Foundation
import Glibc
import Locking
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// Push paths, whole navigations and deep links against the built binary (on SQLite, and on
/// PostgreSQL in `scripts/test`'s second pass).
@Suite("Navigation over HTTP: paths, navigations, deep links")
struct NavigationEndpointTests {
    @Test("the README's deep link: onboarding → downloads with an item pushed inside it, then back to root")
    func deepLinkWalkThrough() throws {
        let server = try endpointServer(arguments: ["--catalog", seedsCatalogPath])
        let client = server.client()
        let id = uniqueSessionID()
        let resolved = try client.call("GET", "/v1/links/resolve?url=myapp%3A%2F%2Fonboarding%2Fdownloads%2F42")
        #expect(resolved.status == 200)
        #expect(resolved.json["action"] == "navigate")
        #expect(resolved.json["route"]?["name"] == "download-item")
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404, "resolving changes nothing")

        let opened = try client.call(
            "POST", "/v1/sessions/\(id)/links", json: ["url": "myapp://onboarding/downloads/42"])
        #expect(opened.status == 200)
        let session = try #require(opened.json["session"])
        #expect(session["version"] == 1)
        #expect(
            session["stack"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == ["onboarding", "downloads"])
        let downloads = try #require(session["stack"]?.arrayValue?.last)
        #expect(downloads["path"]?.arrayValue?.first?["destination"] == "downloadItem")
        #expect(downloads["path"]?.arrayValue?.first?["payload"] == ["itemId": 42])
        let downloadsID = try #require(downloads["id"]?.stringValue)
        let itemID = try #require(downloads["path"]?.arrayValue?.first?["id"]?.stringValue)
        #expect(
            opened.json["transition"] == [
                ["present": session["stack"]?.arrayValue?.first?["id"] ?? .null], ["present": .string(downloadsID)],
                ["push": .string(itemID), "level": .string(downloadsID)],
            ])

        let home = try client.call("PUT", "/v1/sessions/\(id)/navigation", json: ["path": [], "stack": []])
        #expect(home.status == 200)
        #expect(home.json["session"]?["stack"] == [])
        #expect(home.json["transition"]?.arrayValue?.count == 2, "two dismisses; the item goes with its sheet")
        #expect(home.json["dismissed"]?.arrayValue?.first?["path"]?.arrayValue?.count == 1)
    }

    @Test("push and pop: Location, the entry, an update in place, a pop with a result, the levels")
    func pushAndPop() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        let root = try client.call("POST", "\(base)/path", json: ["destination": "home"])
        #expect(root.status == 201)
        #expect(root.json["level"] == "root")
        let rootEntry = try #require(root.json["entry"]?["id"]?.stringValue)
        #expect(root.headers["Location"] == "\(base)/path/\(rootEntry)")

        let sheet = try client.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        let sheetID = try #require(sheet.json["presentation"]?["id"]?.stringValue)
        let privacy = try client.call(
            "POST", "\(base)/path", json: ["destination": "privacy", "payload": ["section": 1]])
        #expect(privacy.json["level"] == .string(sheetID), "onto the top-most container by default")
        let privacyID = try #require(privacy.json["entry"]?["id"]?.stringValue)
        let again = try client.call(
            "POST", "\(base)/path", json: ["destination": "privacy", "payload": ["section": 2]])
        #expect(again.status == 200)
        #expect(again.json["entry"]?["id"] == .string(privacyID))
        #expect(again.json["session"]?["version"] == 4)

        let fetched = try client.call("GET", "\(base)/path/\(privacyID)")
        #expect(fetched.status == 200)
        #expect(fetched.json["level"] == .string(sheetID))
        #expect(fetched.json["entry"]?["payload"] == ["section": 2])

        let popped = try client.call("POST", "\(base)/path/pop", json: ["result": ["saved": true]])
        #expect(popped.status == 200)
        #expect(popped.json["popped"]?.arrayValue?.first?["id"] == .string(privacyID))
        #expect(popped.json["transition"] == [["pop": .string(privacyID), "level": .string(sheetID)]])
        let events = try client.call("GET", "\(base)/events?after=4")
        #expect(events.json["events"]?.arrayValue?.first?["type"] == "popped")
        #expect(events.json["events"]?.arrayValue?.first?["result"] == ["saved": true])
        #expect(events.json["changes"]?.arrayValue?.first?["paths"] == [sheetID: []])
        #expect(events.json["changes"]?.arrayValue?.first?["path"] == [.string(rootEntry)])

        let dismissed = try client.call("POST", "\(base)/dismiss", json: [:])
        #expect(dismissed.status == 200)
        #expect(try client.call("GET", "\(base)/path/\(rootEntry)").status == 200, "the root's path stays")
    }

    @Test("each refusal is its problem, and changes nothing")
    func refusals() throws {
        let server = try endpointServer(arguments: ["--catalog", seedsCatalogPath, "--max-path-depth", "2"])
        let client = server.client()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        _ = try client.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        _ = try client.call("POST", "\(base)/path", json: ["destination": "privacy"])
        _ = try client.call("POST", "\(base)/path", json: ["destination": "profile", "payload": ["userId": 3]])
        let alert = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "deleteConfirm", "style": "alert", "title": "Sure?"])
        let alertID = try #require(alert.json["presentation"]?["id"]?.stringValue)
        let before = try client.call("GET", base)

        let cases: [(String, String, JSONValue?, Int, String)] = [
            ("POST", "\(base)/path", ["destination": "privacy", "payload": ["x": 1]], 409, "already-pushed"),
            ("POST", "\(base)/path", ["destination": "downloadItem", "payload": ["itemId": 1]], 409, "path-full"),
            ("POST", "\(base)/path", ["destination": "privacy", "level": .string(alertID)], 404, "level-not-found"),
            ("POST", "\(base)/path", ["destination": "settings", "level": "root"], 422, "validation-failed"),
            ("POST", "\(base)/path", ["destination": "downloadItem", "level": "root"], 422, "validation-failed"),
            ("POST", "\(base)/path", ["destination": "privacy", "levle": "root"], 422, "validation-failed"),
            ("POST", "\(base)/path/pop", ["level": "root"], 409, "nothing-to-pop"),
            ("POST", "\(base)/path/pop", ["count": 3], 409, "nothing-to-pop"),
            ("POST", "\(base)/path/pop", ["to": "nope"], 404, "entry-not-found"),
            ("POST", "\(base)/path/pop", ["count": 1, "all": true], 422, "validation-failed"),
            ("GET", "\(base)/path/nope", nil, 404, "entry-not-found"),
            ("POST", "\(base)/links", ["url": "/nowhere"], 404, "no-route"),
            ("GET", "/v1/links/resolve?url=downloads", nil, 400, "invalid-parameter"),
            ("GET", "/v1/links/resolve?url=%2Fonboarding%2Fdownloads%2Fzero", nil, 400, "invalid-parameter"),
            ("POST", "\(base)/links", ["url": "downloads"], 422, "validation-failed"),
            ("POST", "\(base)/links", ["url": "/onboarding/downloads/zero"], 422, "validation-failed"),
            ("PUT", "\(base)/navigation", ["stack": []], 422, "validation-failed"),
            (
                "PUT", "\(base)/navigation",
                ["path": [], "stack": [["destination": "settings", "path": [["destination": "help"]]]]], 422,
                "validation-failed"
            ),
            (
                "PUT", "\(base)/navigation",
                [
                    "path": [
                        ["destination": "privacy"], ["destination": "profile", "payload": ["userId": 1]],
                        ["destination": "downloadItem", "payload": ["itemId": 1]],
                    ], "stack": [],
                ], 409, "path-full"
            ),
            ("POST", "/v1/sessions/\(uniqueSessionID())/path/pop", [:], 404, "session-not-found"),
        ]
        for (method, path, body, status, slug) in cases {
            let answer = try client.call(method, path, json: body)
            #expect(answer.status == status, "\(method) \(path) \(body?.jsonText ?? "")")
            #expect(answer.json["type"] == .string("/problems/\(slug)"), "\(method) \(path) \(body?.jsonText ?? "")")
            #expect(answer.headers["Content-Type"] == "application/problem+json")
        }
        let after = try client.call("GET", base)
        #expect(after.raw == before.raw, "refusals changed the session")
    }

    @Test("If-Match guards a pop, an Idempotency-Key replays a push")
    func preconditionsAndReplays() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        let key: HTTPHeaders = ["Idempotency-Key": "push-1"]
        let first = try client.call("POST", "\(base)/path", json: ["destination": "a"], headers: key)
        let retry = try client.call("POST", "\(base)/path", json: ["destination": "a"], headers: key)
        #expect(first.status == 201)
        #expect(retry.status == 201)
        #expect(retry.raw == first.raw)
        #expect(retry.headers["Idempotent-Replayed"] == "true")
        _ = try client.call("POST", "\(base)/path", json: ["destination": "b"])

        let stale = try client.call("POST", "\(base)/path/pop", json: [:], headers: ["If-Match": "\"1\""])
        #expect(stale.status == 412)
        #expect(stale.json["currentVersion"] == 2)
        let fresh = try client.call("POST", "\(base)/path/pop", json: [:], headers: ["If-Match": "\"2\""])
        #expect(fresh.status == 200)
        #expect(fresh.headers["ETag"] == "\"3\"")
    }

    @Test("every logged change, applied to the version before with ModalStackCore, gives the session served (seeded)")
    func changeRecordsAreComplete() throws {
        let server = try ServerProcess(arguments: [
            "--catalog", seedsCatalogPath, "--max-depth", "4", "--queue-size", "2",
        ])
        let client = server.client()
        let seed =
            UInt64(ProcessInfo.processInfo.environment["MODALSTACK_SEED"] ?? "") ?? UInt64.random(in: 1...999_999)
        var random = SeededGenerator(seed: seed)
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        var served: [Int: JSONValue] = [:]
        for _ in 0..<150 {
            let (method, path, body) = randomRequest(base, &random)
            let answer = try client.call(method, path, json: body)
            if let session = answer.json["session"], let version = session["version"]?.intValue {
                served[version] = session
            }
        }
        let final = try client.call("GET", base).json
        let changes = try client.loggedChanges(of: id)
        #expect(changes.count == final["version"]?.intValue, "seed \(seed)")
        var session = Session.unwritten(id: id, at: Timestamp(millisecondsSinceEpoch: 0))
        for change in changes {
            session = try session.applying(change)
            if let answered = served[Int(change.version)] {
                #expect(session.json == answered, "seed \(seed): version \(change.version) folds to another session")
            }
        }
        #expect(session.json == final, "seed \(seed)")
        #expect(served.count > 60, "seed \(seed): only \(served.count) changes were made")
    }

    private func randomRequest(_ base: String, _ random: inout SeededGenerator) -> (String, String, JSONValue?) {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        let entry: JSONValue = pick([
            ["destination": "privacy"],
            ["destination": "profile", "payload": ["userId": JSONValue(Int(random.next() % 3) + 1)]],
            ["destination": "downloadItem", "payload": ["itemId": JSONValue(Int(random.next() % 3) + 1)]],
        ])
        switch random.next() % 10 {
        case 0:
            return ("POST", "\(base)/presentations", ["destination": pick(["settings", "downloads", "onboarding"])])
        case 1:
            return (
                "POST", "\(base)/presentations", ["destination": "deleteConfirm", "style": "alert", "title": "Sure?"]
            )
        case 2: return ("POST", "\(base)/dismiss", pick([[:], ["all": true], ["result": ["buttonId": "ok"]]]))
        case 3, 4: return ("POST", "\(base)/path", entry)
        case 5: return ("POST", "\(base)/path/pop", pick([[:], ["all": true], ["level": "root"], ["result": "done"]]))
        case 6:
            return (
                "POST", "\(base)/links",
                ["url": pick(["/onboarding/downloads/4", "/settings/privacy", "/users/2", "/home", "/settings/help"])]
            )
        case 7:
            return (
                "PUT", "\(base)/navigation",
                [
                    "path": pick([[], [entry]]),
                    "stack": pick([
                        [], [["destination": "settings", "path": [entry]]],
                        [["destination": "settings"], ["destination": "downloads"]],
                    ]),
                ]
            )
        case 8:
            return (
                "PUT", "\(base)/stack",
                [
                    "stack": pick([
                        [["destination": "settings"]],
                        [
                            ["destination": "settings", "payload": [:]],
                            ["destination": "help", "payload": ["text": "t"]],
                        ],
                    ])
                ]
            )
        default: return ("PUT", base, nil)
        }
    }

    @Test(
        "kill -9 during pushes loses no acknowledged push",
        .enabled(if: ServerProcess.isLocal, "kills its own server"))
    func killDuringPushes() throws {
        let server = try ServerProcess()
        let run = uniqueSessionID("kill")
        let acknowledged = LockedValue<[(session: String, entry: String)]>([])
        let stop = LockedValue(false)
        let writers = (0..<4).map { writer in
            Thread {
                let client = server.client()
                var index = 0
                while !stop.withLock({ $0 }) {
                    index += 1
                    let session = "\(run)-\(writer)-\(index / 8)"
                    guard
                        let answer = try? client.call(
                            "POST", "/v1/sessions/\(session)/path", json: ["destination": .string("e\(index % 8)")]),
                        answer.status == 201, let entry = answer.json["entry"]?["id"]?.stringValue
                    else { continue }
                    acknowledged.withLock { $0.append((session, entry)) }
                }
            }
        }
        for writer in writers { writer.start() }
        defer { stop.withLock { $0 = true } }
        #expect(
            waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(5)) {
                acknowledged.withLock { $0.count } >= 300
            })
        server.send(SIGKILL)
        _ = server.waitForExit()
        stop.withLock { $0 = true }
        try server.restart()
        let restarted = server.client()
        let pushes = acknowledged.withLock { $0 }
        var missing: [String] = []
        for (session, entry) in pushes {
            let answer = try restarted.call("GET", "/v1/sessions/\(session)/path/\(entry)")
            if answer.status != 200 { missing.append("\(session)/\(entry): \(answer.status)") }
        }
        #expect(missing.isEmpty, "\(missing.count) of \(pushes.count) acknowledged pushes lost: \(missing.prefix(5))")
    }
}

extension Session {
    /// The session's JSON as served.
    fileprivate var json: JSONValue { (try? JSONParser.parse(serialized())) ?? .null }
}
