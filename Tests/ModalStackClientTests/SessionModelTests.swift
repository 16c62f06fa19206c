import Foundation
import ModalStackClient
import ModalStackTestSupport
import Testing

/// A real server and a client of it, for a model test.
private struct Harness {
    let server: ServerProcess
    let client: ModalStack

    init(arguments: [String] = []) throws {
        server = try ServerProcess(arguments: arguments)
        client = ModalStack(baseURL: URL(string: "http://\(server.host):\(server.port)")!)
    }
}

@Suite("ModalStackSession, against the real server")
@MainActor
struct SessionModelTests {
    @Test("levels, the alert and the queue are derived from a stack of sheets, a cover and an alert on top")
    func levelByLevelDerivation() async throws {
        let harness = try Harness()
        let client = harness.client
        let settings = try await client.present(sheetRequest("settings"), in: "levels").presentation
        let player = try await client.present(
            PresentRequest(destination: "player", style: .fullScreenCover), in: "levels"
        )
        .presentation
        let alert = try await client.present(confirmDeleteAlert, in: "levels").presentation
        let waiting = try await client.present(sheetRequest("later"), in: "levels").presentation

        let model = ModalStackSession(sessionID: "levels", client: client)
        try await model.refresh()

        #expect(model.levels.map(\.id) == [settings.id, player.id])
        #expect(model.alert?.id == alert.id)
        #expect(model.queue.map(\.id) == [waiting.id])
        #expect(model.presentation(atLevel: 0, as: .sheet)?.id == settings.id)
        #expect(model.presentation(atLevel: 0, as: .fullScreenCover) == nil)
        #expect(model.presentation(atLevel: 1, as: .fullScreenCover)?.id == player.id)
        #expect(model.presentation(atLevel: 1, as: .sheet) == nil)
        #expect(model.presentation(atLevel: 2, as: .sheet) == nil)
    }

    @Test("a present shows at once, then as the server made it")
    func optimisticPresentReconciled() async throws {
        let harness = try Harness()
        let model = ModalStackSession(sessionID: "present", client: harness.client)
        _ = try await harness.client.createSession("present")
        try await model.refresh()

        let sent = model.present(sheetRequest("help"))
        let predicted = try #require(model.levels.last)
        #expect(model.levels.count == 1)
        #expect(predicted.destination == "help" && predicted.id.hasPrefix("pending-"))
        #expect(model.state?.version == 1)

        _ = try await sent.value
        let served = try await harness.client.session("present")
        #expect(model.state == served)
        #expect(model.levels.map(\.id) == served.stack.map(\.id) && !served.stack[0].id.hasPrefix("pending-"))
        #expect(model.lastError == nil)
    }

    @Test("a present over an alert is shown in the queue until the server answers")
    func presentOverAlertPredictedQueued() async throws {
        let harness = try Harness()
        _ = try await harness.client.present(confirmDeleteAlert, in: "queued")
        let model = ModalStackSession(sessionID: "queued", client: harness.client)
        try await model.refresh()

        let sent = model.present(sheetRequest("next"))
        #expect(model.queue.map(\.destination) == ["next"] && model.levels.isEmpty)
        _ = try await sent.value
        #expect(model.queue.map(\.destination) == ["next"])
        #expect(model.state?.version == 2 && model.queue.first?.id.hasPrefix("pending-") == false)
    }

    @Test("a swipe-down on a locked sheet is shown at once, then taken back with the server's refusal")
    func refusedDismissRolledBack() async throws {
        let harness = try Harness()
        let locked = try await harness.client.present(sheetRequest("checkout", locked: true), in: "locked").presentation
        let model = ModalStackSession(sessionID: "locked", client: harness.client)
        try await model.refresh()

        let sent = model.userDismissed(level: 0)
        #expect(model.levels.isEmpty)
        let refused = await #expect(throws: ModalStackError.self) { try await sent.value }

        #expect(model.levels.map(\.id) == [locked.id])
        guard case .locked(let presentationID, _) = model.lastError as? ModalStackError,
            refused == model.lastError as? ModalStackError
        else {
            Issue.record("lastError is \(String(describing: model.lastError)), not locked")
            return
        }
        #expect(presentationID == locked.id)
        #expect(try await harness.client.session("locked").version == 1)
    }

    @Test("a swipe-down at level 0 removes that level and everything above it")
    func swipeDownRemovesLevelsAbove() async throws {
        let harness = try Harness()
        let client = harness.client
        _ = try await client.present(sheetRequest("a"), in: "swipe")
        _ = try await client.present(sheetRequest("b"), in: "swipe")
        _ = try await client.present(PresentRequest(destination: "c", style: .popover), in: "swipe")
        let model = ModalStackSession(sessionID: "swipe", client: client)
        try await model.refresh()

        let sent = model.userDismissed(level: 1)
        #expect(model.levels.map(\.destination) == ["a"])
        _ = try await sent.value
        #expect(model.levels.map(\.destination) == ["a"])
        #expect(try await client.session("swipe").stack.map(\.destination) == ["a"])
        await #expect(throws: ModalStackSession.IntentError.notShown) { try await model.userDismissed(level: 5).value }
        #expect(model.state?.version == 4 && model.lastError == nil)
    }

    @Test("answering an alert records the button as its result and promotes the queued entry")
    func answerPromotesQueued() async throws {
        let harness = try Harness()
        let client = harness.client
        let alert = try await client.present(confirmDeleteAlert, in: "answer").presentation
        let waiting = try await client.present(sheetRequest("after"), in: "answer").presentation
        let model = ModalStackSession(sessionID: "answer", client: client)
        try await model.refresh()

        await #expect(throws: ModalStackSession.IntentError.noSuchButton("no-such-button")) {
            try await model.answer(buttonID: "no-such-button").value
        }
        #expect(model.alert?.id == alert.id && model.lastError == nil)

        let sent = model.answer(buttonID: "delete")
        #expect(model.alert == nil)
        _ = try await sent.value

        #expect(model.levels.map(\.id) == [waiting.id] && model.queue.isEmpty)
        let answered = try await client.presentation(alert.id, in: "answer")
        #expect(answered.state == .dismissed && answered.answeredButtonID == "delete")
    }

    @Test("following the session shows another client's changes, its deletion, and the session made again")
    func followShowsOtherClientsChanges() async throws {
        let harness = try Harness(arguments: ["--sse-heartbeat", "1"])
        let client = harness.client
        let alert = try await client.present(confirmDeleteAlert, in: "follow").presentation
        let model = ModalStackSession(sessionID: "follow", client: client)
        let following = Task { await model.follow() }
        #expect(try await eventually { model.alert?.id == alert.id })

        let queued = try await client.present(sheetRequest("paywall"), in: "follow").presentation
        #expect(try await eventually { model.queue.map(\.id) == [queued.id] })
        _ = try await client.dismiss(DismissRequest(result: .object(["buttonId": .string("keep")])), in: "follow")
        #expect(
            try await eventually { model.levels.map(\.id) == [queued.id] && model.alert == nil && model.queue.isEmpty })

        try await client.deleteSession("follow")
        #expect(try await eventually { model.state == nil })
        let again = try await client.present(sheetRequest("fresh"), in: "follow").session
        #expect(try await eventually { model.state == again } && again.version == 1)
        #expect(model.followError == nil && model.lastError == nil)
        following.cancel()
        await following.value
        #expect(model.connection == nil && model.followError == nil)
    }
}

@Suite("ModalStackSession's paths, against the real server")
@MainActor
struct SessionModelPathTests {
    @Test("a push shows at once in the top-most container, then as the server made it; so does a pop")
    func pushAndPopReconciled() async throws {
        let harness = try Harness()
        let settings = try await harness.client.present(sheetRequest("settings"), in: "paths").presentation
        let model = ModalStackSession(sessionID: "paths", client: harness.client)
        try await model.refresh()
        let level = NavigationLevel.presentation(settings.id)

        let pushed = model.push(PushRequest(destination: "privacy", payload: ["tab": 1]))
        let predicted = try #require(model.path(at: level).first)
        #expect(
            predicted.id.hasPrefix("pending-") && predicted.destination == "privacy" && predicted.payload == ["tab": 1])
        #expect(model.levels[0].path == [predicted] && model.rootPath.isEmpty)
        _ = try await pushed.value
        let served = try await harness.client.session("paths")
        #expect(model.state == served && served.stack[0].path.map(\.destination) == ["privacy"])
        #expect(!model.path(at: level)[0].id.hasPrefix("pending-"))

        let onRoot = model.push(PushRequest(destination: "profile", level: .root))
        #expect(model.rootPath.map(\.destination) == ["profile"])
        _ = try await onRoot.value
        let popped = model.pop()
        #expect(model.path(at: level).isEmpty && model.rootPath.count == 1, "the default level is the sheet")
        _ = try await popped.value
        #expect(model.state == (try await harness.client.session("paths")) && model.lastError == nil)
        #expect(model.state?.version == 4)
    }

    @Test("a back swipe is shown at once, then sent as a pop to the entry the user went back to")
    func backSwipeReconciled() async throws {
        let harness = try Harness()
        let client = harness.client
        var entries: [PathEntry] = []
        for name in ["a", "b", "c", "d"] {
            entries.append(try await client.push(PushRequest(destination: name, level: .root), in: "swipe").entry)
        }
        let model = ModalStackSession(sessionID: "swipe", client: client)
        try await model.refresh()

        let swiped = model.userPopped(level: .root, count: 2)
        #expect(model.rootPath == Array(entries.prefix(2)))
        _ = try await swiped.value
        #expect(model.rootPath == Array(entries.prefix(2)) && model.state?.version == 5 && model.lastError == nil)
        let events = try await client.events(in: "swipe", after: 4).events.map(\.event)
        #expect(
            events == [.popped(entries[3], level: .root, result: nil), .popped(entries[2], level: .root, result: nil)])

        // What a NavigationStack writes back: a shorter path that begins the same is the user going back.
        let back = model.userSetPath([entries[0]], at: .root)
        #expect(model.rootPath == [entries[0]])
        _ = try await back.value
        // Anything else is not the user's to make: nothing is sent.
        let notTheUsers = [
            model.userSetPath([entries[1]], at: .root), model.userSetPath(entries, at: .root),
            model.userPopped(level: .root, count: 2), model.userPopped(level: .presentation("unknown")),
        ]
        for intent in notTheUsers {
            await #expect(throws: ModalStackSession.IntentError.notShown) { try await intent.value }
        }
        #expect(model.rootPath == [entries[0]] && model.state?.version == 6)
        let home = model.userPopped(level: .root)
        #expect(model.rootPath.isEmpty)
        _ = try await home.value
        #expect(try await client.session("swipe").path.isEmpty && model.state?.version == 7)
    }

    @Test("a back swipe the server refuses is shown at once, then taken back with the refusal")
    func refusedPopRolledBack() async throws {
        let harness = try Harness()
        let client = harness.client
        let settings = try await client.present(sheetRequest("settings"), in: "refused").presentation
        let level = NavigationLevel.presentation(settings.id)
        let a = try await client.push(PushRequest(destination: "a"), in: "refused").entry
        let b = try await client.push(PushRequest(destination: "b"), in: "refused").entry
        let model = ModalStackSession(sessionID: "refused", client: client)
        try await model.refresh()
        // Another client replaces the path; this model, not following, still shows the old one.
        _ = try await client.pop(PopRequest(.all), in: "refused")
        _ = try await client.push(PushRequest(destination: "c"), in: "refused")

        let swiped = model.userPopped(level: level)
        #expect(model.path(at: level) == [a])
        await #expect(throws: ModalStackError.self) { try await swiped.value }
        #expect(model.path(at: level) == [a, b], "taken back")
        guard case .entryNotFound(let entryID, _) = model.lastError as? ModalStackError else {
            Issue.record("lastError is \(String(describing: model.lastError)), not entryNotFound")
            return
        }
        #expect(entryID == a.id)
        #expect(try await client.session("refused").version == 5)
    }

    @Test("following the session shows the paths other clients push, pop and navigate to")
    func followShowsPaths() async throws {
        let harness = try Harness(arguments: ["--sse-heartbeat", "1"])
        let client = harness.client
        let settings = try await client.present(sheetRequest("settings"), in: "live").presentation
        let model = ModalStackSession(sessionID: "live", client: client)
        let following = Task { await model.follow() }
        #expect(try await eventually { model.levels.map(\.id) == [settings.id] })

        let privacy = try await client.push(PushRequest(destination: "privacy"), in: "live").entry
        #expect(try await eventually { model.path(at: .presentation(settings.id)) == [privacy] })
        let root = try await client.push(PushRequest(destination: "home", level: .root), in: "live").entry
        #expect(try await eventually { model.rootPath == [root] })
        let navigated = try await client.navigate(
            to: NavigationRequest(
                path: [],
                stack: [
                    .init(sheetRequest("settings")), .init(sheetRequest("help"), path: [.init(destination: "faq")]),
                ]),
            in: "live")
        #expect(try await eventually { model.state?.version == navigated.session.version })
        #expect(model.state == navigated.session)
        #expect(model.rootPath.isEmpty && model.levels.map(\.path.count) == [0, 1])
        following.cancel()
        await following.value
    }
}

@Suite("The session listing, against the real server")
struct SessionListingTests {
    @Test("pages through every session newest first with the API key; a token may not list; a bad cursor is refused")
    func pagesAndRefuses() async throws {
        let server = try ServerProcess(arguments: ["--api-key", "listing-key", "--token-secret", "listing-secret"])
        let admin = ModalStack(
            baseURL: URL(string: "http://\(server.host):\(server.port)")!, credential: .apiKey("listing-key"))
        for index in 0..<7 { _ = try await admin.createSession("list-\(index)") }
        _ = try await admin.present(PresentRequest(destination: "help", style: .popover), in: "list-2")

        var listed: [SessionSummary] = []
        var page = try await admin.sessions(limit: 3)
        listed += page.sessions
        while let next = page.nextPage {
            page = try await admin.sessions(at: next)
            listed += page.sessions
        }
        #expect(listed.map(\.id) == ["list-2", "list-6", "list-5", "list-4", "list-3", "list-1", "list-0"])
        #expect(listed[0].version == 2 && listed[0].depth == 1 && listed[0].queueLength == 0)
        #expect(listed[0].top?.destination == "help" && listed[0].top?.style == .popover && listed[1].top == nil)

        let token = try await admin.token(for: "list-0").token
        let app = ModalStack(baseURL: admin.baseURL, credential: .token(token))
        await #expect {
            _ = try await app.sessions()
        } throws: { error in
            if case .forbidden = error as? ModalStackError { true } else { false }
        }
        await #expect {
            _ = try await admin.sessions(at: PageCursor(next: "/v1/sessions?limit=3&cursor=not-a-cursor"))
        } throws: { error in
            if case .invalidParameter = error as? ModalStackError { true } else { false }
        }
    }
}
