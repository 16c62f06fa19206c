import ModalStackCore
import Testing

@Suite("Push paths: push, pop, levels")
struct PathTests {
    let fixture = FixedContext()

    private func push(
        _ destination: String, key: String? = nil, level: NavigationLevel? = nil, payload: JSONObject = [:]
    )
        -> Command
    {
        .push(PushRequest(destination: destination, payload: payload, key: key, level: level))
    }

    private func pop(_ target: PopTarget = .top, level: NavigationLevel? = nil, result: JSONValue? = nil) -> Command {
        .pop(PopRequest(target, level: level, result: result))
    }

    @Test("a push goes onto the top-most container, else the root; the first push creates the session")
    func defaultLevel() throws {
        let rootPushed = try Session.unwritten(id: "s", at: fixture.now).applying(push("home"), in: fixture.context)
        #expect(rootPushed.session.version == 1)
        #expect(rootPushed.session.path.map(\.destination) == ["home"])
        #expect(rootPushed.change?.events.map(\.kind) == [.sessionCreated, .pushed])
        #expect(rootPushed.effect == .pushed(rootPushed.session.path[0], level: .root))

        let session = try fixture.apply(
            [present("settings"), present("ask", content: alert())], to: rootPushed.session)
        let pushed = try session.applying(push("privacy"), in: fixture.context)
        let settings = session.stack[0]
        #expect(pushed.session.stack[0].path.map(\.destination) == ["privacy"], "beneath the alert, not queued")
        #expect(pushed.session.queue.isEmpty)
        #expect(
            pushed.transition.steps == [
                .push(entryID: pushed.session.stack[0].path[0].id, level: .presentation(id: settings.id))
            ])
    }

    @Test("a level must be the root or a container on the stack")
    func levelNotFound() throws {
        let session = try fixture.apply([
            present("settings"), present("ask", content: alert()), present("later"),
        ])
        let alertID = session.stack[1].id
        let queuedID = session.queue[0].id
        for (level, words) in [(alertID, "alert-like"), (queuedID, "queued"), ("nope", "no presentation")] {
            #expect {
                _ = try session.applying(push("x", level: .presentation(id: level)), in: fixture.context)
            } throws: { error in
                let error = error as? ModalError
                return error?.kind == .levelNotFound && error?.detail.contains(words) == true
                    && error?.context["level"] == .string(level)
            }
        }
        let rootPush = try session.applying(push("home", level: .root), in: fixture.context)
        #expect(rootPush.session.path.map(\.destination) == ["home"])
    }

    @Test("the last entry's key pushed again updates it in place; a key elsewhere in the path is refused")
    func keys() throws {
        let session = try fixture.apply([push("a", payload: ["n": 1]), push("b")])
        let sameAgain = try session.applying(push("b"), in: fixture.context)
        #expect(!sameAgain.changed)
        let updated = try session.applying(push("b", payload: ["n": 2]), in: fixture.context)
        #expect(updated.session.path.map(\.id) == session.path.map(\.id))
        #expect(updated.session.path[1].payload == ["n": 2])
        #expect(updated.change?.events.map(\.kind) == [.entryUpdated])
        #expect(throws: ModalError.self) { _ = try session.applying(push("a"), in: self.fixture.context) }
        do {
            _ = try session.applying(push("other", key: "b"), in: fixture.context)
            Issue.record("a key taken with another destination was accepted")
        } catch {
            #expect(error.kind == .alreadyPushed)
            #expect(error.context["position"] == 1)
            #expect(error.context["entryId"] == .string(session.path[1].id))
        }
    }

    @Test("a path holds at most maxPathDepth entries")
    func pathFull() throws {
        fixture.rules.maxPathDepth = 2
        let session = try fixture.apply([push("a"), push("b")])
        do {
            _ = try session.applying(push("c"), in: fixture.context)
            Issue.record("a third push was accepted")
        } catch {
            #expect(error.kind == .pathFull)
            #expect(error.context["maxPathDepth"] == 2)
        }
    }

    @Test("pops: one, a count, down to an entry, all; the result goes with the top-most popped")
    func pops() throws {
        let session = try fixture.apply([push("a"), push("b"), push("c"), push("d")])
        let ids = session.path.map(\.id)
        let one = try session.applying(pop(result: ["picked": 3]), in: fixture.context)
        #expect(one.session.path.map(\.id) == Array(ids.prefix(3)))
        #expect(one.change?.events.first?.details["result"] == ["picked": 3])
        #expect(one.transition.steps == [.pop(entryID: ids[3], level: .root)])

        let two = try session.applying(pop(.count(2)), in: fixture.context)
        #expect(two.session.path.map(\.id) == Array(ids.prefix(2)))
        #expect(two.effect == .popped([session.path[3], session.path[2]], level: .root))

        let toFirst = try session.applying(pop(.above(entryID: ids[0]), result: "r"), in: fixture.context)
        #expect(toFirst.session.path.map(\.id) == [ids[0]])
        #expect(toFirst.change?.events.map { $0.details["result"] } == ["r", nil, nil])

        let all = try session.applying(pop(.all), in: fixture.context)
        #expect(all.session.path.isEmpty)

        for (target, kind) in [
            (PopTarget.count(5), ModalError.Kind.nothingToPop), (.above(entryID: ids[3]), .nothingToPop),
            (.above(entryID: "zz"), .entryNotFound),
        ] {
            #expect {
                _ = try session.applying(pop(target), in: fixture.context)
            } throws: { ($0 as? ModalError)?.kind == kind }
        }
        #expect {
            _ = try Session.unwritten(id: "e", at: fixture.now).applying(pop(), in: fixture.context)
        } throws: { ($0 as? ModalError)?.kind == .nothingToPop }
    }

    @Test("a pop never crosses into dismissing a modal")
    func popStaysInItsLevel() throws {
        let session = try fixture.apply([push("home"), present("settings")])
        #expect {
            _ = try session.applying(pop(), in: fixture.context)
        } throws: { ($0 as? ModalError)?.kind == .nothingToPop }
        let rootPop = try session.applying(pop(level: .root), in: fixture.context)
        #expect(rootPop.session.path.isEmpty)
        #expect(rootPop.session.stack.count == 1)
    }

    @Test("dismissing a container takes its path with it, and the dismissed event carries it")
    func dismissTakesPath() throws {
        let session = try fixture.apply([present("settings"), push("privacy"), push("cookies")])
        let dismissed = try session.applying(dismiss(), in: fixture.context)
        let event = try #require(dismissed.change?.events.first)
        #expect(event.kind == .dismissed)
        #expect(event.presentation?.path.map(\.destination) == ["privacy", "cookies"])
        #expect(dismissed.transition.steps == [.dismiss(presentationID: session.stack[0].id)])
    }

    @Test("with a catalog, only destinations that allow push are pushed, their payloads checked")
    func catalog() throws {
        fixture.catalog = try Catalog(json: [
            "destinations": [
                "settings": ["styles": ["sheet"]],
                "item": [
                    "styles": ["push"],
                    "payload": ["type": "object", "properties": ["id": ["type": "integer"]], "required": ["id"]],
                ],
            ]
        ])
        let session = Session.unwritten(id: "s", at: fixture.now)
        do {
            _ = try session.applying(push("settings"), in: fixture.context)
            Issue.record("a destination without push was pushed")
        } catch {
            #expect(error.kind == .validationFailed)
            #expect(error.fieldErrors.map(\.pointer) == ["/destination"])
        }
        do {
            _ = try session.applying(push("item", payload: ["id": "x"]), in: fixture.context)
            Issue.record("a bad payload was pushed")
        } catch {
            #expect(error.fieldErrors.map(\.pointer) == ["/payload/id"])
        }
        #expect(try session.applying(push("item", payload: ["id": 4]), in: fixture.context).changed)
    }
}
