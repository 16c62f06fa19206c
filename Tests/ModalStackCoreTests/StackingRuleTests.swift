import ModalStackCore
import Testing

@Suite("Stacking rules, the queue, locks and results")
struct StackingRuleTests {
    @Test("an alert goes on top; anything presented over it waits in the queue (202-style outcome)")
    func alertBlocksAndQueues() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("onboarding"), present("deleteConfirm", content: alert())])
        #expect(session.top?.style == .alert)
        let outcome = try session.applying(present("downloads"), in: fixture.context)
        guard case .queued(let queued, let position) = outcome.effect else {
            Issue.record("expected queued, got \(outcome.effect)")
            return
        }
        #expect(position == 0)
        #expect(queued.state == .queued)
        #expect(queued.presentedAt == nil)
        #expect(outcome.session.queue.map(\.id) == [queued.id])
        #expect(outcome.session.stack.count == 2)
        #expect(outcome.session.version == session.version + 1)
    }

    @Test("at most one alert-like modal: a second one queues, or is refused naming the rule")
    func oneAlertAtATime() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("sync", content: .progress(ProgressContent(total: 10)))])
        let queued = try session.applying(present("saved", content: alert("Saved")), in: fixture.context)
        guard case .queued = queued.effect else {
            Issue.record("expected queued")
            return
        }
        let error = #expect(throws: ModalError.self) {
            try session.applying(present("saved", content: alert("Saved"), whenBlocked: .reject), in: fixture.context)
        }
        #expect(error?.kind == .alertOnTop)
    }

    @Test("a full stack queues by default and rejects with stack-full on request")
    func depthQueues() throws {
        let fixture = FixedContext()
        fixture.rules.maxDepth = 2
        let session = try fixture.apply([present("a"), present("b")])
        let outcome = try session.applying(present("c"), in: fixture.context)
        #expect(outcome.session.queue.map(\.destination) == ["c"])
        let error = #expect(throws: ModalError.self) {
            try session.applying(present("c", whenBlocked: .reject), in: fixture.context)
        }
        #expect(error?.kind == .stackFull)
    }

    @Test("the queue is FIFO, bounded, and a new present waits behind it")
    func queueOrderAndBound() throws {
        let fixture = FixedContext()
        fixture.rules.maxDepth = 1
        fixture.rules.queueSize = 2
        var session = try fixture.apply([present("a"), present("b"), present("c")])
        #expect(session.queue.map(\.destination) == ["b", "c"])
        let full = #expect(throws: ModalError.self) { try session.applying(present("d"), in: fixture.context) }
        #expect(full?.kind == .queueFull)
        let behind = #expect(throws: ModalError.self) {
            try session.applying(present("d", whenBlocked: .reject), in: fixture.context)
        }
        #expect(behind?.kind == .stackFull)
        session = try fixture.apply([dismiss()], to: session)
        #expect(session.stack.map(\.destination) == ["b"])
        #expect(session.queue.map(\.destination) == ["c"])
    }

    @Test("a dismiss promotes as many queued entries as the rules allow, in the same version")
    func promotion() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([
            present("onboarding"), present("deleteConfirm", content: alert()), present("downloads"), present("profile"),
            present("saved", content: alert("Saved")), present("help"),
        ])
        #expect(session.queue.map(\.destination) == ["downloads", "profile", "saved", "help"])
        let outcome = try session.applying(dismiss(), in: fixture.context)
        #expect(outcome.promoted.map(\.destination) == ["downloads", "profile", "saved"])
        #expect(outcome.promoted.allSatisfy { $0.state == .presented && $0.presentedAt == fixture.now })
        #expect(outcome.session.stack.map(\.destination) == ["onboarding", "downloads", "profile", "saved"])
        #expect(outcome.session.queue.map(\.destination) == ["help"])
        #expect(outcome.session.version == session.version + 1)
    }

    @Test("a queued entry can be cancelled like a presented one")
    func cancelQueued() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a", content: alert()), present("b"), present("c")])
        let queuedID = session.queue[0].id
        let outcome = try session.applying(dismiss(.presentation(id: queuedID)), in: fixture.context)
        #expect(outcome.session.queue.map(\.destination) == ["c"])
        #expect(outcome.session.stack.map(\.destination) == ["a"])
        #expect(outcome.dismissed.map(\.id) == [queuedID])
        #expect(outcome.dismissed.first?.state == .dismissed)
    }

    @Test("keys are unique across the stack and the queue")
    func keysIncludeQueue() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a", content: alert()), present("b")])
        let error = #expect(throws: ModalError.self) { try session.applying(present("b"), in: fixture.context) }
        #expect(error?.kind == .alreadyPresented)
        #expect(error?.context["state"] == "queued")
    }

    @Test("a locked presentation refuses every dismiss that would remove it, unless forced")
    func locks() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("paywall", locked: true), present("help")])
        _ = try session.applying(dismiss(), in: fixture.context)
        for target: DismissTarget in [.all, .count(2), .presentation(id: session.stack[0].id)] {
            let error = #expect(throws: ModalError.self) { try session.applying(dismiss(target), in: fixture.context) }
            #expect(error?.kind == .locked)
            #expect(error?.context["presentationId"] == .string(session.stack[0].id))
        }
        let forced = try session.applying(dismiss(.all, force: true), in: fixture.context)
        #expect(forced.session.stack.isEmpty)
        let replace = ReplaceStackRequest(stack: [PresentRequest(destination: "home")])
        #expect(throws: ModalError.self) { try session.applying(.replaceStack(replace), in: fixture.context) }
        var forcedReplace = replace
        forcedReplace.force = true
        #expect(
            try session.applying(.replaceStack(forcedReplace), in: fixture.context).session.stack.map(\.destination)
                == ["home"])
    }

    @Test("locked on an update in place or on an entry a replacement keeps is applied; absent, the lock stays")
    func locksOnKeptPresentations() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("paywall"), present("help")])
        let lockedInPlace = try session.applying(present("help", payload: ["a": 1], locked: true), in: fixture.context)
        #expect(lockedInPlace.session.top?.locked == true)
        #expect(lockedInPlace.change?.events.map(\.kind) == [.updated])
        let stillLocked = try lockedInPlace.session.applying(present("help", payload: ["a": 2]), in: fixture.context)
        #expect(stillLocked.session.top?.locked == true)
        #expect(throws: ModalError.self) { try stillLocked.session.applying(dismiss(), in: fixture.context) }
        let unlocked = try stillLocked.session.applying(present("help", locked: false), in: fixture.context)
        #expect(unlocked.session.top?.locked == false)

        let keptAndLocked = try session.applying(
            .replaceStack(
                ReplaceStackRequest(stack: [PresentRequest(destination: "paywall", locked: true)], force: false)),
            in: fixture.context)
        #expect(keptAndLocked.session.stack.map(\.id) == [session.stack[0].id])
        #expect(keptAndLocked.session.stack[0].locked)
        #expect(keptAndLocked.change?.events.map(\.kind).contains(.updated) == true)
        let replaceAway = ReplaceStackRequest(stack: [PresentRequest(destination: "home")])
        let error = #expect(throws: ModalError.self) {
            try keptAndLocked.session.applying(.replaceStack(replaceAway), in: fixture.context)
        }
        #expect(error?.kind == .locked)
        let keptAsItWas = try keptAndLocked.session.applying(
            .replaceStack(ReplaceStackRequest(stack: [PresentRequest(destination: "paywall")])), in: fixture.context)
        #expect(keptAsItWas.session.stack[0].locked)
        #expect(!keptAsItWas.changed)
    }

    @Test("an alert's result must name one of its buttons; without one its cancel button is recorded")
    func alertResults() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("deleteConfirm", content: alert())])
        let chosen = try session.applying(dismiss(result: ["buttonId": "delete"]), in: fixture.context)
        #expect(chosen.dismissed.first?.result == ["buttonId": "delete"])
        #expect(chosen.dismissed.first?.dismissedAt == fixture.now)
        let cancelled = try session.applying(dismiss(), in: fixture.context)
        #expect(cancelled.dismissed.first?.result == ["buttonId": "cancel"])
        let wrong = #expect(throws: ModalError.self) {
            try session.applying(dismiss(result: ["buttonId": "maybe"]), in: fixture.context)
        }
        #expect(wrong?.fieldErrors.map(\.pointer) == ["/result/buttonId"])
        let okOnly = try fixture.apply([present("saved", content: .alert(AlertContent(title: "Saved")))])
        #expect(try okOnly.applying(dismiss(), in: fixture.context).dismissed.first?.result == nil)
    }

    @Test("a result goes to the presentation the dismiss names, or the top")
    func resultTarget() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("b"), present("c")])
        let named = try session.applying(dismiss(.presentation(id: "p2"), result: ["saved": true]), in: fixture.context)
        #expect(named.dismissed.map(\.id) == ["p3", "p2"])
        #expect(named.dismissed.map(\.result) == [nil, ["saved": true]])
        let top = try session.applying(dismiss(.count(2), result: 7), in: fixture.context)
        #expect(top.dismissed.map(\.result) == [7, nil])
    }

    @Test("PATCH updates a progress in place; completed stays within 0…total")
    func progressUpdates() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([
            present("onboarding"), present("sync", content: .progress(ProgressContent(message: "Syncing", total: 10))),
        ])
        let id = session.stack[1].id
        let outcome = try session.applying(
            .update(presentationID: id, UpdateRequest(completed: 4)), in: fixture.context)
        #expect(
            outcome.session.stack[1].content == .progress(ProgressContent(message: "Syncing", total: 10, completed: 4)))
        #expect(outcome.session.stack.map(\.id) == session.stack.map(\.id))
        #expect(outcome.session.version == session.version + 1)
        let over = #expect(throws: ModalError.self) {
            try session.applying(.update(presentationID: id, UpdateRequest(completed: 11)), in: fixture.context)
        }
        #expect(over?.fieldErrors.map(\.pointer) == ["/completed"])
        let shrink = #expect(throws: ModalError.self) {
            try outcome.session.applying(.update(presentationID: id, UpdateRequest(total: 3)), in: fixture.context)
        }
        #expect(shrink?.fieldErrors.map(\.pointer) == ["/total"])
        let sheetID = session.stack[0].id
        let notProgress = #expect(throws: ModalError.self) {
            try session.applying(.update(presentationID: sheetID, UpdateRequest(completed: 1)), in: fixture.context)
        }
        #expect(notProgress?.fieldErrors.map(\.pointer) == ["/completed"])
        let payload = try session.applying(
            .update(presentationID: sheetID, UpdateRequest(payload: ["page": 2])), in: fixture.context)
        #expect(payload.session.stack[0].payload == ["page": 2])
        let same = try payload.session.applying(
            .update(presentationID: sheetID, UpdateRequest(payload: ["page": 2])), in: fixture.context)
        #expect(!same.changed)
        let missing = #expect(throws: ModalError.self) {
            try session.applying(.update(presentationID: "nope", UpdateRequest(completed: 1)), in: fixture.context)
        }
        #expect(missing?.kind == .presentationNotFound)
    }

    @Test("a replace promotes from the queue and dismisses what it removed")
    func replaceWithQueue() throws {
        let fixture = FixedContext()
        let session = try fixture.apply([present("a"), present("deleteConfirm", content: alert()), present("b")])
        let outcome = try session.applying(
            .replaceStack(ReplaceStackRequest(stack: [PresentRequest(destination: "a")])), in: fixture.context)
        #expect(outcome.dismissed.map(\.destination) == ["deleteConfirm"])
        #expect(outcome.dismissed.first?.result == ["buttonId": "cancel"])
        #expect(outcome.promoted.map(\.destination) == ["b"])
        #expect(outcome.session.stack.map(\.destination) == ["a", "b"])
        #expect(outcome.session.queue.isEmpty)
    }

    @Test("a catalog refuses unknown destinations, disallowed styles and bad payloads")
    func catalogChecks() throws {
        let catalog = try Catalog.load(
            Array(
                #"""
                {"destinations": {
                  "settings": {"styles": ["sheet"]},
                  "help": {"styles": ["sheet"], "payload": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}, "required": ["text"]}}
                }}
                """#.utf8))
        let fixture = FixedContext()
        fixture.catalog = catalog
        let session = Session.unwritten(id: "s", at: fixture.now)
        let unknown = #expect(throws: ModalError.self) { try session.applying(present("nowhere"), in: fixture.context) }
        #expect(unknown?.fieldErrors.map(\.pointer) == ["/destination"])
        #expect(unknown?.fieldErrors.first?.message.contains("settings") == true)
        let style = #expect(throws: ModalError.self) {
            try session.applying(present("settings", content: .fullScreenCover), in: fixture.context)
        }
        #expect(style?.fieldErrors.map(\.pointer) == ["/style"])
        let payload = #expect(throws: ModalError.self) {
            try session.applying(present("help", payload: ["text": "too long"]), in: fixture.context)
        }
        #expect(payload?.fieldErrors.map(\.pointer) == ["/payload/text"])
        #expect(try session.applying(present("help", payload: ["text": "hi"]), in: fixture.context).changed)
    }
}
