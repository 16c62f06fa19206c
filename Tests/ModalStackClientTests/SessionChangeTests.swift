import Foundation
import Testing

@testable import ModalStackClient

private let start = ModalStackJSON.Timestamp.parse("2026-11-29T19:05:01.123Z")!
private let later = ModalStackJSON.Timestamp.parse("2026-11-29T19:05:18.750Z")!
private let week: Int64 = 7 * 86_400

private func sheet(
    _ id: String, key: String? = nil, state: PresentationState = .presented, payload: JSONObject = [:],
    path: [PathEntry] = []
) -> Presentation {
    Presentation(
        id: id, destination: key ?? id, style: .sheet(detents: [], interactiveDismissDisabled: false), key: key ?? id,
        state: state, payload: payload, path: path, requestedAt: start, presentedAt: state == .queued ? nil : start)
}

private func entry(_ id: String, payload: JSONObject = [:]) -> PathEntry {
    PathEntry(id: id, destination: "screen-\(id)", key: "key-\(id)", payload: payload, pushedAt: start)
}

private func alert(_ id: String) -> Presentation {
    Presentation(
        id: id, destination: id, style: .alert(title: "Sure?", message: nil, buttons: [.init(id: "ok", label: "OK")]),
        key: id, state: .presented, requestedAt: start, presentedAt: start)
}

private func session(
    version: Int64 = 5, path: [PathEntry] = [], stack: [Presentation], queue: [Presentation] = []
) -> Session {
    Session(
        id: "s", version: version, createdAt: start, updatedAt: start, path: path, stack: stack, queue: queue,
        ttl: week, expiresAt: Date(timeIntervalSince1970: start.timeIntervalSince1970 + Double(week)))
}

/// The change that makes version 6, with the ids it must leave: the stack's, the root path's, and
/// the containers' paths, by default empty for every id of `stack` but an alert's (`alert-…`).
private func change(
    _ events: [SessionEvent], stack: [String], path: [String] = [], paths: [String: [String]]? = nil,
    version: Int64 = 6
) -> SessionChange {
    SessionChange(
        version: version, at: later, events: events, stack: stack, path: path,
        paths: paths
            ?? Dictionary(stack.filter { !$0.hasPrefix("alert-") }.map { ($0, []) }, uniquingKeysWith: { a, _ in a }))
}

/// What the server would send for version 6 with this stack and queue.
private func expected(path: [PathEntry] = [], stack: [Presentation], queue: [Presentation] = []) -> Session {
    Session(
        id: "s", version: 6, createdAt: start, updatedAt: later, path: path, stack: stack, queue: queue, ttl: week,
        expiresAt: ModalStackJSON.Timestamp.parse("2026-12-06T19:05:18.750Z")!)
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
        #expect(result?.expiresAt == ModalStackJSON.Timestamp.parse("2026-12-06T19:05:18.750Z"))
    }

    @Test("a queued present goes into the queue at its position")
    func queued() {
        let (q1, q2, q3) = (sheet("q1", state: .queued), sheet("q2", state: .queued), sheet("q3", state: .queued))
        let before = session(stack: [alert("alert-x")], queue: [q1, q3])
        #expect(
            before.applying(change([.queued(q2, position: 1)], stack: ["alert-x"]))
                == expected(stack: [alert("alert-x")], queue: [q1, q2, q3]))
        #expect(before.applying(change([.queued(q2, position: 3)], stack: ["alert-x"])) == nil)
        #expect(before.applying(change([.queued(q1, position: 2)], stack: ["alert-x"])) == nil)
    }

    @Test("a dismiss removes, top first, then what the queue promotes is pushed")
    func dismissAndPromote() {
        let (a, b, c) = (sheet("a"), sheet("b"), alert("alert-c"))
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
        let before = session(stack: [alert("alert-x")], queue: [q1, q2])
        #expect(
            before.applying(change([.dismissed(dismissed(q1))], stack: ["alert-x"]))
                == expected(stack: [alert("alert-x")], queue: [q2]))
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
        let (a, b, q) = (sheet("a"), alert("alert-b"), sheet("q", state: .queued))
        let before = session(stack: [a, b], queue: [q])
        let events: [SessionEvent] = [
            .dismissed(dismissed(b)), .dismissed(dismissed(a)), .replaced(stack: []), .promoted(promoted(q)),
        ]
        #expect(before.applying(change(events, stack: ["q"])) == expected(stack: [promoted(q)]))
        // A replacement that left something it did not dismiss does not follow.
        #expect(before.applying(change([.dismissed(dismissed(b)), .replaced(stack: [])], stack: [])) == nil)
    }

    @Test("a replacement keeps presentations with new payloads and paths, dismisses some and presents new ones")
    func replaceKeepingPresentations() {
        let (a, b, c) = (sheet("a", path: [entry("e1")]), sheet("b"), sheet("c"))
        let before = session(stack: [a, b, c])
        // Keeps a with a new payload and a path of its own, keeps b as it is, dismisses c, presents d.
        let newA = sheet("a", payload: ["page": 2], path: [entry("e1"), entry("e2")])
        let d = sheet("d", path: [entry("e3")])
        let events: [SessionEvent] = [
            .dismissed(dismissed(c)), .updated(newA), .presented(d), .replaced(stack: ["a", "b", "d"]),
        ]
        let paths = ["a": ["e1", "e2"], "b": [], "d": ["e3"]]
        #expect(
            before.applying(change(events, stack: ["a", "b", "d"], paths: paths)) == expected(stack: [newA, b, d]))
        // Without the events that say what each presentation became, the ids do not follow.
        #expect(before.applying(change([.replaced(stack: ["a", "b", "d"])], stack: ["a", "b", "d"])) == nil)
        #expect(before.applying(change(Array(events.dropFirst()), stack: ["a", "b", "d"], paths: paths)) == nil)
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

    @Test("a session's first change applies to the unwritten session: createdAt is its time, ttl the event's")
    func sessionCreated() {
        let a = sheet("a", path: [entry("e2")])
        let first = SessionChange(
            version: 1, at: later,
            events: [.sessionCreated(ttl: 3600), .presented(a), .pushed(entry("e1"), level: .root)],
            stack: ["a"], path: ["e1"], paths: ["a": ["e2"]])
        let created = Session.unwritten("s").applying(first)
        #expect(
            created
                == Session(
                    id: "s", version: 1, createdAt: later, updatedAt: later, path: [entry("e1")], stack: [a], queue: [],
                    ttl: 3600, expiresAt: ModalStackJSON.Timestamp.parse("2026-11-29T20:05:18.750Z")!))
        // Once only: version 1 follows version 0.
        #expect(created?.applying(first) == nil)
        #expect(session(stack: []).applying(first) == nil)
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

    @Test("a push appends to the root's path or a container's; version, ids and expiry follow")
    func push() {
        let a = sheet("a", path: [entry("e1")])
        let before = session(path: [entry("r1")], stack: [a, alert("alert-x")])
        #expect(
            before.applying(
                change(
                    [.pushed(entry("r2"), level: .root)], stack: ["a", "alert-x"], path: ["r1", "r2"],
                    paths: ["a": ["e1"]]))
                == expected(path: [entry("r1"), entry("r2")], stack: [a, alert("alert-x")]))
        let pushedInA = sheet("a", path: [entry("e1"), entry("e2")])
        #expect(
            before.applying(
                change(
                    [.pushed(entry("e2"), level: .presentation("a"))], stack: ["a", "alert-x"], path: ["r1"],
                    paths: ["a": ["e1", "e2"]]))
                == expected(path: [entry("r1")], stack: [pushedInA, alert("alert-x")]))
    }

    @Test("a pop removes the entries its events name, the result riding on the top-most")
    func pop() {
        let a = sheet("a", path: [entry("e1"), entry("e2"), entry("e3")])
        let before = session(stack: [a])
        let events: [SessionEvent] = [
            .popped(entry("e3"), level: .presentation("a"), result: ["saved": true]),
            .popped(entry("e2"), level: .presentation("a"), result: nil),
        ]
        #expect(
            before.applying(change(events, stack: ["a"], paths: ["a": ["e1"]]))
                == expected(stack: [sheet("a", path: [entry("e1")])]))
        #expect(
            session(path: [entry("r1")], stack: []).applying(
                change([.popped(entry("r1"), level: .root, result: .null)], stack: []))
                == expected(stack: []))
    }

    @Test("an entry updated in place keeps its place with its new payload")
    func entryUpdated() {
        let before = session(path: [entry("r1"), entry("r2")], stack: [sheet("a", path: [entry("e1")])])
        let newR1 = entry("r1", payload: ["n": 1])
        let newE1 = entry("e1", payload: ["n": 2])
        let events: [SessionEvent] = [
            .entryUpdated(newR1, level: .root), .entryUpdated(newE1, level: .presentation("a")),
        ]
        #expect(
            before.applying(change(events, stack: ["a"], path: ["r1", "r2"], paths: ["a": ["e1"]]))
                == expected(path: [newR1, entry("r2")], stack: [sheet("a", path: [newE1])]))
    }

    @Test("a navigation's events, ended by navigated, give its whole target: modals, their paths and the root's")
    func navigated() {
        let (a, b) = (sheet("a", path: [entry("e1"), entry("e2")]), sheet("b", path: [entry("e3")]))
        let before = session(path: [entry("r1"), entry("r2")], stack: [a, b])
        // Keeps a, pops e2 from it, dismisses b with its path, pops r2, pushes r3, presents c with e4.
        let c = sheet("c")
        let events: [SessionEvent] = [
            .dismissed(dismissed(b)), .popped(entry("e2"), level: .presentation("a"), result: nil),
            .popped(entry("r2"), level: .root, result: nil), .pushed(entry("r3"), level: .root), .presented(c),
            .pushed(entry("e4"), level: .presentation("c")),
            .navigated(url: "myapp://downloads/42", route: "/downloads/{itemId}"),
        ]
        let paths = ["a": ["e1"], "c": ["e4"]]
        #expect(
            before.applying(change(events, stack: ["a", "c"], path: ["r1", "r3"], paths: paths))
                == expected(
                    path: [entry("r1"), entry("r3")],
                    stack: [sheet("a", path: [entry("e1")]), sheet("c", path: [entry("e4")])]))
        #expect(
            before.applying(
                change(
                    [.navigated(url: nil, route: nil)], stack: ["a", "b"], path: ["r1", "r2"],
                    paths: ["a": ["e1", "e2"], "b": ["e3"]])) != nil)
    }

    @Test("a dismissed container takes its path with it: the change's paths no longer name it")
    func dismissedContainerTakesItsPath() {
        let (a, b) = (sheet("a", path: [entry("e1")]), sheet("b", path: [entry("e2"), entry("e3")]))
        let before = session(stack: [a, b])
        let leaving = dismissed(b)
        #expect(
            leaving.path.map(\.id) == ["e2", "e3"], "a dismissed container keeps, in its dismissed state, its path")
        #expect(
            before.applying(change([.dismissed(leaving)], stack: ["a"], paths: ["a": ["e1"]])) == expected(stack: [a]))
        #expect(
            before.applying(change([.dismissed(leaving)], stack: ["a"], paths: ["a": ["e1"], "b": ["e2", "e3"]]))
                == nil)
    }

    @Test("path events that do not follow from the state, or ids the change did not leave, are nil")
    func inconsistentPaths() {
        let before = session(path: [entry("r1")], stack: [sheet("a", path: [entry("e1")]), alert("alert-x")])
        let ids: (stack: [String], path: [String]) = (["a", "alert-x"], ["r1"])
        func applying(_ events: [SessionEvent], path: [String] = ["r1"], paths: [String: [String]] = ["a": ["e1"]])
            -> Session?
        {
            before.applying(change(events, stack: ids.stack, path: path, paths: paths))
        }
        #expect(applying([]) != nil)
        // No such level: a presentation not on the stack, an alert, which has no path.
        #expect(applying([.pushed(entry("e2"), level: .presentation("gone"))]) == nil)
        #expect(applying([.pushed(entry("e2"), level: .presentation("alert-x"))]) == nil)
        // No such entry in that level, or one it already has.
        #expect(applying([.popped(entry("e1"), level: .root, result: nil)]) == nil)
        #expect(applying([.entryUpdated(entry("r2"), level: .root)]) == nil)
        #expect(applying([.pushed(entry("r1"), level: .root)], path: ["r1", "r1"]) == nil)
        // Ids that are not those derived: the root path, a container's, a container left out.
        #expect(applying([], path: []) == nil)
        #expect(applying([.pushed(entry("r2"), level: .root)], path: ["r1"]) == nil)
        #expect(applying([], paths: ["a": []]) == nil)
        #expect(applying([], paths: [:]) == nil)
        #expect(applying([], paths: ["a": ["e1"], "alert-x": []]) == nil)
    }
}
