import Foundation
import ModalStackClient
import ModalStackTestSupport
import Testing

// Paths, navigations and links (issue 28) through ModalStack, against the built server
// started with the catalog below.

private let maxPathDepth = 3

/// Destinations that may be pushed or presented, and a route of each kind.
private let catalog = """
    {
      "destinations": {
        "settings": {"styles": ["sheet", "fullScreenCover"]},
        "privacy": {"styles": ["push"]},
        "profile": {
          "styles": ["sheet", "push"],
          "payload": {"type": "object", "properties": {"userId": {"type": "integer", "minimum": 1}},
                      "required": ["userId"], "additionalProperties": false}
        },
        "onboarding": {"styles": ["sheet"]},
        "downloads": {"styles": ["sheet"]},
        "downloadItem": {
          "styles": ["push"],
          "payload": {"type": "object", "properties": {"itemId": {"type": "integer", "minimum": 1}},
                      "required": ["itemId"]}
        },
        "help": {
          "styles": ["sheet"],
          "payload": {"type": "object", "properties": {"text": {"type": "string"}}}
        },
        "deleteConfirm": {"styles": ["alert"]}
      },
      "routes": [
        {"name": "download-item", "url": "/onboarding/downloads/{itemId}",
         "navigate": {"stack": [{"destination": "onboarding"}, {"destination": "downloads",
                                 "path": [{"destination": "downloadItem", "payload": {"itemId": "{itemId}"}}]}]}},
        {"url": "/users/{userId}", "push": {"destination": "profile", "payload": {"userId": "{userId}"}}},
        {"url": "/help?topic={topic}", "present": {"destination": "help", "payload": {"text": "{topic}"}},
         "clear": true},
        {"url": "/settings/privacy", "replacePath": [{"destination": "privacy"}]},
        {"name": "home", "url": "/home", "navigate": {}}
      ]
    }
    """

/// The catalog, written once to a file of its own for the server to read.
private let catalogPath: String = {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("navigation-catalog-\(UUID().uuidString).json").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(catalog.utf8))
    return path
}()

private func makeClient() throws -> ModalStack {
    let server = try #require(TestServer.current)
    return ModalStack(
        baseURL: URL(string: "http://\(server.host):\(server.port)")!,
        configuration: .init(retryDelay: .milliseconds(10), requestTimeout: 10))
}

private struct Unexpected: Error, CustomStringConvertible {
    var description: String
}

extension PushOutcome {
    /// The answer of a push that must have made a new entry.
    fileprivate func pushedEntry() throws -> PathEntry {
        guard case .pushed(let answer) = self else { throw Unexpected(description: "not pushed: \(self)") }
        return answer.entry
    }
}

extension ModalStack {
    /// Pushes `destinations` in order onto `level` and returns the entries.
    fileprivate func push(
        _ destinations: [String], onto level: NavigationLevel? = nil, in sessionID: String
    ) async throws -> [PathEntry] {
        var entries: [PathEntry] = []
        for destination in destinations {
            entries.append(
                try await push(
                    PushRequest(destination: destination, key: "\(destination)-\(entries.count)", level: level),
                    in: sessionID
                )
                .pushedEntry())
        }
        return entries
    }

    /// Presents a sheet of `destination` and returns it.
    fileprivate func sheet(_ destination: String, in sessionID: String) async throws -> Presentation {
        try await present(PresentRequest(destination: destination), in: sessionID).presentation
    }
}

@Suite(
    "Paths, navigations and links against the real server",
    .enabled(if: ServerProcess.isLocal, "starts a server with its catalog"),
    .server(["--catalog", catalogPath, "--max-path-depth", String(maxPathDepth), "--log-level", "off"]))
struct NavigationClientTests {
    @Test(
        "push creates the session, goes onto the root, then onto the top-most container; the same key updates in place")
    func push() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("push")
        let first = try await client.push(PushRequest(destination: "privacy"), in: id)
        let privacy = try first.pushedEntry()
        #expect(first.session.version == 1 && first.level == .root)
        #expect(privacy.destination == "privacy" && privacy.key == "privacy" && privacy.payload.isEmpty)
        #expect(first.session.path == [privacy])
        #expect(first.transition == [.push(privacy.id, level: .root)])

        let settings = try await client.sheet("settings", in: id)
        let inSheet = try await client.push(PushRequest(destination: "profile", payload: ["userId": 7]), in: id)
        let profile = try inSheet.pushedEntry()
        #expect(inSheet.level == .presentation(settings.id), "the default level is the top-most container")
        #expect(inSheet.session.stack.map(\.path) == [[profile]] && inSheet.session.path == [privacy])
        #expect(profile.payload == ["userId": 7])

        // The key of the level's last entry, with the same destination: the same entry, a new payload.
        let again = try await client.push(PushRequest(destination: "profile", payload: ["userId": 8]), in: id)
        guard case .updated(let updated) = again else { throw Unexpected(description: "not updated: \(again)") }
        #expect(updated.entry.id == profile.id && updated.entry.payload == ["userId": 8])
        #expect(updated.session.version == 4 && updated.session.stack[0].path == [updated.entry])

        let onRoot = try await client.push(
            PushRequest(destination: "profile", payload: ["userId": 9], level: .root), in: id)
        #expect(onRoot.level == .root && onRoot.session.path.map(\.destination) == ["privacy", "profile"])

        let place = try await client.pathEntry(profile.id, in: id)
        #expect(place.level == .presentation(settings.id) && place.position == 0 && place.entry == updated.entry)
        #expect(try await client.pathEntry(onRoot.entry.id, in: id).position == 1)
        #expect(try await client.session(id) == onRoot.session)
    }

    @Test("a push beneath an alert goes into the container under it, not the queue")
    func pushBeneathAlert() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("beneath")
        let settings = try await client.sheet("settings", in: id)
        let alert = try await client.present(
            PresentRequest(destination: "deleteConfirm", style: .alert(title: "Delete?")), in: id
        ).presentation
        let answer = try await client.push(PushRequest(destination: "privacy"), in: id)
        #expect(answer.level == .presentation(settings.id))
        #expect(answer.session.top?.id == alert.id && answer.session.queue.isEmpty)
        #expect(answer.session.stack[0].path == [answer.entry])
    }

    @Test("pop takes the last entries, top-most first, and hands the result back in the popped event")
    func popWithResult() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("pop")
        let settings = try await client.sheet("settings", in: id)
        let entries = try await client.push(["privacy", "privacy", "privacy"], in: id)  // versions 2 to 4
        let answer = try await client.pop(PopRequest(.count(2), result: ["saved": true]), in: id)  // version 5
        #expect(answer.popped.map(\.id) == [entries[2].id, entries[1].id])
        #expect(answer.level == .presentation(settings.id))
        #expect(
            answer.transition == [
                .pop(entries[2].id, level: .presentation(settings.id)),
                .pop(entries[1].id, level: .presentation(settings.id)),
            ])
        #expect(answer.session.stack[0].path == [entries[0]] && answer.session.version == 5)

        let page = try await client.events(in: id, after: 4)
        let popped = page.events.map(\.event)
        #expect(
            popped == [
                .popped(entries[2], level: .presentation(settings.id), result: ["saved": true]),
                .popped(entries[1], level: .presentation(settings.id), result: nil),
            ])
        #expect(page.changes.map(\.version) == [5] && page.changes[0].paths == [settings.id: [entries[0].id]])

        // Down to an entry, and all: on the root, named.
        let root = try await client.push(["privacy", "privacy", "privacy"], onto: .root, in: id)
        let to = try await client.pop(PopRequest(.to(root[0].id), level: .root), in: id)
        #expect(to.popped.map(\.id) == [root[2].id, root[1].id] && to.session.path == [root[0]])
        let all = try await client.pop(PopRequest(.all, level: .root), in: id)
        #expect(all.popped == [root[0]] && all.session.path.isEmpty)
        // The sheet keeps its entry: a pop never crosses levels.
        #expect(all.session.stack[0].path == [entries[0]])
    }

    @Test("refusals of paths are typed errors with their members, and change nothing")
    func refusals() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("refusals")
        let entries = try await client.push(["privacy", "privacy"], onto: .root, in: id)  // keys privacy-0, privacy-1
        let alert = try await client.present(
            PresentRequest(destination: "deleteConfirm", style: .alert(title: "Delete?")), in: id
        ).presentation
        let version = try await client.session(id).version

        // With the catalog, only destinations that allow push go onto a path, with valid payloads.
        let notPushable = try await refusal { try await client.push(PushRequest(destination: "settings"), in: id) }
        guard case .validationFailed(let fields, _) = notPushable else {
            throw Unexpected(description: "\(notPushable)")
        }
        #expect(fields.map(\.pointer) == ["/destination"])
        let badPayload = try await refusal {
            try await client.push(PushRequest(destination: "profile", payload: ["userId": 0]), in: id)
        }
        guard case .validationFailed(let payloadFields, _) = badPayload else {
            throw Unexpected(description: "\(badPayload)")
        }
        #expect(payloadFields.map(\.pointer) == ["/payload/userId"])

        let taken = try await refusal {
            try await client.push(PushRequest(destination: "privacy", key: "privacy-0", level: .root), in: id)
        }
        guard case .alreadyPushed(let entryID, let level, let position, let problem) = taken else {
            throw Unexpected(description: "\(taken)")
        }
        #expect(entryID == entries[0].id && level == .root && position == 0 && problem.status == 409)

        _ = try await client.push(PushRequest(destination: "privacy", key: "third", level: .root), in: id)
        let full = try await refusal {
            try await client.push(PushRequest(destination: "privacy", key: "fourth", level: .root), in: id)
        }
        guard case .pathFull(let depth, _) = full else { throw Unexpected(description: "\(full)") }
        #expect(depth == maxPathDepth)
        let afterFull = version + 1

        let noLevel = try await refusal {
            try await client.pop(PopRequest(level: .presentation(alert.id)), in: id)
        }
        guard case .levelNotFound(let missing, let levelProblem) = noLevel else {
            throw Unexpected(description: "\(noLevel)")
        }
        #expect(missing == .presentation(alert.id) && levelProblem.status == 404)
        let unknownLevel = try await refusal {
            try await client.push(PushRequest(destination: "privacy", level: .presentation("unknown")), in: id)
        }
        guard case .levelNotFound = unknownLevel else { throw Unexpected(description: "\(unknownLevel)") }

        let noEntry = try await refusal { try await client.pop(PopRequest(.to("unknown"), level: .root), in: id) }
        guard case .entryNotFound(let unknown, _) = noEntry else { throw Unexpected(description: "\(noEntry)") }
        #expect(unknown == "unknown")
        let lastEntry = try await client.session(id).path.last!
        let nothing = try await refusal { try await client.pop(PopRequest(.to(lastEntry.id), level: .root), in: id) }
        guard case .nothingToPop(let emptyLevel, let nothingProblem) = nothing else {
            throw Unexpected(description: "\(nothing)")
        }
        #expect(emptyLevel == .root && nothingProblem.status == 409)
        let tooMany = try await refusal { try await client.pop(PopRequest(.count(4), level: .root), in: id) }
        guard case .nothingToPop = tooMany else { throw Unexpected(description: "\(tooMany)") }

        #expect(try await client.session(id).version == afterFull)
        let gone = try await refusal { try await client.pathEntry("unknown", in: id) }
        guard case .entryNotFound = gone else { throw Unexpected(description: "\(gone)") }
        let emptySession = uniqueSessionID("empty")
        _ = try await client.createSession(emptySession)
        let empty = try await refusal { try await client.pop(in: emptySession) }
        guard case .nothingToPop = empty else { throw Unexpected(description: "\(empty)") }
    }

    @Test("navigate goes anywhere in one change, keeping what matches, with the plan from here to there")
    func navigate() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("navigate")
        let settings = try await client.sheet("settings", in: id)
        let privacy = try await client.push(PushRequest(destination: "privacy"), in: id).pushedEntry()  // version 2

        let target = NavigationRequest(
            path: [PathEntryRequest(destination: "profile", payload: ["userId": 1])],
            stack: [
                .init(
                    PresentRequest(destination: "settings"),
                    path: [PathEntryRequest(destination: "privacy", payload: ["tab": 2])]),
                .init(
                    PresentRequest(destination: "downloads"),
                    path: [PathEntryRequest(destination: "downloadItem", payload: ["itemId": 42])]),
            ])
        let there = try await client.navigate(to: target, in: id)
        let session = there.session
        #expect(session.version == 3)
        try #require(session.stack.map(\.destination) == ["settings", "downloads"] && session.path.count == 1)
        #expect(session.stack[0].id == settings.id, "the same key, destination and style: the same modal")
        #expect(session.stack[0].path.map(\.id) == [privacy.id], "and the same entry, with the request's payload")
        #expect(session.stack[0].path[0].payload == ["tab": 2])
        let (profile, downloads) = (session.path[0], session.stack[1])
        let item = try #require(downloads.path.first)
        #expect(item.payload == ["itemId": 42])
        #expect(there.dismissed.isEmpty && there.promoted.isEmpty)
        #expect(
            there.transition == [
                .push(profile.id, level: .root), .present(downloads.id),
                .push(item.id, level: .presentation(downloads.id)),
            ])
        let events = try await client.events(in: id, after: 2).events.map(\.event)
        #expect(events.last == .navigated(url: nil, route: nil))
        #expect(events.contains(.entryUpdated(session.stack[0].path[0], level: .presentation(settings.id))))

        // The same target again changes nothing.
        #expect(try await client.navigate(to: target, in: id).session.version == 3)

        // Back to nothing: the modals go top-down with their paths, then the root's entries.
        let home = try await client.navigate(to: NavigationRequest(), in: id)
        #expect(home.dismissed.map(\.id) == [downloads.id, settings.id])
        #expect(home.dismissed.map(\.path) == [[item], session.stack[0].path], "a dismissed container keeps its path")
        #expect(
            home.transition == [.dismiss(downloads.id), .dismiss(settings.id), .pop(profile.id, level: .root)])
        #expect(home.session.stack.isEmpty && home.session.path.isEmpty && home.session.version == 4)
        #expect(try await client.transition(in: id, from: 2).transition == [.dismiss(settings.id)])

        let badPath = try await refusal {
            try await client.navigate(
                to: NavigationRequest(stack: [
                    .init(
                        PresentRequest(destination: "deleteConfirm", style: .alert(title: "Sure?")),
                        path: [PathEntryRequest(destination: "privacy")])
                ]), in: id)
        }
        guard case .validationFailed(let fields, _) = badPath else { throw Unexpected(description: "\(badPath)") }
        #expect(fields.map(\.pointer) == ["/stack/0/path"])
    }

    @Test("open(url:) applies the route that matches; resolve(url:) says what it would do; no route changes nothing")
    func links() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("links")

        // A whole navigation, from a custom scheme whose host is the path's first segment.
        let opened = try await client.open(url: URL(string: "myapp://onboarding/downloads/42")!, in: id)
        #expect(opened.route == LinkRoute(name: "download-item", url: "/onboarding/downloads/{itemId}"))
        #expect(opened.action == .navigate)
        try #require(opened.session.stack.map(\.destination) == ["onboarding", "downloads"])
        let downloads = opened.session.stack[1]
        #expect(downloads.path.map(\.destination) == ["downloadItem"])
        #expect(downloads.path.first?.payload == ["itemId": 42], "a capture typed by the payload's schema")
        let events = try await client.events(in: id).events.map(\.event)
        #expect(
            events.last == .navigated(url: "myapp://onboarding/downloads/42", route: "/onboarding/downloads/{itemId}"))

        // A push onto the top level, from any host.
        let pushed = try await client.open(url: URL(string: "https://example.com/users/7")!, in: id)
        #expect(pushed.action == .push && pushed.route.name == nil)
        #expect(pushed.session.stack[1].path.map(\.destination) == ["downloadItem", "profile"])
        #expect(pushed.session.stack[1].path.last?.payload == ["userId": 7])

        // Cleared, then presented, with a query capture.
        let presented = try await client.open(url: URL(string: "myapp://help?topic=billing")!, in: id)
        #expect(presented.action == .present)
        #expect(presented.dismissed.map(\.destination) == ["downloads", "onboarding"])
        #expect(presented.session.stack.map(\.destination) == ["help"])
        #expect(presented.session.stack[0].payload == ["text": "billing"])

        // The top level's path replaced.
        let replaced = try await client.open(url: URL(string: "myapp://settings/privacy")!, in: id)
        #expect(replaced.action == .replacePath)
        #expect(replaced.session.stack[0].path.map(\.destination) == ["privacy"])

        let version = replaced.session.version
        let none = try await refusal { try await client.open(url: URL(string: "myapp://nowhere/at/all")!, in: id) }
        guard case .noRoute(let url, let problem) = none else { throw Unexpected(description: "\(none)") }
        #expect(url == "myapp://nowhere/at/all" && problem.status == 404)
        #expect(try await client.session(id).version == version)

        // What each would do, without a session.
        let resolved = try await client.resolve(url: URL(string: "myapp://onboarding/downloads/42")!)
        #expect(resolved.action == .navigate && !resolved.clear)
        #expect(
            resolved.request
                == .navigate(
                    NavigationRequest(stack: [
                        .init(PresentRequest(destination: "onboarding")),
                        .init(
                            PresentRequest(destination: "downloads"),
                            path: [PathEntryRequest(destination: "downloadItem", payload: ["itemId": 42])]),
                    ])))
        #expect(
            try await client.resolve(url: URL(string: "myapp://users/7")!).request
                == .push(PushRequest(destination: "profile", payload: ["userId": 7])))
        let help = try await client.resolve(url: URL(string: "myapp://help?topic=billing")!)
        #expect(help.clear && help.action == .present)
        #expect(
            try await client.resolve(url: URL(string: "myapp://settings/privacy/")!).request
                == .replacePath([PathEntryRequest(destination: "privacy")]))
        let unresolved = try await refusal { try await client.resolve(url: URL(string: "myapp://nowhere")!) }
        guard case .noRoute = unresolved else { throw Unexpected(description: "\(unresolved)") }
    }

    @Test("destinations() says which destinations may be pushed")
    func catalogPush() async throws {
        guard case .catalog(let list) = try await makeClient().destinations() else {
            throw Unexpected(description: "no catalog")
        }
        #expect(list.filter(\.allowsPush).map(\.name) == ["downloadItem", "privacy", "profile"])
        #expect(list.first { $0.name == "profile" }?.styles == [.sheet])
        #expect(list.first { $0.name == "privacy" }?.styles == [])
    }
}
