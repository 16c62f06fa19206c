import Foundation
import ModalStackClient
import ModalStackTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Every operation of ModalStack against the built server, and every refusal it maps.
// One server serves the suites that share its flags, each test on sessions of its own.

private let apiKey = "client-operation-tests-key"
private let tokenSecret = "client-operation-tests-secret-0123456789abcdef"
private let maxDepth = 3
private let queueSize = 2
private let seedsCatalogPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../scripts/seeds-catalog.json").standardized.path

/// A client of the suite's server (or of `url`, a proxy in front of it), with short retry delays.
private func makeClient(
    _ credential: ModalStack.Credential = .apiKey(apiKey), sendsIfMatch: Bool = false, maxAttempts: Int = 3,
    at url: URL? = nil
) throws -> ModalStack {
    let server = try #require(TestServer.current)
    let configuration = ModalStack.Configuration(
        sendsIfMatch: sendsIfMatch, maxAttempts: maxAttempts, retryDelay: .milliseconds(10), requestTimeout: 10)
    return ModalStack(
        baseURL: url ?? URL(string: "http://\(server.host):\(server.port)")!, credential: credential,
        configuration: configuration)
}

private struct Unexpected: Error, CustomStringConvertible {
    var description: String
}

extension PresentOutcome {
    /// The answer of a present that must have gone on top.
    fileprivate func presentedOnTop() throws -> PresentResponse {
        guard case .presented(let answer) = self else { throw Unexpected(description: "not presented: \(self)") }
        return answer
    }

    /// The answer of a present that must have been queued.
    fileprivate func queued() throws -> QueuedResponse {
        guard case .queued(let answer) = self else { throw Unexpected(description: "not queued: \(self)") }
        return answer
    }
}

extension ModalStack {
    /// Presents `destination` on top (a sheet unless `style` says otherwise) and returns it.
    fileprivate func presentOnTop(
        _ destination: String, _ style: PresentRequest.Style = .sheet(), locked: Bool? = nil, in sessionID: String
    ) async throws -> Presentation {
        try await present(PresentRequest(destination: destination, style: style, locked: locked), in: sessionID)
            .presentedOnTop().presentation
    }

    /// Presents sheets of `destinations`, bottom first, and returns them.
    fileprivate func presentSheets(_ destinations: [String], in sessionID: String) async throws -> [Presentation] {
        var presented: [Presentation] = []
        for destination in destinations { presented.append(try await presentOnTop(destination, in: sessionID)) }
        return presented
    }
}

/// An alert with a destructive and a cancel button.
private let deleteAlert = PresentRequest.Style.alert(
    title: "Delete?", message: "It cannot be undone.",
    buttons: [
        AlertButtonRequest(id: "delete", label: "Delete", role: .destructive),
        AlertButtonRequest(id: "cancel", label: "Cancel", role: .cancel),
    ])

@Suite(
    "ModalStack against the real server", .enabled(if: ServerProcess.isLocal, "starts servers with flags"),
    .server([
        "--api-key", apiKey, "--token-secret", tokenSecret, "--max-depth", String(maxDepth), "--queue-size",
        String(queueSize), "--log-level", "off",
    ]))
struct ClientOperationTests {}

// MARK: - Sessions

extension ClientOperationTests {
    @Suite("Sessions")
    struct Sessions {
        @Test("createSession(_:ttl:) PUTs a session with its ttl, answers it when it exists, refuses another ttl")
        func createSessionWithID() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("put")
            let created = try await client.createSession(id, ttl: 3600)
            #expect(created.id == id)
            #expect(created.version == 1)
            #expect(created.ttl == 3600)
            #expect(created.stack.isEmpty && created.queue.isEmpty && created.top == nil)
            #expect(try await client.createSession(id, ttl: 3600) == created)
            #expect(try await client.createSession(id) == created)
            let error = try await refusal { try await client.createSession(id, ttl: 60) }
            guard case .sessionExists(let ttl, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(ttl == 3600)
        }

        @Test("createSession(ttl:) POSTs a session whose id the server makes, readable with session(_:)")
        func createSessionWithServerID() async throws {
            let client = try makeClient()
            let created = try await client.createSession(ttl: 120)
            #expect(!created.id.isEmpty)
            #expect(created.version == 1)
            #expect(created.ttl == 120)
            #expect(try await client.session(created.id) == created)
            let other = try await client.createSession()
            #expect(other.id != created.id)
        }

        @Test("deleteSession removes the session: reading it again is session-not-found")
        func deleteSession() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("delete")
            _ = try await client.presentOnTop("settings", in: id)
            try await client.deleteSession(id)
            let error = try await refusal { try await client.session(id) }
            guard case .sessionNotFound(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 404)
        }

        @Test("lastSeenVersion follows the versions of answers, and forgets a deleted session")
        func lastSeenVersion() async throws {
            let client = try makeClient(sendsIfMatch: true)
            let other = try makeClient()
            let id = uniqueSessionID("seen")
            #expect(client.lastSeenVersion(of: id) == nil)
            _ = try await client.createSession(id)
            #expect(client.lastSeenVersion(of: id) == 1)
            _ = try await client.presentOnTop("settings", in: id)
            #expect(client.lastSeenVersion(of: id) == 2)
            _ = try await other.presentOnTop("help", in: id)
            #expect(client.lastSeenVersion(of: id) == 2, "another client's change is not seen until read")
            _ = try await client.session(id)
            #expect(client.lastSeenVersion(of: id) == 3)
            try await client.deleteSession(id)
            #expect(client.lastSeenVersion(of: id) == nil)
        }

        @Test("destinations() is open on a server without a catalog")
        func openDestinations() async throws {
            #expect(try await makeClient().destinations() == .open)
        }
    }
}

// MARK: - Long polls

extension ClientOperationTests {
    // Serialized: the first test counts the server's held long polls, which must be its own.
    @Suite("Long polls", .serialized)
    struct LongPolls {
        @Test("waitForChange is held until another client changes the session, and answers the new state")
        func answeredByAChange() async throws {
            let client = try makeClient()
            let writer = try makeClient()
            let server = try #require(TestServer.current)
            let id = uniqueSessionID("poll")
            _ = try await client.createSession(id)
            let poll = Task { try await client.waitForChange(of: id, from: 1, seconds: 10) }
            let held = try await eventually {
                let metrics = try server.client().send(path: "/metrics").text
                return metrics.split(separator: "\n").contains("modalstack_long_polls_waiting 1")
            }
            #expect(held, "the long poll was not held")
            let sheet = try await writer.presentOnTop("settings", in: id)
            let changed = try #require(try await poll.value)
            #expect(changed.version == 2)
            #expect(changed.top?.id == sheet.id)
        }

        @Test("waitForChange answers nil when the wait ends with no change")
        func timesOut() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("poll")
            _ = try await client.createSession(id)
            let started = ContinuousClock.now
            let answer = try await client.waitForChange(of: id, from: 1, seconds: 1)
            #expect(answer == nil)
            #expect(ContinuousClock.now - started >= .milliseconds(900), "the poll was not held for its wait")
        }
    }
}

// MARK: - Presenting

/// A style as asked for and as the server must serve it.
struct StyleCase: Sendable, CustomTestStringConvertible {
    var request: PresentRequest.Style
    var expected: ModalStyle
    var testDescription: String

    static let all: [StyleCase] = [
        StyleCase(
            request: .sheet(detents: [.medium, .fraction(0.5), .height(320)], interactiveDismissDisabled: true),
            // Served as the shortest decimal (the spec's ServedDetent), as `.height(320)` writes it.
            expected: .sheet(detents: ["medium", "fraction:0.5", "height:320"], interactiveDismissDisabled: true),
            testDescription: "sheet with detents, not dismissible"),
        StyleCase(
            request: .sheet(), expected: .sheet(detents: [], interactiveDismissDisabled: false),
            testDescription: "sheet with the defaults"),
        StyleCase(request: .fullScreenCover, expected: .fullScreenCover, testDescription: "fullScreenCover"),
        StyleCase(request: .popover, expected: .popover, testDescription: "popover"),
        StyleCase(
            request: deleteAlert,
            expected: .alert(
                title: "Delete?", message: "It cannot be undone.",
                buttons: [
                    AlertButton(id: "delete", label: "Delete", role: .destructive),
                    AlertButton(id: "cancel", label: "Cancel", role: .cancel),
                ]),
            testDescription: "alert with buttons and roles"),
        StyleCase(
            request: .alert(title: "Saved"),
            expected: .alert(title: "Saved", message: nil, buttons: [AlertButton(id: "ok", label: "OK")]),
            testDescription: "alert with the default button"),
        StyleCase(
            request: .confirmationDialog(
                title: "Share",
                buttons: [
                    AlertButtonRequest(id: "mail", label: "Mail"), AlertButtonRequest(id: "copy", label: "Copy"),
                ]),
            expected: .confirmationDialog(
                title: "Share", message: nil,
                buttons: [AlertButton(id: "mail", label: "Mail"), AlertButton(id: "copy", label: "Copy")]),
            testDescription: "confirmationDialog"),
        StyleCase(request: .dialog, expected: .dialog, testDescription: "dialog"),
        StyleCase(
            request: .progress(message: "Syncing", total: 10, completed: 2),
            expected: .progress(message: "Syncing", total: 10, completed: 2), testDescription: "progress"),
        StyleCase(
            request: .progress(total: 5), expected: .progress(message: nil, total: 5, completed: 0),
            testDescription: "progress with the defaults"),
    ]
}

extension ClientOperationTests {
    @Suite("Presenting")
    struct Presenting {
        @Test("present puts every style on top with its fields, as the server then serves it", arguments: StyleCase.all)
        func presentsStyle(_ style: StyleCase) async throws {
            let client = try makeClient()
            let id = uniqueSessionID("style")
            let answer = try await client.present(PresentRequest(destination: "screen", style: style.request), in: id)
                .presentedOnTop()
            let presentation = answer.presentation
            #expect(presentation.style == style.expected)
            #expect(ModalStyle(style.request) == style.expected, "the model's prediction of the served style")
            #expect(presentation.state == .presented)
            #expect(presentation.key == "screen", "the key defaults to the destination")
            #expect(answer.transition == [.present(presentation.id)])
            #expect(answer.session.top == presentation)
            #expect(try await client.presentation(presentation.id, in: id) == presentation)
        }

        @Test("present keeps the key, payload and lock it was sent")
        func keyPayloadAndLock() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("options")
            let request = PresentRequest(
                destination: "checkout", key: "order-17", payload: ["amount": 12.5, "items": ["a", "b"]], locked: true)
            let presentation = try await client.present(request, in: id).presentedOnTop().presentation
            #expect(presentation.destination == "checkout")
            #expect(presentation.key == "order-17")
            #expect(presentation.payload == ["amount": 12.5, "items": ["a", "b"]])
            #expect(presentation.locked)
        }

        @Test("a present an alert blocks is queued at its position, and promoted when the alert goes")
        func queuedBehindAnAlert() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("queue")
            let alert = try await client.presentOnTop("confirm", .alert(title: "Sure?"), in: id)
            let first = try await client.present(PresentRequest(destination: "a", whenBlocked: .queue), in: id).queued()
            let second = try await client.present(PresentRequest(destination: "b"), in: id).queued()
            #expect(first.position == 0)
            #expect(second.position == 1)
            #expect(first.presentation.state == .queued && first.presentation.presentedAt == nil)
            #expect(second.transition.isEmpty)
            #expect(second.session.stack.map(\.id) == [alert.id])
            #expect(second.session.queue.map(\.id) == [first.presentation.id, second.presentation.id])
            let dismissal = try await client.dismiss(in: id)
            #expect(dismissal.promoted.map(\.id) == [first.presentation.id, second.presentation.id])
            #expect(dismissal.session.stack.map(\.id) == [first.presentation.id, second.presentation.id])
            #expect(dismissal.session.queue.isEmpty)
        }

        @Test("presenting the top's key again updates it in place: .updated, same id, new payload")
        func sameKeyOnTopUpdates() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("update")
            let first = PresentRequest(destination: "profile", payload: ["userId": 1])
            let original = try await client.present(first, in: id).presentedOnTop().presentation
            let outcome = try await client.present(
                PresentRequest(destination: "profile", payload: ["userId": 2]), in: id)
            guard case .updated(let answer) = outcome else { throw Unexpected(description: "not updated: \(outcome)") }
            #expect(answer.presentation.id == original.id)
            #expect(answer.presentation.payload == ["userId": 2])
            #expect(answer.transition.isEmpty)
            #expect(answer.session.version == 2)
            #expect(answer.session.stack.count == 1)
        }
    }
}

// MARK: - Dismissing

/// A form of dismiss, on the stack [a, b, c].
enum DismissForm: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case top, count, to, presentation, all

    func request(_ stack: [Presentation]) -> DismissRequest {
        switch self {
        case .top: DismissRequest()
        case .count: DismissRequest(.count(2))
        case .to: DismissRequest(.to(stack[1].id))
        case .presentation: DismissRequest(.presentation(stack[1].id))
        case .all: DismissRequest(.all)
        }
    }

    /// The destinations it dismisses, top first.
    var dismissed: [String] {
        switch self {
        case .top, .to: ["c"]
        case .count, .presentation: ["c", "b"]
        case .all: ["c", "b", "a"]
        }
    }

    var testDescription: String { rawValue }
}

extension ClientOperationTests {
    @Suite("Dismissing")
    struct Dismissing {
        @Test("each form of dismiss removes what it names, top first", arguments: DismissForm.allCases)
        func dismissForm(_ form: DismissForm) async throws {
            let client = try makeClient()
            let id = uniqueSessionID("dismiss")
            let stack = try await client.presentSheets(["a", "b", "c"], in: id)
            let answer = try await client.dismiss(form.request(stack), in: id)
            #expect(answer.dismissed.map(\.destination) == form.dismissed)
            #expect(answer.dismissed.allSatisfy { $0.state == .dismissed && $0.dismissedAt != nil })
            #expect(answer.transition == answer.dismissed.map { .dismiss($0.id) })
            #expect(answer.session.stack.map(\.id) == Array(stack.map(\.id).dropLast(form.dismissed.count)))
            #expect(answer.session.version == 4)
        }

        @Test("an alert dismissed with a buttonId keeps it as its result, read back with presentation(_:in:)")
        func alertResult() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("result")
            let alert = try await client.presentOnTop("deleteConfirm", deleteAlert, in: id)
            let answer = try await client.dismiss(DismissRequest(result: ["buttonId": "delete"]), in: id)
            #expect(answer.dismissed.map(\.id) == [alert.id])
            let read = try await client.presentation(alert.id, in: id)
            #expect(read.state == .dismissed)
            #expect(read.answeredButtonID == "delete")
            #expect(read.result == ["buttonId": "delete"])
        }

        @Test("a dismiss with force removes a locked presentation")
        func forceDismissesLocked() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("force")
            let locked = try await client.presentOnTop("payment", locked: true, in: id)
            let answer = try await client.dismiss(DismissRequest(force: true), in: id)
            #expect(answer.dismissed.map(\.id) == [locked.id])
            #expect(answer.session.stack.isEmpty)
        }

        @Test("deletePresentation removes the presentation and those above it")
        func deletePresentation() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("delete")
            let stack = try await client.presentSheets(["a", "b", "c"], in: id)
            let answer = try await client.deletePresentation(stack[1].id, in: id)
            #expect(answer.dismissed.map(\.id) == [stack[2].id, stack[1].id])
            #expect(answer.session.stack.map(\.id) == [stack[0].id])
        }

        @Test("deletePresentation with force removes a locked presentation")
        func deleteLockedWithForce() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("delete")
            let locked = try await client.presentOnTop("payment", locked: true, in: id)
            let answer = try await client.deletePresentation(locked.id, in: id, force: true)
            #expect(answer.dismissed.map(\.id) == [locked.id])
            #expect(answer.session.stack.isEmpty)
        }

        @Test("deletePresentation cancels a queued presentation and leaves the stack as it is")
        func deleteCancelsQueued() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("cancel")
            let alert = try await client.presentOnTop("confirm", .alert(title: "Sure?"), in: id)
            let queued = try await client.present(PresentRequest(destination: "later"), in: id).queued().presentation
            let answer = try await client.deletePresentation(queued.id, in: id)
            #expect(answer.dismissed.map(\.id) == [queued.id])
            #expect(answer.dismissed.first?.state == .dismissed)
            #expect(answer.dismissed.first?.presentedAt == nil, "it never went on the stack")
            #expect(answer.transition.isEmpty)
            #expect(answer.session.stack.map(\.id) == [alert.id])
            #expect(answer.session.queue.isEmpty)
        }

        @Test("deletePresentation of an alert records its cancel button as the result")
        func deleteAlertRecordsCancel() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("cancel")
            let alert = try await client.presentOnTop("deleteConfirm", deleteAlert, in: id)
            let answer = try await client.deletePresentation(alert.id, in: id)
            #expect(answer.dismissed.first?.answeredButtonID == "cancel")
        }
    }
}

// MARK: - Changes in place

extension ClientOperationTests {
    @Suite("Updating and replacing")
    struct Updating {
        @Test("update replaces a presentation's payload in place")
        func updatePayload() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("patch")
            let sheet = try await client.present(PresentRequest(destination: "help", payload: ["text": "Hi"]), in: id)
                .presentedOnTop().presentation
            let answer = try await client.update(sheet.id, in: id, with: UpdateRequest(payload: ["text": "Hello"]))
            #expect(answer.presentation.id == sheet.id)
            #expect(answer.presentation.payload == ["text": "Hello"])
            #expect(answer.transition.isEmpty)
            #expect(answer.session.version == 2)
        }

        @Test("update moves a progress's completed and message")
        func updateProgress() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("patch")
            let progress = try await client.presentOnTop("sync", .progress(message: "Starting", total: 10), in: id)
            let answer = try await client.update(
                progress.id, in: id, with: UpdateRequest(message: "Halfway", completed: 5))
            #expect(answer.presentation.style == .progress(message: "Halfway", total: 10, completed: 5))
            #expect(try await client.session(id).top?.style == .progress(message: "Halfway", total: 10, completed: 5))
        }

        @Test("replaceStack keeps the entries that match from the bottom, and makes new ones above")
        func replaceStack() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("replace")
            let old = try await client.presentSheets(["a", "b"], in: id)
            let request = ReplaceStackRequest(stack: [
                PresentRequest(destination: "a", payload: ["page": 2]), PresentRequest(destination: "c"),
            ])
            let answer = try await client.replaceStack(request, in: id)
            let new = answer.session.stack
            try #require(new.map(\.destination) == ["a", "c"])
            #expect(new[0].id == old[0].id, "a matches the old bottom: same identity")
            #expect(new[0].payload == ["page": 2])
            #expect(new[0].presentedAt == old[0].presentedAt)
            #expect(!old.map(\.id).contains(new[1].id), "c is a new presentation")
            #expect(answer.dismissed.map(\.id) == [old[1].id])
            #expect(answer.transition == [.dismiss(old[1].id), .present(new[1].id)])
        }
    }
}

// MARK: - The log

extension ClientOperationTests {
    @Suite("Event log and transitions")
    struct Log {
        @Test("events pages through the log by whole changes, following next until the current version")
        func eventsPaging() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("events")
            let a = try await client.presentOnTop("a", in: id)  // v1: sessionCreated, presented
            _ = try await client.presentOnTop("b", in: id)  // v2: presented
            _ = try await client.dismiss(in: id)  // v3: dismissed
            _ = try await client.dismiss(in: id)  // v4: dismissed
            var pages = [try await client.events(in: id, limit: 2)]
            while let next = pages.last?.nextPage {
                pages.append(try await client.events(at: next))
                try #require(pages.count < 10, "nextPage does not come to an end")
            }
            let events = pages.flatMap(\.events)
            try #require(events.map(\.version) == [1, 1, 2, 3, 4])
            #expect(events.map(\.event.type) == ["sessionCreated", "presented", "presented", "dismissed", "dismissed"])
            #expect(events[1].event.presentation?.id == a.id)
            #expect(pages.map { $0.events.count } == [2, 2, 1])
            #expect(pages.allSatisfy { $0.version == 4 })
        }

        @Test("transition(from:) plans from a logged version, and from 0 (an empty stack)")
        func transitionFrom() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("transition")
            let a = try await client.presentOnTop("a", in: id)  // v1
            _ = try await client.presentOnTop("b", in: id)  // v2
            let replaced = try await client.replaceStack(
                ReplaceStackRequest(stack: [PresentRequest(destination: "x")]), in: id)  // v3
            let x = try #require(replaced.session.top)
            let fromOne = try await client.transition(in: id, from: 1)
            #expect(fromOne.from == 1 && fromOne.to == 3)
            #expect(fromOne.transition == [.dismiss(a.id), .present(x.id)])
            #expect(try await client.transition(in: id, from: 0).transition == [.present(x.id)])
            #expect(try await client.transition(in: id, from: 3).transition.isEmpty)
        }
    }
}

// MARK: - Refusals

extension ClientOperationTests {
    @Suite("Refusals mapped to typed errors")
    struct Refusals {
        @Test("reading or dismissing on a session that does not exist is sessionNotFound")
        func sessionNotFound() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("missing")
            for error in [
                try await refusal { try await client.session(id) },
                try await refusal { try await client.dismiss(in: id) },
            ] {
                guard case .sessionNotFound(let problem) = error else { throw Unexpected(description: "\(error)") }
                #expect(problem.status == 404)
            }
        }

        @Test("reading an unknown presentation is presentationNotFound, naming the id asked for")
        func presentationNotFound() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("missing")
            _ = try await client.createSession(id)
            let unknown = "AAAAAAAAAAAAAAAAAAAAAAAA"
            let error = try await refusal { try await client.presentation(unknown, in: id) }
            guard case .presentationNotFound(let presentationID, let problem) = error else {
                throw Unexpected(description: "\(error)")
            }
            #expect(presentationID == unknown)
            #expect(problem.status == 404)
        }

        @Test("a session id outside the allowed characters is invalidSessionID")
        func invalidSessionID() async throws {
            let error = try await refusal { try await makeClient().session("not a session id!") }
            guard case .invalidSessionID(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 400)
        }

        @Test("a present with bad fields is validationFailed, with a pointer per bad field")
        func validationFailed() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("invalid")
            let request = PresentRequest(destination: "9lives", style: .sheet(detents: [.medium, "tiny"]))
            let error = try await refusal { try await client.present(request, in: id) }
            guard case .validationFailed(let fields, let problem) = error else {
                throw Unexpected(description: "\(error)")
            }
            #expect(Set(fields.map(\.pointer)) == ["/destination", "/detents/1"])
            #expect(problem.status == 422)
        }

        @Test("an alert's result naming no button of it is validationFailed at /result/buttonId")
        func validationFailedOnResult() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("invalid")
            _ = try await client.presentOnTop("deleteConfirm", deleteAlert, in: id)
            let error = try await refusal {
                try await client.dismiss(DismissRequest(result: ["buttonId": "nope"]), in: id)
            }
            guard case .validationFailed(let fields, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(fields.map(\.pointer) == ["/result/buttonId"])
            #expect(try await client.session(id).version == 1, "nothing changed")
        }

        @Test("a rejected present on a full stack is stackFull with the server's max depth")
        func stackFull() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("full")
            _ = try await client.presentSheets(["a", "b", "c"], in: id)
            let error = try await refusal {
                try await client.present(PresentRequest(destination: "d", whenBlocked: .reject), in: id)
            }
            guard case .stackFull(let depth, let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(depth == maxDepth)
            #expect(problem.status == 409)
            let session = try await client.session(id)
            #expect(session.version == 3 && session.queue.isEmpty, "nothing was queued")
        }

        @Test("a rejected present over an alert is alertOnTop, naming the alert")
        func alertOnTop() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("alert")
            let alert = try await client.presentOnTop("confirm", .alert(title: "Sure?"), in: id)
            let error = try await refusal {
                try await client.present(PresentRequest(destination: "sheet", whenBlocked: .reject), in: id)
            }
            guard case .alertOnTop(let presentationID, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(presentationID == alert.id)
        }

        @Test("a present past the full queue is queueFull with the server's queue size")
        func queueFull() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("queue")
            _ = try await client.presentOnTop("confirm", .alert(title: "Sure?"), in: id)
            for destination in ["q1", "q2"] {
                _ = try await client.present(PresentRequest(destination: destination), in: id).queued()
            }
            let error = try await refusal { try await client.present(PresentRequest(destination: "q3"), in: id) }
            guard case .queueFull(let size, let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(size == queueSize)
            #expect(problem.status == 409)
        }

        @Test("dismissing a locked presentation without force is locked, naming it")
        func locked() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("locked")
            let payment = try await client.presentOnTop("payment", locked: true, in: id)
            _ = try await client.presentOnTop("help", in: id)
            for error in [
                try await refusal { try await client.dismiss(DismissRequest(.all), in: id) },
                try await refusal { try await client.deletePresentation(payment.id, in: id) },
            ] {
                guard case .locked(let presentationID, _) = error else { throw Unexpected(description: "\(error)") }
                #expect(presentationID == payment.id)
            }
            #expect(try await client.session(id).stack.count == 2, "nothing was dismissed")
        }

        @Test("dismissing more than the stack holds is nothingToDismiss with its depth")
        func nothingToDismiss() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("nothing")
            _ = try await client.presentOnTop("a", in: id)
            let error = try await refusal { try await client.dismiss(DismissRequest(.count(2)), in: id) }
            guard case .nothingToDismiss(let depth, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(depth == 1)
        }

        @Test("a key held below the top or in the queue is alreadyPresented, with its holder's state and position")
        func alreadyPresented() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("key")
            let bottom = try await client.presentOnTop("a", in: id)
            _ = try await client.presentOnTop("b", in: id)
            let onStack = try await refusal { try await client.present(PresentRequest(destination: "a"), in: id) }
            guard case .alreadyPresented(let holder, let state, let position, _) = onStack else {
                throw Unexpected(description: "\(onStack)")
            }
            #expect(holder == bottom.id && state == .presented && position == 0)

            _ = try await client.presentOnTop("confirm", .alert(title: "Sure?"), in: id)
            let queued = try await client.present(PresentRequest(destination: "later"), in: id).queued().presentation
            let inQueue = try await refusal {
                try await client.present(PresentRequest(destination: "other", key: "later"), in: id)
            }
            guard case .alreadyPresented(let queuedHolder, let queuedState, let queuedPosition, _) = inQueue else {
                throw Unexpected(description: "\(inQueue)")
            }
            #expect(queuedHolder == queued.id && queuedState == .queued && queuedPosition == 0)
        }

        @Test("a change expecting a stale version is preconditionFailed with the current version")
        func preconditionFailed() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("stale")
            _ = try await client.presentSheets(["a", "b"], in: id)
            let error = try await refusal {
                try await client.dismiss(in: id, options: ChangeOptions(expectedVersion: 1))
            }
            guard case .preconditionFailed(let current, let problem) = error else {
                throw Unexpected(description: "\(error)")
            }
            #expect(current == 2)
            #expect(problem.status == 412)
            #expect(try await client.dismiss(in: id, options: ChangeOptions(expectedVersion: 2)).session.version == 3)
        }
    }
}

// MARK: - Credentials

extension ClientOperationTests {
    @Suite("Credentials")
    struct Credentials {
        @Test("a wrong API key is unauthorized")
        func unauthorized() async throws {
            let error = try await refusal { try await makeClient(.apiKey("wrong-key")).session(uniqueSessionID("key")) }
            guard case .unauthorized(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 401)
        }

        @Test("token(for:) mints a token that reads and changes its session, and is forbidden on another")
        func tokenForOneSession() async throws {
            let backend = try makeClient()
            let id = uniqueSessionID("token")
            _ = try await backend.createSession(id)
            let minted = try await backend.token(for: id)
            #expect(minted.scope == .readWrite)
            #expect(minted.expiresAt > Date() && minted.expiresAt < Date().addingTimeInterval(3700))

            let app = try makeClient(.token(minted.token))
            _ = try await app.presentOnTop("settings", in: id)
            #expect(try await app.session(id).version == 2)
            let error = try await refusal { try await app.session(uniqueSessionID("other")) }
            guard case .forbidden(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 403)
        }

        @Test("a read-scoped token reads its session but is forbidden to present")
        func readScopedToken() async throws {
            let backend = try makeClient()
            let id = uniqueSessionID("token")
            _ = try await backend.createSession(id)
            let minted = try await backend.token(for: id, scope: .read, ttl: 60)
            #expect(minted.scope == .read)
            let reader = try makeClient(.token(minted.token))
            #expect(try await reader.session(id).version == 1)
            let error = try await refusal { try await reader.presentOnTop("settings", in: id) }
            guard case .forbidden = error else { throw Unexpected(description: "\(error)") }
        }

        @Test("a token provider whose token is refused is asked once more, and the request then succeeds")
        func tokenProviderRefresh() async throws {
            let backend = try makeClient()
            let id = uniqueSessionID("provider")
            _ = try await backend.createSession(id)
            let good = try await backend.token(for: id).token
            // The same header and claims with a signature that does not verify: refused as invalid (401).
            let bad =
                good.split(separator: ".").prefix(2).joined(separator: ".") + "." + String(repeating: "A", count: 43)
            let calls = Mutex(0)
            let app = try makeClient(
                .tokenProvider {
                    calls.withLock { count in
                        count += 1
                        return ClientToken(count == 1 ? bad : good, expiresAt: nil)
                    }
                })
            #expect(try await app.session(id).version == 1)
            #expect(calls.withLock { $0 } == 2, "one token refused, one refresh")
            _ = try await app.presentOnTop("settings", in: id)
            #expect(calls.withLock { $0 } == 2, "the good token is kept for the next requests")
        }
    }
}

// MARK: - If-Match

extension ClientOperationTests {
    @Suite("If-Match from the last version seen")
    struct IfMatch {
        @Test("with sendsIfMatch a change from a stale view is preconditionFailed; after a read it goes through")
        func staleViewRefused() async throws {
            let careful = try makeClient(sendsIfMatch: true)
            let other = try makeClient()
            let id = uniqueSessionID("ifmatch")
            _ = try await careful.presentOnTop("a", in: id)  // v1, seen
            _ = try await other.presentOnTop("b", in: id)  // v2, not seen
            _ = try await other.presentOnTop("c", in: id)  // v3, not seen
            let error = try await refusal { try await careful.dismiss(in: id) }
            guard case .preconditionFailed(let current, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(current == 3)
            #expect(try await careful.session(id).stack.count == 3, "nothing was dismissed")
            let answer = try await careful.dismiss(in: id)
            #expect(answer.dismissed.map(\.destination) == ["c"])
            #expect(answer.session.version == 4)
        }

        @Test("a 412 does not count as having seen the session: the same change stays refused until it is read")
        func refusalIsNotASeenVersion() async throws {
            let careful = try makeClient(sendsIfMatch: true)
            let other = try makeClient()
            let id = uniqueSessionID("ifmatch")
            _ = try await careful.presentOnTop("a", in: id)
            _ = try await other.presentOnTop("b", in: id)
            _ = try await refusal { try await careful.dismiss(in: id) }
            #expect(careful.lastSeenVersion(of: id) == 1)
            _ = try await refusal { try await careful.dismiss(in: id) }
        }
    }
}

// MARK: - Retries over a connection that is cut

extension ClientOperationTests {
    @Suite("Retries after a cut connection")
    struct Retries {
        @Test("a present whose answer is cut is retried with the same Idempotency-Key and applied once")
        func retriedPresentAppliedOnce() async throws {
            let server = try #require(TestServer.current)
            let id = uniqueSessionID("retry")
            _ = try await makeClient().createSession(id)
            let proxy = try CuttingProxy(forwardingTo: server.port, cuttingFirst: 1)
            // A client of its own: its first request opens a new connection, which libcurl does not retry itself.
            let client = try makeClient(maxAttempts: 3, at: proxy.url)
            let answer = try await client.present(PresentRequest(destination: "settings"), in: id).presentedOnTop()
            #expect(answer.session.version == 2)

            let exchanges = proxy.exchanges
            try #require(exchanges.count == 2, "\(exchanges.map(\.request))")
            #expect(exchanges.map(\.relayed) == [false, true])
            #expect(exchanges.map(\.response.status) == [201, 201])
            let key = try #require(exchanges[0].request.value("Idempotency-Key"))
            #expect(exchanges[1].request.value("Idempotency-Key") == key)
            #expect(exchanges[0].response.value("Idempotent-Replayed") == nil)
            #expect(exchanges[1].response.value("Idempotent-Replayed") == "true")
            let session = try await makeClient().session(id)
            #expect(session.version == 2, "one change for two attempts")
            #expect(session.stack.map(\.id) == [answer.presentation.id])
        }

        @Test("with maxAttempts 1 a cut answer surfaces as a URLError, though the change was committed")
        func cutWithoutRetryThrows() async throws {
            let server = try #require(TestServer.current)
            let id = uniqueSessionID("retry")
            _ = try await makeClient().createSession(id)
            let proxy = try CuttingProxy(forwardingTo: server.port, cuttingFirst: 1)
            let client = try makeClient(maxAttempts: 1, at: proxy.url)
            let error = try #require(
                await #expect(throws: URLError.self) {
                    try await client.present(PresentRequest(destination: "settings"), in: id)
                })
            print("URLError for a connection closed before the response: \(error.code.rawValue) (\(error.code))")
            // FoundationNetworking (libcurl's "Empty reply from server") gives badServerResponse, -1011; Darwin
            // gives networkConnectionLost. The client retries both for an idempotent request.
            #expect([URLError.Code.networkConnectionLost, .badServerResponse].contains(error.code))
            #expect(proxy.exchanges.count == 1)
            #expect(try await makeClient().session(id).stack.count == 1, "the server applied it all the same")
        }

        @Test("a conditional replaceStack whose answer is cut is not retried into a 412 for its own change")
        func retriedConditionalReplacement() async throws {
            let server = try #require(TestServer.current)
            let id = uniqueSessionID("retry")
            _ = try await makeClient().createSession(id)
            let proxy = try CuttingProxy(forwardingTo: server.port, cuttingFirst: 1)
            let client = try makeClient(maxAttempts: 3, at: proxy.url)
            let deepLink = ReplaceStackRequest(stack: [PresentRequest(destination: "home")])
            // Not retried: the client cannot tell whether the change was applied, and says so.
            await #expect(throws: URLError.self) {
                try await client.replaceStack(deepLink, in: id, options: ChangeOptions(expectedVersion: 1))
            }
            #expect(proxy.exchanges.count == 1)
            #expect(try await makeClient().session(id).stack.map(\.destination) == ["home"], "applied once")
        }

        @Test("createSession(ttl:) whose answer is cut is retried like a present, and makes one session")
        func retriedSessionCreation() async throws {
            let server = try #require(TestServer.current)
            let proxy = try CuttingProxy(forwardingTo: server.port, cuttingFirst: 1)
            let client = try makeClient(maxAttempts: 3, at: proxy.url)
            let session = try await client.createSession(ttl: 60)
            #expect(proxy.exchanges.count == 2)
            #expect(proxy.exchanges.last?.response.value("Idempotent-Replayed") == "true")
            #expect(try await makeClient().session(session.id) == session)
        }
    }
}

// MARK: - Servers with other flags

extension ClientOperationTests {
    @Suite(
        "With the seeds' catalog", .server(["--api-key", apiKey, "--catalog", seedsCatalogPath, "--log-level", "off"]))
    struct WithCatalog {
        @Test("destinations() lists the catalog's destinations, sorted, with their styles and schemas")
        func catalogDestinations() async throws {
            let destinations = try await makeClient().destinations()
            guard case .catalog(let list) = destinations else { throw Unexpected(description: "\(destinations)") }
            #expect(
                list.map(\.name) == [
                    "deleteConfirm", "downloadItem", "downloads", "help", "onboarding", "privacy", "profile",
                    "settings",
                    "shareOptions", "sun", "sync",
                ])
            let profile = try #require(list.first { $0.name == "profile" })
            #expect(profile.styles == [.sheet] && profile.allowsPush)
            #expect(profile.payload != nil)
            #expect(list.first { $0.name == "downloads" }?.payload == nil)
            #expect(list.filter(\.allowsPush).map(\.name) == ["downloadItem", "privacy", "profile"])
        }

        @Test("the seeds' deep link opens onboarding, then downloads with the item pushed inside it; home goes back")
        func seedsLinks() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("seeds-link")
            let opened = try await client.open(url: URL(string: "myapp://onboarding/downloads/42")!, in: id)
            #expect(opened.route.name == "download-item" && opened.action == .navigate)
            #expect(opened.session.stack.map(\.destination) == ["onboarding", "downloads"])
            #expect(opened.session.stack[1].path.map(\.payload) == [["itemId": 42]])
            let profile = try await client.open(url: URL(string: "https://example.com/users/7")!, in: id)
            #expect(profile.session.stack[1].path.map(\.destination) == ["downloadItem", "profile"])
            let home = try await client.open(url: URL(string: "myapp://home")!, in: id)
            #expect(home.dismissed.map(\.destination) == ["downloads", "onboarding"])
            #expect(home.session.stack.isEmpty && home.session.path.isEmpty)
            let privacy = try await client.resolve(url: URL(string: "myapp://settings/privacy")!)
            #expect(privacy.route.name == "privacy" && privacy.action == .navigate)
        }

        @Test("a payload the catalog's schema refuses is validationFailed with a pointer per violation")
        func catalogValidation() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("catalog")
            let bad = PresentRequest(destination: "profile", payload: ["userId": 0, "nickname": "x"])
            let error = try await refusal { try await client.present(bad, in: id) }
            guard case .validationFailed(let fields, _) = error else { throw Unexpected(description: "\(error)") }
            #expect(Set(fields.map(\.pointer)) == ["/payload/userId", "/payload/nickname"])
            let wrongStyle = try await refusal {
                try await client.present(PresentRequest(destination: "settings", style: .popover), in: id)
            }
            guard case .validationFailed(let styleFields, _) = wrongStyle else {
                throw Unexpected(description: "\(wrongStyle)")
            }
            #expect(styleFields.map(\.pointer) == ["/style"])
        }
    }

    @Suite("Requiring If-Match", .server(["--require-if-match", "true", "--log-level", "off"]))
    struct RequiringIfMatch {
        @Test("a change without If-Match is preconditionRequired; with one it is applied")
        func preconditionRequired() async throws {
            let client = try makeClient(.none)
            let id = uniqueSessionID("required")
            _ = try await client.createSession(id)  // exempt
            let error = try await refusal { try await client.presentOnTop("settings", in: id) }
            guard case .preconditionRequired(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 428)
            let answer = try await client.present(
                PresentRequest(destination: "settings"), in: id, options: ChangeOptions(expectedVersion: 1))
            #expect(try answer.presentedOnTop().session.version == 2)
            let careful = try makeClient(.none, sendsIfMatch: true)
            _ = try await careful.session(id)
            #expect(try await careful.dismiss(in: id).session.version == 3, "sendsIfMatch sends the version it read")
        }
    }

    @Suite("With a log of two changes", .server(["--event-log-size", "2", "--log-level", "off"]))
    struct ShortLog {
        @Test("transition(from:) a pruned version is versionGone")
        func versionGone() async throws {
            let client = try makeClient(.none)
            let id = uniqueSessionID("pruned")
            // Versions 1 to 3; the log keeps 2 and 3.
            let sheets = try await client.presentSheets(["a", "b", "c"], in: id)
            let error = try await refusal { try await client.transition(in: id, from: 1) }
            guard case .versionGone(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 410)
            #expect(try await client.transition(in: id, from: 2).transition == [.present(sheets[2].id)])
        }

        @Test("session(_:at:) is each version the log holds, versionGone before, versionNotFound after")
        func versions() async throws {
            let client = try makeClient(.none)
            let id = uniqueSessionID("versions")
            var seen: [Int64: Session] = [:]
            for destination in ["a", "b", "c"] {
                _ = try await client.presentOnTop(destination, in: id)
                let session = try await client.session(id)
                seen[session.version] = session
            }
            #expect(try await client.session(id, at: 3) == seen[3])
            #expect(try await client.session(id, at: 2) == seen[2])
            let gone = try await refusal { try await client.session(id, at: 1) }
            guard case .versionGone = gone else { throw Unexpected(description: "\(gone)") }
            let later = try await refusal { try await client.session(id, at: 4) }
            guard case .versionNotFound(let current, _) = later else { throw Unexpected(description: "\(later)") }
            #expect(current == 3)
        }
    }

    @Suite("Without token secrets", .server(["--api-key", apiKey, "--log-level", "off"]))
    struct WithoutTokenSecrets {
        @Test("token(for:) is tokensNotConfigured")
        func tokensNotConfigured() async throws {
            let client = try makeClient()
            let id = uniqueSessionID("tokens")
            _ = try await client.createSession(id)
            let error = try await refusal { try await client.token(for: id) }
            guard case .tokensNotConfigured(let problem) = error else { throw Unexpected(description: "\(error)") }
            #expect(problem.status == 409)
        }
    }
}
