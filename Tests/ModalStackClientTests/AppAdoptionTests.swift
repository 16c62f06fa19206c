import Foundation
import ModalStackClient
import ModalStackTestSupport
import Synchronization
import Testing

// What an app that ships the client meets: a model kept fresh by the stream, a session that
// expires and is made again, a token provider under concurrent requests, intents that report their
// own outcome, and the server features a client needs (minimal answers, caller-supplied
// idempotency keys, health, paging). Each against the real server.

private let apiKey = "adoption-key"

private func makeClient(
    _ credential: ModalStack.Credential = .apiKey(apiKey), sendsIfMatch: Bool = false
) throws -> ModalStack {
    let server = try #require(TestServer.current)
    return ModalStack(
        baseURL: URL(string: "http://\(server.host):\(server.port)")!, credential: credential,
        configuration: ModalStack.Configuration(
            sendsIfMatch: sendsIfMatch, retryDelay: .milliseconds(10), requestTimeout: 10))
}

@Suite(
    "What an app shipping the client meets, against the real server",
    .server(["--api-key", apiKey, "--token-secret", "adoption-secret", "--sse-heartbeat", "1"]))
@MainActor
struct AppAdoptionTests {
    @Test("with sendsIfMatch, a version the stream brings is the one sent next: no 412 after another device's change")
    func streamMovesIfMatch() async throws {
        let app = try makeClient(sendsIfMatch: true)
        let otherDevice = try makeClient()
        let id = uniqueSessionID("stale")
        let model = ModalStackSession(sessionID: id, client: app)
        _ = try await model.present(sheetRequest("a")).value  // v1, seen in the answer
        let following = Task { await model.follow() }
        _ = try await otherDevice.present(sheetRequest("b"), in: id)  // v2, seen only on the stream
        #expect(try await eventually { model.state?.version == 2 })
        #expect(app.lastSeenVersion(of: id) == 2)

        let dismissed = try await model.dismiss().value
        #expect(dismissed.version == 3 && dismissed.stack.map(\.destination) == ["a"])
        #expect(model.lastError == nil)
        following.cancel()
        await following.value
    }

    @Test("a session that expired and is made again replaces the old state, as the answer to the model's own intent")
    func intentAfterExpiryShowsNewSession() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("expired")
        // Three seconds: time enough for the steps below on a loaded machine (each change extends it).
        _ = try await client.createSession(id, ttl: 3)
        let model = ModalStackSession(sessionID: id, client: client)
        for destination in ["a", "b", "c"] { _ = try await model.present(sheetRequest(destination)).value }
        try #require(model.state?.version == 4 && model.state?.ttl == 3)
        #expect(try await eventually(timeout: .seconds(10)) { await (try? client.session(id)) == nil }, "expired: 404")

        let fresh = try await model.present(sheetRequest("fresh")).value
        #expect(fresh.version == 1)
        #expect(model.state == fresh && model.levels.map(\.destination) == ["fresh"])
    }

    @Test("a followed session that expires is shown as gone at its expiry, then the session made again from version 1")
    func followThroughExpiry() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("expiring")
        _ = try await client.createSession(id, ttl: 3)
        _ = try await client.present(sheetRequest("old"), in: id)
        let model = ModalStackSession(sessionID: id, client: client)
        let following = Task { await model.follow() }
        try #require(try await eventually { model.state?.version == 2 && model.state?.ttl == 3 })

        // The sweeper runs far apart (its default); the stream is told at the expiry itself.
        #expect(try await eventually(timeout: .seconds(10)) { model.state == nil })
        let again = try await client.present(sheetRequest("new"), in: id).session
        #expect(again.version == 1)
        #expect(try await eventually { model.state == again })
        #expect(model.followError == nil)
        following.cancel()
        await following.value
    }

    @Test("concurrent first requests ask the token provider once; a token it says is due is renewed before it is sent")
    func singleFlightTokenProvider() async throws {
        let admin = try makeClient()
        let id = uniqueSessionID("provider")
        _ = try await admin.createSession(id)
        let calls = Mutex(0)
        let app = try makeClient(
            .tokenProvider {
                calls.withLock { $0 += 1 }
                return ClientToken(try await admin.token(for: id))  // a real round trip: the others arrive meanwhile
            })
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<5 { group.addTask { try await app.session(id).version } }
            for try await version in group { #expect(version == 1) }
        }
        #expect(calls.withLock { $0 } == 1, "five concurrent requests, one token")
        _ = try await app.session(id)
        #expect(calls.withLock { $0 } == 1, "a token far from its expiresAt is kept")

        // A provider whose tokens say they expire now: each is renewed before it is sent again,
        // without a refusal first (the server would still take it).
        let renewals = Mutex(0)
        let renewing = try makeClient(
            .tokenProvider {
                renewals.withLock { $0 += 1 }
                return ClientToken(try await admin.token(for: id).token, expiresAt: Date())
            })
        _ = try await renewing.session(id)
        _ = try await renewing.session(id)
        #expect(renewals.withLock { $0 } == 2)
    }

    @Test("a follow the server refuses ends with followError and no connection; lastError is the app's to clear")
    func refusedFollowIsReported() async throws {
        let admin = try makeClient()
        let id = uniqueSessionID("refused")
        _ = try await admin.createSession(id)
        let stranger = try makeClient(.token(try await admin.token(for: uniqueSessionID("other")).token))
        let model = ModalStackSession(sessionID: id, client: stranger)

        await model.follow()
        guard case .forbidden = model.followError as? ModalStackError else {
            Issue.record("followError is \(String(describing: model.followError)), not forbidden")
            return
        }
        #expect(model.connection == nil && model.lastError == nil)

        await #expect(throws: ModalStackError.self) { try await model.present(sheetRequest("x")).value }
        #expect(model.lastError != nil && model.followError != nil)
        model.lastError = nil
        #expect(model.lastError == nil)
    }

    @Test("the second device to answer an alert learns it was already answered, and with which button")
    func secondAnswerSaysAlreadyDismissed() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("answer")
        let alert = try await client.present(confirmDeleteAlert, in: id).presentation
        let phone = ModalStackSession(sessionID: id, client: client)
        let tablet = ModalStackSession(sessionID: id, client: client)
        try await phone.refresh()
        try await tablet.refresh()

        _ = try await phone.answer(buttonID: "delete").value
        let error = await #expect(throws: ModalStackSession.IntentError.self) {
            try await tablet.answer(buttonID: "keep").value
        }
        guard case .alreadyDismissed(let left) = error else {
            Issue.record("\(String(describing: error)) is not alreadyDismissed")
            return
        }
        #expect(left.id == alert.id && left.answeredButtonID == "delete")
        #expect(tablet.alert == nil, "the refusal is not rolled back onto a stale alert")
    }

    @Test("a minimal answer carries the version and the transition only")
    func minimalAnswer() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("minimal")
        let presented = try await client.apply(.present(sheetRequest("a")), in: id)
        let session = try await client.session(id)
        #expect(presented == ChangeReceipt(status: 201, version: 1, transition: [.present(session.stack[0].id)]))
        let popped = try await client.apply(.push(PushRequest(destination: "detail")), in: id)
        #expect(popped.status == 201 && popped.version == 2)
        let dismissed = try await client.apply(.dismiss(DismissRequest()), in: id)
        #expect(dismissed == ChangeReceipt(status: 200, version: 3, transition: [.dismiss(session.stack[0].id)]))
    }

    @Test("a caller's idempotency key makes a change sent again, from another client, apply once")
    func callerIdempotencyKey() async throws {
        let id = uniqueSessionID("relaunch")
        let key = ChangeOptions(idempotencyKey: "checkout-\(id)")
        let before = try await makeClient().present(sheetRequest("checkout"), in: id, options: key)
        // The app relaunched: a new client, the same key.
        let again = try await makeClient().present(sheetRequest("checkout"), in: id, options: key)
        #expect(again == before)
        #expect(try await makeClient().session(id).version == 1)
        await #expect(throws: ModalStackError.self) {
            _ = try await makeClient().present(sheetRequest("other"), in: id, options: key)
        }
    }

    @Test("health: alive, and ready")
    func health() async throws {
        let client = try makeClient(.none)
        let alive = try await client.health()
        #expect(alive.status == .alive && alive.reason == nil)
        let ready = try await client.health(ready: true)
        #expect(ready.status == .ready && ready.reason == nil)
    }
}
