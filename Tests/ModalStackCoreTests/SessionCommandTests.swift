import ModalStackCore
import Testing

@Suite("Session commands")
struct SessionCommandTests {
    @Test("presenting on an unwritten session creates it at version 1 with the entry on top")
    func presentCreates() throws {
        let fixture = FixedContext()
        let outcome = try Session.unwritten(id: "s", at: fixture.now).applying(present("settings"), in: fixture.context)
        #expect(outcome.changed)
        #expect(outcome.session.version == 1)
        #expect(outcome.session.stack.map(\.id) == ["p1"])
        #expect(outcome.session.top?.destination == "settings")
        #expect(outcome.session.top?.key == "settings")
        #expect(outcome.session.top?.style == .sheet)
        #expect(outcome.session.createdAt == fixture.now)
        guard case .presented(let presentation) = outcome.effect else {
            Issue.record("expected presented, got \(outcome.effect)")
            return
        }
        #expect(presentation.presentedAt == fixture.now)
    }

    @Test("each change bumps the version by one and stamps updatedAt")
    func versions() throws {
        let fixture = FixedContext()
        var session = try fixture.apply([present("settings")])
        fixture.now = Timestamp(millisecondsSinceEpoch: fixture.now.millisecondsSinceEpoch + 5)
        session = try session.applying(present("help"), in: fixture.context).session
        #expect(session.version == 2)
        #expect(session.updatedAt == fixture.now)
        #expect(session.createdAt < session.updatedAt)
        session = try session.applying(dismiss(.top), in: fixture.context).session
        #expect(session.version == 3)
    }

    @Test("a present with the top's key replaces its payload in place")
    func updateInPlace() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("help", payload: ["text": "a"])])
        let outcome = try session.applying(present("help", payload: ["text": "b"]), in: fixture.context)
        #expect(outcome.changed)
        #expect(outcome.session.stack.count == 1)
        #expect(outcome.session.top?.id == "p1")
        #expect(outcome.session.top?.payload["text"] == "b")
        #expect(outcome.session.version == 2)
        guard case .updated = outcome.effect else {
            Issue.record("expected updated, got \(outcome.effect)")
            return
        }
    }

    @Test("presenting the same payload again changes nothing")
    func samePayloadIsNoChange() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("help", payload: ["text": "a"])])
        let outcome = try session.applying(present("help", payload: ["text": "a"]), in: fixture.context)
        #expect(!outcome.changed)
        #expect(outcome.session == session)
    }

    @Test("a key already lower on the stack is refused with its position")
    func alreadyPresentedBelow() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("settings"), present("help")])
        let error = #expect(throws: ModalError.self) { try session.applying(present("settings"), in: fixture.context) }
        #expect(error?.kind == .alreadyPresented)
        #expect(error?.context["position"] == 0)
        #expect(error?.context["presentationId"] == "p1")
    }

    @Test("the top's key with another destination or style is refused, not morphed")
    func sameKeyDifferentModal() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("help", key: "k")])
        for command in [present("other", key: "k"), present("help", content: .fullScreenCover, key: "k")] {
            let error = #expect(throws: ModalError.self) { try session.applying(command, in: fixture.context) }
            #expect(error?.kind == .alreadyPresented)
        }
    }

    @Test("an explicit key lets the same destination stack twice")
    func explicitKeys() throws {
        let session = try FixedContext().apply([
            present("profile", key: "profile:1"), present("profile", key: "profile:2"),
        ])
        #expect(session.stack.map(\.key) == ["profile:1", "profile:2"])
    }

    @Test("presenting past the maximum depth with whenBlocked reject is refused as stack-full")
    func depthLimit() throws {
        let fixture = FixedContext()
        fixture.rules.maxDepth = 2
        let session = try fixture.apply([present("a"), present("b")])
        let error = #expect(throws: ModalError.self) {
            try session.applying(present("c", whenBlocked: .reject), in: fixture.context)
        }
        #expect(error?.kind == .stackFull)
        #expect(error?.context["maxDepth"] == 2)
    }

    @Test("dismiss removes the top, then the next, and an empty stack refuses")
    func dismissTop() throws {
        let fixture = FixedContext()
        var session = try fixture.apply([present("a"), present("b")])
        let outcome = try session.applying(dismiss(.top), in: fixture.context)
        #expect(dismissedIDs(outcome) == [session.stack[1].id])
        session = try fixture.apply([dismiss(.top)], to: outcome.session)
        #expect(session.stack.isEmpty)
        let error = #expect(throws: ModalError.self) { try session.applying(dismiss(.top), in: fixture.context) }
        #expect(error?.kind == .nothingToDismiss)
        let all = #expect(throws: ModalError.self) { try session.applying(dismiss(.all), in: fixture.context) }
        #expect(all?.kind == .nothingToDismiss)
    }

    @Test("dismiss count removes that many from the top, top first")
    func dismissCount() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b"), present("c")])
        let outcome = try session.applying(dismiss(.count(2)), in: fixture.context)
        #expect(outcome.session.stack.map(\.destination) == ["a"])
        #expect(dismissedIDs(outcome) == [session.stack[2].id, session.stack[1].id])
        let error = #expect(throws: ModalError.self) { try session.applying(dismiss(.count(4)), in: fixture.context) }
        #expect(error?.kind == .nothingToDismiss)
    }

    @Test("dismiss to keeps the named entry and removes what is above it")
    func dismissTo() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b"), present("c")])
        let outcome = try session.applying(dismiss(.above(presentationID: "p1")), in: fixture.context)
        #expect(outcome.session.stack.map(\.id) == ["p1"])
        let atTop = #expect(throws: ModalError.self) {
            try session.applying(dismiss(.above(presentationID: "p3")), in: fixture.context)
        }
        #expect(atTop?.kind == .nothingToDismiss)
        let missing = #expect(throws: ModalError.self) {
            try session.applying(dismiss(.above(presentationID: "nope")), in: fixture.context)
        }
        #expect(missing?.kind == .presentationNotFound)
    }

    @Test("dismissing an entry takes everything above it along")
    func dismissPresentation() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b"), present("c")])
        let outcome = try session.applying(dismiss(.presentation(id: "p2")), in: fixture.context)
        #expect(outcome.session.stack.map(\.id) == ["p1"])
        #expect(dismissedIDs(outcome) == [session.stack[2].id, session.stack[1].id])
        let missing = #expect(throws: ModalError.self) {
            try session.applying(dismiss(.presentation(id: "p9")), in: fixture.context)
        }
        #expect(missing?.kind == .presentationNotFound)
    }

    @Test("dismiss all empties the stack")
    func dismissAll() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b")])
        let outcome = try session.applying(dismiss(.all), in: fixture.context)
        #expect(outcome.session.stack.isEmpty)
        #expect(outcome.session.version == session.version + 1)
    }

    @Test("replacing the stack keeps the identity of the unchanged bottom and makes new entries above")
    func replaceKeepsCommonPrefix() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b"), present("c")])
        let request = ReplaceStackRequest(stack: [
            PresentRequest(destination: "a", payload: ["x": 1]),
            PresentRequest(destination: "d"),
            PresentRequest(destination: "c"),
        ])
        let outcome = try session.applying(.replaceStack(request), in: fixture.context)
        #expect(outcome.session.stack.map(\.id) == ["p1", "p4", "p5"])
        #expect(outcome.session.stack[0].payload["x"] == 1)
        #expect(outcome.session.stack.map(\.destination) == ["a", "d", "c"])
        #expect(outcome.session.version == session.version + 1)
    }

    @Test("dismiss to a queued entry is refused as queued, with its position")
    func dismissToQueued() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a", content: alert()), present("b")])
        let error = #expect(throws: ModalError.self) {
            try session.applying(dismiss(.above(presentationID: "p2")), in: fixture.context)
        }
        #expect(error?.kind == .presentationQueued)
        #expect(error?.context["position"] == 0)
        #expect(error?.context["state"] == "queued")
    }

    @Test("a create keeps an existing session's ttl when it asks for none or the same; another is refused")
    func createWithTTL() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([.create(SessionOptions(ttlSeconds: 60))])
        #expect(session.ttlSeconds == 60)
        #expect(try !session.applying(.create(SessionOptions()), in: fixture.context).changed)
        #expect(try !session.applying(.create(SessionOptions(ttlSeconds: 60)), in: fixture.context).changed)
        let error = #expect(throws: ModalError.self) {
            try session.applying(.create(SessionOptions(ttlSeconds: 50)), in: fixture.context)
        }
        #expect(error?.kind == .sessionExists)
        #expect(error?.context["ttl"] == 60)
    }

    @Test("replacing with the same stack changes nothing; past the depth is refused")
    func replaceEdges() throws {
        let fixture = FixedContext()
        fixture.rules.maxDepth = 2
        let session = try fixture.apply([present("a")])
        let same = try session.applying(
            .replaceStack(ReplaceStackRequest(stack: [PresentRequest(destination: "a")])), in: fixture.context)
        #expect(!same.changed)
        #expect(same.session == session)
        let tooDeep = ReplaceStackRequest(stack: ["a", "b", "c"].map { PresentRequest(destination: $0) })
        let error = #expect(throws: ModalError.self) {
            try session.applying(.replaceStack(tooDeep), in: fixture.context)
        }
        #expect(error?.kind == .stackFull)
        let emptied = try session.applying(.replaceStack(ReplaceStackRequest(stack: [])), in: fixture.context)
        #expect(emptied.session.stack.isEmpty)
        #expect(emptied.changed)
        let created = try Session.unwritten(id: "n", at: fixture.now).applying(
            .replaceStack(ReplaceStackRequest(stack: [])), in: fixture.context)
        #expect(created.changed)
        #expect(created.session.version == 1)
    }

    @Test("a refused command leaves the session as it was")
    func refusalIsPure() throws {
        let fixture = FixedContext()
        fixture.rules.maxDepth = 1
        let session = try fixture.apply([present("a")])
        let copy = session
        _ = try? session.applying(present("b"), in: fixture.context)
        #expect(session == copy)
    }
}
