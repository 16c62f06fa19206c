import ModalStackCore
import ModalStackTestSupport
import Testing

@Suite("Whole navigations, plans across paths, and complete change records")
struct NavigationTests {
    let fixture = FixedContext()

    private func entry(_ destination: String, payload: JSONObject = [:]) -> PushRequest {
        PushRequest(destination: destination, payload: payload)
    }

    private func modal(_ destination: String, style: ModalContent = .sheet(SheetOptions()), path: [PushRequest] = [])
        -> NavigationRequest.Modal
    {
        .init(PresentRequest(destination: destination, content: style), path: path)
    }

    @Test("a navigation keeps identity along the common prefix, modals and entries, and plays in plan order")
    func keepsIdentity() throws {
        let start = try fixture.apply([
            .navigate(
                NavigationRequest(
                    path: [entry("home")],
                    stack: [modal("settings", path: [entry("privacy"), entry("cookies")]), modal("help")]))
        ])
        let settings = start.stack[0]
        let target = NavigationRequest(
            path: [entry("home", payload: ["tab": 2])],
            stack: [modal("settings", path: [entry("privacy"), entry("account")]), modal("profile")])
        let outcome = try start.applying(.navigate(target), in: fixture.context)
        let after = outcome.session
        #expect(after.path[0].id == start.path[0].id)
        #expect(after.path[0].payload == ["tab": 2])
        #expect(after.stack[0].id == settings.id)
        #expect(after.stack[0].path[0].id == settings.path[0].id)
        #expect(after.stack[0].path.map(\.destination) == ["privacy", "account"])
        #expect(after.stack[1].id != start.stack[1].id)
        let level = NavigationLevel.presentation(id: settings.id)
        #expect(
            outcome.transition.steps == [
                .dismiss(presentationID: start.stack[1].id), .pop(entryID: settings.path[1].id, level: level),
                .push(entryID: after.stack[0].path[1].id, level: level), .present(presentationID: after.stack[1].id),
            ])
        #expect(
            outcome.change?.events.map(\.kind) == [
                .dismissed, .popped, .entryUpdated, .pushed, .presented, .navigated,
            ])
        #expect(try start.applying(try #require(outcome.change)) == after)
        #expect(!(try after.applying(.navigate(target), in: fixture.context)).changed, "the same target again")
    }

    @Test("a navigation follows PUT /stack's rules: locks, depths, keys in the queue, alert-like paths")
    func rules() throws {
        fixture.rules.maxPathDepth = 1
        let locked = try fixture.apply([
            present("pay", locked: true), present("ask", content: alert()), present("later"),
        ])
        let cases: [(NavigationRequest, ModalError.Kind)] = [
            (NavigationRequest(path: [], stack: []), .locked),
            (NavigationRequest(path: [entry("a"), entry("b")], stack: [modal("pay")]), .pathFull),
            (NavigationRequest(path: [], stack: [modal("pay"), modal("later")]), .alreadyPresented),
        ]
        for (request, kind) in cases {
            #expect {
                _ = try locked.applying(.navigate(request), in: fixture.context)
            } throws: { ($0 as? ModalError)?.kind == kind }
        }
        let forced = try locked.applying(
            .navigate(NavigationRequest(path: [], stack: [], force: true)), in: fixture.context)
        #expect(forced.dismissed.map(\.destination) == ["ask", "pay"])
        #expect(forced.promoted.map(\.destination) == ["later"], "the queue moves up once the alert is gone")

        #expect {
            _ = try NavigationRequest(json: [
                "path": [], "stack": [["destination": "ask", "style": "alert", "title": "?", "path": []]],
            ])
        } throws: { ($0 as? ModalError)?.fieldErrors.map(\.pointer) == ["/stack/0/path"] }
        #expect {
            _ = try NavigationRequest(json: ["path": [["destination": "a"], ["destination": "a"]], "stack": []])
        } throws: { ($0 as? ModalError)?.fieldErrors.map(\.pointer) == ["/path/1/key"] }
    }

    @Test("a replace of the stack logs what it presents and updates, and keeps the paths of what it keeps")
    func replaceIsComplete() throws {
        let start = try fixture.apply([
            present("settings", payload: ["v": 1]), .push(PushRequest(destination: "privacy")), present("help"),
        ])
        let outcome = try start.applying(
            .replaceStack(
                ReplaceStackRequest(stack: [
                    PresentRequest(destination: "settings", payload: ["v": 2]), PresentRequest(destination: "new"),
                ])), in: fixture.context)
        #expect(outcome.change?.events.map(\.kind) == [.dismissed, .updated, .presented, .replaced])
        #expect(outcome.session.stack[0].path.map(\.destination) == ["privacy"])
        #expect(try start.applying(try #require(outcome.change)) == outcome.session)
    }

    @Test("the plan from any navigation to any other, played on the old, gives the new (seeded)")
    func planProperty() {
        var random = SeededGenerator(seed: 28)
        for round in 0..<3000 {
            let old = randomShape(&random)
            let new = randomShape(&random)
            let plan = TransitionPlan(from: old, to: new)
            #expect(plan.applied(to: old) == new, "round \(round): \(old) → \(new)")
        }
    }

    /// Modals from a small pool (so that prefixes are shared), each with a path from another pool.
    private func randomShape(_ random: inout SeededGenerator) -> NavigationShape {
        func ids(_ prefix: String, _ count: Int) -> [String] {
            (0..<count).map { "\(prefix)\($0 + Int(random.next() % 2) * 10)" }
        }
        func unique(_ list: [String]) -> [String] {
            var seen: Set<String> = []
            return list.filter { seen.insert($0).inserted }
        }
        let stack = unique(ids("m", Int(random.next() % 5))).map { id in
            NavigationShape.Level(presentationID: id, path: unique(ids(id + "e", Int(random.next() % 4))))
        }
        return NavigationShape(path: unique(ids("r", Int(random.next() % 4))), stack: stack)
    }

    @Test("every change record, applied to the version before, gives the version after (seeded random sequences)")
    func changesAreComplete() throws {
        var random = SeededGenerator(seed: 2028)
        fixture.rules.maxDepth = 4
        fixture.rules.queueSize = 3
        fixture.rules.maxPathDepth = 4
        fixture.catalog = try Catalog(json: [
            "destinations": [
                "a": [:], "b": [:], "c": [:],
                "item": ["payload": ["type": "object", "properties": ["id": ["type": "integer"]]]],
            ],
            "routes": [
                [
                    "url": "/items/{id}",
                    "navigate": [
                        "stack": [["destination": "a", "path": [["destination": "item", "payload": ["id": "{id}"]]]]]
                    ],
                ],
                ["url": "/push/{id}", "push": ["destination": "item", "key": "item-{id}", "payload": ["id": "{id}"]]],
                ["url": "/alert", "present": ["destination": "c", "style": "alert", "title": "Hi"], "clear": true],
                ["url": "/replace", "replacePath": [["destination": "b"], ["destination": "c"]]],
            ],
        ])
        let catalog = try #require(fixture.catalog)
        var applied = 0
        for _ in 0..<40 {
            var session = Session.unwritten(id: "s", at: fixture.now)
            for step in 0..<60 {
                fixture.now = Timestamp(millisecondsSinceEpoch: fixture.now.millisecondsSinceEpoch + 7)
                let command = try randomCommand(session, catalog, &random)
                guard let outcome = try? session.applying(command, in: fixture.context) else { continue }
                if let change = outcome.change {
                    let base =
                        session.version == 0
                        ? Session.unwritten(id: "s", at: Timestamp(millisecondsSinceEpoch: 0)) : session
                    let replayed = try base.applying(change)
                    #expect(replayed == outcome.session, "step \(step): \(command)")
                    applied += 1
                    // Through the stored form too: what the log and the stream carry.
                    let stored = try SessionChange(sessionID: "s", json: JSONParser.parse(change.serialized()))
                    #expect(stored == change, "step \(step): the record reads back as written")
                }
                #expect(
                    normalized(outcome.transition.applied(to: NavigationShape(session)))
                        == normalized(NavigationShape(outcome.session)))
                session = outcome.session
            }
        }
        #expect(applied > 1500, "the sequences changed the session \(applied) times")
    }

    /// A shape as a plan played from ids gives it: alert-like levels with an empty path.
    private func normalized(_ shape: NavigationShape) -> NavigationShape {
        var shape = shape
        for index in shape.stack.indices where shape.stack[index].path == nil { shape.stack[index].path = [] }
        return shape
    }

    private func randomCommand(_ session: Session, _ catalog: Catalog, _ random: inout SeededGenerator) throws
        -> Command
    {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        let destinations = ["a", "b", "c"]
        func someEntry() -> PushRequest {
            PushRequest(destination: pick(["item", "a", "b"]), payload: ["id": JSONValue(Int(random.next() % 3))])
        }
        let someLevel: NavigationLevel? = pick([nil, .root] + session.stack.map { .presentation(id: $0.id) })
        switch random.next() % 12 {
        case 0, 1: return present(pick(destinations), payload: ["n": JSONValue(Int(random.next() % 3))])
        case 2: return present(pick(destinations), content: alert())
        case 3: return dismiss(pick([.top, .all, .count(2)]), result: pick([nil, ["buttonId": "cancel"]]))
        case 4, 5:
            return .push(
                PushRequest(
                    destination: pick(["item", "b"]), payload: ["id": JSONValue(Int(random.next() % 3))],
                    level: someLevel))
        case 6: return .pop(PopRequest(pick([.top, .all, .count(2)]), level: someLevel, result: pick([nil, "r"])))
        case 7:
            let stack = (0..<Int(random.next() % 4)).map { index in
                NavigationRequest.Modal(
                    PresentRequest(destination: destinations[index], payload: ["n": JSONValue(Int(random.next() % 2))]),
                    path: (0..<Int(random.next() % 3)).map { _ in someEntry() }.uniqueByKey())
            }
            return .navigate(
                NavigationRequest(
                    path: (0..<Int(random.next() % 3)).map { _ in someEntry() }.uniqueByKey(), stack: stack))
        case 8:
            return .replaceStack(
                ReplaceStackRequest(
                    stack: destinations.prefix(Int(random.next() % 4)).map {
                        PresentRequest(destination: $0, payload: ["n": JSONValue(Int(random.next() % 2))])
                    }))
        case 9:
            guard let target = session.stack.last ?? session.queue.first else { return dismiss() }
            return .update(presentationID: target.id, UpdateRequest(payload: ["u": JSONValue(Int(random.next() % 3))]))
        case 10:
            return .openLink(
                try catalog.resolve(
                    pick(["/items/\(random.next() % 3)", "myapp://push/\(random.next() % 2)", "/alert", "/replace"])))
        default:
            return .create(SessionOptions(ttlSeconds: 60))
        }
    }
}

extension Array where Element == PushRequest {
    /// Keys unique, as a request body must have them.
    fileprivate func uniqueByKey() -> [PushRequest] {
        var seen: Set<String> = []
        return filter { seen.insert($0.key).inserted }
    }
}
