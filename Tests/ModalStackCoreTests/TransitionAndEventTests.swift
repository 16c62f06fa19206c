import ModalStackCore
import ModalStackTestSupport
import Testing

@Suite("Transition plans and events")
struct TransitionAndEventTests {
    @Test("the plan keeps the common prefix, dismisses the rest top-down, presents the new bottom-up")
    func planShape() {
        let plan = TransitionPlan(from: shape(["a", "b", "c"]), to: shape(["a", "d", "e"]))
        #expect(
            plan.steps == [
                .dismiss(presentationID: "c"), .dismiss(presentationID: "b"), .present(presentationID: "d"),
                .present(presentationID: "e"),
            ])
        #expect(plan.json == [["dismiss": "c"], ["dismiss": "b"], ["present": "d"], ["present": "e"]])
        #expect(TransitionPlan(from: shape(["a"]), to: shape(["a"])).steps.isEmpty)
        #expect(TransitionPlan(from: shape([]), to: shape(["x"])).steps == [.present(presentationID: "x")])
    }

    @Test("applying the plan to the old stack yields the new one, for random stacks")
    func planProperty() {
        var generator = SeededGenerator(seed: 42)
        let alphabet = ["a", "b", "c", "d", "e", "f", "g", "h"]
        for _ in 0..<2000 {
            let old = randomStack(alphabet, &generator)
            let new = randomStack(alphabet, &generator)
            let plan = TransitionPlan(from: shape(old), to: shape(new))
            #expect(plan.applied(to: shape(old)) == shape(new), "\(old) → \(new)")
            let kept = zip(old, new).prefix { $0 == $1 }.count
            #expect(plan.steps.count == old.count + new.count - 2 * kept, "minimal for \(old) → \(new)")
        }
    }

    /// Containers with empty paths, by id.
    private func shape(_ ids: [String]) -> NavigationShape {
        NavigationShape(stack: ids.map { .init(presentationID: $0, path: []) })
    }

    /// A stack of distinct ids, as stacks are.
    private func randomStack(_ alphabet: [String], _ generator: inout SeededGenerator) -> [String] {
        var pool = alphabet
        var stack: [String] = []
        for _ in 0..<Int(generator.next() % 6) {
            stack.append(pool.remove(at: Int(generator.next() % UInt64(pool.count))))
        }
        return stack
    }

    @Test("every outcome carries its events and its transition; a no-op carries neither")
    func outcomeEvents() throws {
        let fixture = FixedContext()
        let created = try Session.unwritten(id: "s", at: fixture.now).applying(present("a"), in: fixture.context)
        #expect(created.change?.events.map(\.kind) == [.sessionCreated, .presented])
        #expect(created.change?.version == 1)
        #expect(created.change?.stackIDs == ["p1"])
        #expect(created.transition.steps == [.present(presentationID: "p1")])

        var session = try fixture.apply([present("b", content: alert()), present("c")], to: created.session)
        #expect(session.queue.map(\.id) == ["p3"])
        let dismissed = try session.applying(dismiss(result: ["buttonId": "delete"]), in: fixture.context)
        #expect(dismissed.change?.events.map(\.kind) == [.dismissed, .promoted])
        #expect(dismissed.change?.events.first?.presentation?.result == ["buttonId": "delete"])
        #expect(dismissed.transition.steps == [.dismiss(presentationID: "p2"), .present(presentationID: "p3")])
        session = dismissed.session

        let queued = try fixture.apply([present("sync", content: .progress(ProgressContent(total: 2)))], to: session)
        let queuedOutcome = try queued.applying(present("later"), in: fixture.context)
        #expect(queuedOutcome.change?.events.map(\.kind) == [.queued])
        #expect(queuedOutcome.change?.events.first?.details["position"] == 0)
        #expect(queuedOutcome.transition.steps.isEmpty)

        let same = try session.applying(present("c"), in: fixture.context)
        #expect(same.change == nil)
        #expect(same.transition.steps.isEmpty)

        let replaced = try session.applying(
            .replaceStack(ReplaceStackRequest(stack: [PresentRequest(destination: "z")])), in: fixture.context)
        #expect(replaced.change?.events.map(\.kind) == [.dismissed, .dismissed, .presented, .replaced])
        #expect(replaced.change?.events.last?.details["stack"] == [.string(replaced.session.stack[0].id)])

        let create = try Session.unwritten(id: "n", at: fixture.now).applying(
            .create(SessionOptions(ttlSeconds: 60)), in: fixture.context)
        #expect(create.change?.events.map(\.kind) == [.sessionCreated])
        #expect(create.session.version == 1)
        #expect(create.session.ttlSeconds == 60)
        #expect(create.session.expiresAt.millisecondsSinceEpoch == fixture.now.millisecondsSinceEpoch + 60_000)
        #expect(
            create.session.isExpired(at: Timestamp(millisecondsSinceEpoch: fixture.now.millisecondsSinceEpoch + 60_000))
        )
        #expect(
            !create.session.isExpired(
                at: Timestamp(millisecondsSinceEpoch: fixture.now.millisecondsSinceEpoch + 59_999)))
        let again = try create.session.applying(.create(SessionOptions(ttlSeconds: 60)), in: fixture.context)
        #expect(again.change == nil)
        #expect(again.session.ttlSeconds == 60)
    }

    @Test("a change's JSON form reads back as the same change")
    func changeRoundTrip() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b", content: alert())])
        let outcome = try session.applying(dismiss(result: ["buttonId": "cancel"]), in: fixture.context)
        let change = try #require(outcome.change)
        let decoded = try SessionChange(sessionID: "s", json: try JSONParser.parse(change.json.serialized()))
        #expect(decoded == change)
        #expect(change.flatEvents.first?.json["version"] == JSONValue(change.version))
        #expect(change.flatEvents.first?.json["type"] == "dismissed")
    }

    /// Found by the fuzzer's `stored-rows` target: a record whose stack names one presentation
    /// twice read as a change whose JSON form (two `paths` members of one key) did not read back.
    @Test("a change record whose stack names a presentation twice is refused")
    func changeWithRepeatedStackID() throws {
        let record = #"{"version":2,"at":"2026-12-01T00:00:00.000Z","events":[],"stack":["a","a"],"path":[]}"#
        #expect(throws: ModalError.self) { try SessionChange(sessionID: "s", json: JSONParser.parse(record)) }
        let distinct = #"{"version":2,"at":"2026-12-01T00:00:00.000Z","events":[],"stack":["a","b"],"path":[]}"#
        #expect(try SessionChange(sessionID: "s", json: JSONParser.parse(distinct)).stackIDs == ["a", "b"])
    }
}
