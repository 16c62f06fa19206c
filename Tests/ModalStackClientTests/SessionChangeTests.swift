import Foundation
import Testing

@testable import ModalStackClient

private let start = Timestamp.parse("2026-11-29T19:05:01.123Z")!
private let later = Timestamp.parse("2026-11-29T19:05:18.750Z")!
private let week: Int64 = 7 * 86_400

private func sheet(_ id: String, key: String? = nil, state: PresentationState = .presented, payload: JSONObject = [:])
    -> Presentation
{
    Presentation(
        id: id, destination: key ?? id, style: .sheet(detents: [], interactiveDismissDisabled: false), key: key ?? id,
        state: state, payload: payload, requestedAt: start, presentedAt: state == .queued ? nil : start)
}

private func alert(_ id: String) -> Presentation {
    Presentation(
        id: id, destination: id, style: .alert(title: "Sure?", message: nil, buttons: [.init(id: "ok", label: "OK")]),
        key: id, state: .presented, requestedAt: start, presentedAt: start)
}

private func session(version: Int64 = 5, stack: [Presentation], queue: [Presentation] = []) -> Session {
    Session(
        id: "s", version: version, createdAt: start, updatedAt: start, stack: stack, queue: queue, ttl: week,
        expiresAt: Date(timeIntervalSince1970: start.timeIntervalSince1970 + Double(week)))
}

/// The change that makes version 6, with the stack ids it must leave.
private func change(_ events: [SessionEvent], stack: [String], version: Int64 = 6) -> SessionChange {
    SessionChange(version: version, at: later, events: events, stack: stack)
}

/// What the server would send for version 6 with this stack and queue.
private func expected(stack: [Presentation], queue: [Presentation] = []) -> Session {
    Session(
        id: "s", version: 6, createdAt: start, updatedAt: later, stack: stack, queue: queue, ttl: week,
        expiresAt: Timestamp.parse("2026-12-06T19:05:18.750Z")!)
}

private func dismissed(_ presentation: Presentation, result: JSONValue? = nil) -> Presentation {
    var presentation = presentation
    presentation.state = .dismissed
    presentation.dismissedAt = later
    presentation.result = result
    return presentation
}

private func promoted(_ presentation: Presentation) -> Presentation {
    var presentation = presentation
    presentation.state = .presented
    presentation.presentedAt = later
    return presentation
}

@Suite("Session.applying(_:)")
struct SessionChangeTests {
    @Test("a present pushes; version, updatedAt, expiresAt and top follow")
    func present() {
        let a = sheet("a")
        let b = sheet("b")
        let result = session(stack: [a]).applying(change([.presented(b)], stack: ["a", "b"]))
        #expect(result == expected(stack: [a, b]))
        #expect(result?.top == b)
        #expect(result?.expiresAt == Timestamp.parse("2026-12-06T19:05:18.750Z"))
    }

    @Test("a queued present goes into the queue at its position")
    func queued() {
        let (q1, q2, q3) = (sheet("q1", state: .queued), sheet("q2", state: .queued), sheet("q3", state: .queued))
        let before = session(stack: [alert("x")], queue: [q1, q3])
        #expect(
            before.applying(change([.queued(q2, position: 1)], stack: ["x"]))
                == expected(stack: [alert("x")], queue: [q1, q2, q3]))
        #expect(before.applying(change([.queued(q2, position: 3)], stack: ["x"])) == nil)
        #expect(before.applying(change([.queued(q1, position: 2)], stack: ["x"])) == nil)
    }

    @Test("a dismiss removes, top first, then what the queue promotes is pushed")
    func dismissAndPromote() {
        let (a, b, c) = (sheet("a"), sheet("b"), alert("c"))
        let (q1, q2) = (sheet("q1", state: .queued), sheet("q2", state: .queued))
        let before = session(stack: [a, b, c], queue: [q1, q2])
        let events: [SessionEvent] = [
            .dismissed(dismissed(c, result: ["buttonId": "ok"])), .dismissed(dismissed(b)), .promoted(promoted(q1)),
            .promoted(promoted(q2)),
        ]
        #expect(
            before.applying(change(events, stack: ["a", "q1", "q2"]))
                == expected(stack: [a, promoted(q1), promoted(q2)]))
    }

    @Test("a cancelled queued presentation leaves the queue")
    func cancelQueued() {
        let (q1, q2) = (sheet("q1", state: .queued), sheet("q2", state: .queued))
        let before = session(stack: [alert("x")], queue: [q1, q2])
        #expect(
            before.applying(change([.dismissed(dismissed(q1))], stack: ["x"]))
                == expected(stack: [alert("x")], queue: [q2]))
    }

    @Test("an update replaces the presentation on the stack or in the queue")
    func update() {
        let (a, b, q) = (sheet("a"), sheet("b"), sheet("q", state: .queued))
        let before = session(stack: [a, b], queue: [q])
        let newA = sheet("a", payload: ["n": 1])
        let newQ = sheet("q", state: .queued, payload: ["n": 2])
        #expect(
            before.applying(change([.updated(newA)], stack: ["a", "b"])) == expected(stack: [newA, b], queue: [q]))
        #expect(
            before.applying(change([.updated(newQ)], stack: ["a", "b"])) == expected(stack: [a, b], queue: [newQ]))
    }

    @Test("a replacement with an empty stack dismisses everything and may promote")
    func replaceWithEmptyStack() {
        let (a, b, q) = (sheet("a"), alert("b"), sheet("q", state: .queued))
        let before = session(stack: [a, b], queue: [q])
        let events: [SessionEvent] = [
            .dismissed(dismissed(b)), .dismissed(dismissed(a)), .replaced(stack: []), .promoted(promoted(q)),
        ]
        #expect(before.applying(change(events, stack: ["q"])) == expected(stack: [promoted(q)]))
        // A replacement that left something it did not dismiss does not follow.
        #expect(before.applying(change([.dismissed(dismissed(b)), .replaced(stack: [])], stack: [])) == nil)
    }

    @Test("a replacement that leaves presentations is nil: kept ones may have new payloads, new ones are unknown")
    func replaceKeepingPresentations() {
        let (a, b, c) = (sheet("a"), sheet("b"), sheet("c"))
        let before = session(stack: [a, b, c])
        // Keeps a and b (maybe with other payloads, which no event says), dismisses c.
        #expect(
            before.applying(change([.dismissed(dismissed(c)), .replaced(stack: ["a", "b"])], stack: ["a", "b"])) == nil)
        // Only payloads changed: the same ids.
        #expect(before.applying(change([.replaced(stack: ["a", "b", "c"])], stack: ["a", "b", "c"])) == nil)
        // A new presentation: its id is all the change says of it.
        #expect(
            before.applying(change([.replaced(stack: ["a", "b", "c", "new"])], stack: ["a", "b", "c", "new"])) == nil)
    }

    @Test("a present that updates the top in place is an update")
    func presentInPlace() {
        let a = sheet("a")
        let newA = sheet("a", payload: ["step": 2])
        #expect(session(stack: [a]).applying(change([.updated(newA)], stack: ["a"])) == expected(stack: [newA]))
    }

    @Test("only the next version applies")
    func versions() {
        let before = session(stack: [])
        let a = sheet("a")
        #expect(before.applying(change([.presented(a)], stack: ["a"], version: 5)) == nil)
        #expect(before.applying(change([.presented(a)], stack: ["a"], version: 7)) == nil)
        #expect(before.applying(change([.presented(a)], stack: ["a"], version: 4)) == nil)
        #expect(before.applying(change([.presented(a)], stack: ["a"], version: 6)) != nil)
    }

    @Test("a session's first change is nil: its ttl is not in it")
    func sessionCreated() {
        let unwritten = session(version: 0, stack: [])
        #expect(unwritten.applying(change([.sessionCreated], stack: [], version: 1)) == nil)
    }

    @Test("events that do not follow from the state are nil")
    func inconsistent() {
        let (a, b, q) = (sheet("a"), sheet("b"), sheet("q", state: .queued))
        let before = session(stack: [a], queue: [q])
        #expect(before.applying(change([.dismissed(dismissed(b))], stack: ["a"])) == nil)
        #expect(before.applying(change([.presented(a)], stack: ["a", "a"])) == nil)
        #expect(before.applying(change([.presented(q)], stack: ["a", "q"])) == nil)
        #expect(before.applying(change([.promoted(promoted(b))], stack: ["a", "b"])) == nil)
        #expect(before.applying(change([.updated(b)], stack: ["a"])) == nil)
        // The stack the change left must be the one derived.
        #expect(before.applying(change([.presented(b)], stack: ["b", "a"])) == nil)
        #expect(before.applying(change([.presented(b)], stack: ["a"])) == nil)
        #expect(before.applying(change([], stack: ["a"])) == expected(stack: [a], queue: [q]))
    }
}
