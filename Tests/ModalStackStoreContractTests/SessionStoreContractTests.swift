import Dispatch
import Locking
import ModalStackCore
import ModalStackStore
import ModalStackTestSupport
import Testing

private typealias Fixtures = StoreFixtures

/// What every ``SessionStore`` promises, run against each engine of ``StoreEngine/all``.
@Suite("SessionStore contract")
struct SessionStoreContractTests {
    @Test("a new store reads nothing", arguments: StoreEngine.all)
    func empty(engine: StoreEngine) throws {
        let store = try engine()
        #expect(try store.session(id: "missing") == nil)
        #expect(try store.sessionCount() == 0)
        #expect(try store.changes(sessionID: "missing", after: 0, eventLimit: 10).isEmpty)
        #expect(try store.change(sessionID: "missing", version: 1) == nil)
        #expect(try store.dismissedPresentation(id: "p", sessionID: "missing") == nil)
        #expect(try store.idempotentResponse(scope: "", key: "k") == nil)
        #expect(try store.recentSessions(after: nil, limit: 10, at: Timestamp(millisecondsSinceEpoch: 0)).isEmpty)
        #expect(try store.expiredSessionIDs(at: Timestamp(millisecondsSinceEpoch: Int64.max / 2), limit: 10).isEmpty)
        try store.commit([])
    }

    @Test("a saved session reads back exactly, payload numbers and text included", arguments: StoreEngine.all)
    func roundTrip(engine: StoreEngine) throws {
        let store = try engine()
        let session = Fixtures.session("s1")
        try store.commit([Fixtures.save(session)])
        #expect(try store.session(id: "s1") == session)
        #expect(try store.sessionCount() == 1)
    }

    @Test(
        "a read by stamp transfers nothing while the stamp is the stored one, else the session; alone or in a crowd",
        arguments: StoreEngine.all)
    func readByStamp(engine: StoreEngine) throws {
        let store = try engine()
        let current = Fixtures.session("s1", version: 2)
        try store.commit([Fixtures.save(Fixtures.session("s1")), Fixtures.save(current)])
        var remade = current
        remade.createdAt = Timestamp(millisecondsSinceEpoch: current.createdAt.millisecondsSinceEpoch + 1)
        // What the caller holds, and what the store must answer to it.
        let cases: [(held: SessionStamp?, id: String, expected: StoredSession)] = [
            (SessionStamp(current), "s1", .unchanged),
            (SessionStamp(Fixtures.session("s1")), "s1", .changed(current)),
            (SessionStamp(remade), "s1", .changed(current)),
            (nil, "s1", .changed(current)),
            (SessionStamp(current), "gone", .changed(nil)),
            (nil, "gone", .changed(nil)),
        ]
        for (held, id, expected) in cases {
            #expect(try store.session(id: id, unlessAt: held) == expected)
        }
        // Every case at once, ten times over: answered alike however a store groups them.
        let answers = LockedValue([Int: [StoredSession]]())
        let done = DispatchGroup()
        for _ in 0..<10 {
            for (index, read) in cases.enumerated() {
                done.enter()
                store.session(id: read.id, unlessAt: read.held) { stored in
                    answers.withLock { $0[index, default: []].append(try! stored.get()) }
                    done.leave()
                }
            }
        }
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
        for (index, read) in cases.enumerated() {
            #expect(answers.withLock { $0[index] } == Array(repeating: read.expected, count: 10), "case \(index)")
        }
    }

    @Test("a later version overwrites; createdAt stays; delete removes", arguments: StoreEngine.all)
    func overwriteAndDelete(engine: StoreEngine) throws {
        let store = try engine()
        try store.commit([Fixtures.save(Fixtures.session("s1"))])
        var next = Fixtures.session("s1", version: 2, stackSize: 1)
        next.createdAt = Timestamp(millisecondsSinceEpoch: 5)
        try store.commit([Fixtures.save(next)])
        let read = try #require(try store.session(id: "s1"))
        #expect(read.version == 2)
        #expect(read.stack.count == 1)
        #expect(read.createdAt == Fixtures.session("s1").createdAt)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.session(id: "s1") == nil)
        #expect(try store.sessionCount() == 0)
    }

    @Test("many writes in one commit all land, deletions included", arguments: StoreEngine.all)
    func batch(engine: StoreEngine) throws {
        let store = try engine()
        let sessions = (0..<50).map { Fixtures.session("s\($0)", stackSize: $0 % 4) }
        try store.commit(sessions.map { Fixtures.save($0) } + [.delete(sessionID: "s7")])
        for session in sessions {
            let expected: Session? = session.id == "s7" ? nil : session
            #expect(try store.session(id: session.id) == expected)
        }
        #expect(try store.sessionCount() == 49)
    }

    @Test("a failing write in a commit writes nothing of that commit", arguments: StoreEngine.all)
    func failingWriteRollsBack(engine: StoreEngine) throws {
        let store = try engine()
        let kept = Fixtures.session("kept")
        try store.commit([Fixtures.save(kept)])
        try store.poison("poisoned")
        var changed = kept
        changed.version = 2
        let response = StoredResponse(
            scope: "kept", key: "k", fingerprint: [1], status: 200, headers: [:], body: [2],
            createdAt: Timestamp(millisecondsSinceEpoch: ManualTime().wallMilliseconds()))
        let error = #expect(throws: StoreError.self) {
            try store.commit([
                Fixtures.save(changed, response: response), Fixtures.save(Fixtures.session("new")),
                Fixtures.save(Fixtures.session("poisoned")), .delete(sessionID: "kept"),
            ])
        }
        #expect(error?.kind == .failed)
        #expect(try store.session(id: "kept") == kept)
        #expect(try store.session(id: "new") == nil)
        #expect(try store.change(sessionID: "kept", version: 2) == nil)
        #expect(try store.idempotentResponse(scope: "kept", key: "k") == nil)
        // And the store goes on: the next commit lands.
        try store.commit([Fixtures.save(changed)])
        #expect(try store.session(id: "kept") == changed)
    }

    @Test("expiry follows every save, and the sweep lists sessions whose time ran out", arguments: StoreEngine.all)
    func expiryFollowsSaves(engine: StoreEngine) throws {
        let store = try engine()
        var session = Fixtures.session("s")
        session.ttlSeconds = 10
        // Each save expects the version before it: the first is version 1.
        session.version = 0
        for step in [Int64(0), 5_000, 200_000] {
            session.version += 1
            session.updatedAt = Timestamp(millisecondsSinceEpoch: 1_790_000_000_500 + step)
            try store.commit([Fixtures.save(session)])
            let expiry = session.expiresAt.millisecondsSinceEpoch
            #expect(try store.expiredSessionIDs(at: Timestamp(millisecondsSinceEpoch: expiry - 1), limit: 10) == [])
            #expect(try store.expiredSessionIDs(at: Timestamp(millisecondsSinceEpoch: expiry), limit: 10) == ["s"])
        }
        var others = (0..<5).map { Fixtures.session("old\($0)") }
        for index in others.indices { others[index].ttlSeconds = 1 }
        try store.commit(others.map { Fixtures.save($0) })
        let late = Timestamp(millisecondsSinceEpoch: session.expiresAt.millisecondsSinceEpoch)
        #expect(try store.expiredSessionIDs(at: late, limit: 3).count == 3)
        #expect(Set(try store.expiredSessionIDs(at: late, limit: 10)) == Set(others.map(\.id) + ["s"]))
    }

    @Test(
        "dismissed presentations stay readable, the newest 64 per session, and go with their session",
        arguments: StoreEngine.all)
    func dismissedHistory(engine: StoreEngine) throws {
        let store = try engine()
        let template = Fixtures.session("s1").stack[0]
        // Each save expects the version before it: version 1 first (a new session dismisses nothing).
        var session = Fixtures.session("s1")
        try store.commit([Fixtures.save(session)])
        var dismissedIDs: [String] = []
        for round in 0..<40 {
            session.version += 1
            let pair = (0..<2).map { index in
                var entry = template
                entry.id = "gone-\(round)-\(index)"
                return Fixtures.dismissed(entry, at: Int64(round))
            }
            dismissedIDs += pair.map(\.id)
            try store.commit([Fixtures.save(session, dismissed: pair)])
        }
        let newest = try #require(try store.dismissedPresentation(id: "gone-39-1", sessionID: "s1"))
        #expect(newest.state == .dismissed)
        #expect(newest.result == ["buttonId": "cancel"])
        #expect(newest.content == template.content)
        let kept = try dismissedIDs.filter { try store.dismissedPresentation(id: $0, sessionID: "s1") != nil }
        #expect(kept == Array(dismissedIDs.suffix(64)))
        #expect(try store.dismissedPresentation(id: "gone-39-1", sessionID: "other") == nil)

        // Dismissed again (presented anew under its id): the newest, and kept as the second time left it.
        var again = template
        again.id = "gone-20-0"
        again.destination = "again"
        session.version += 1
        try store.commit([Fixtures.save(session, dismissed: [Fixtures.dismissed(again, at: 40)])])
        dismissedIDs.removeAll { $0 == again.id }
        dismissedIDs.append(again.id)
        let keptAfter = try dismissedIDs.filter { try store.dismissedPresentation(id: $0, sessionID: "s1") != nil }
        #expect(keptAfter == Array(dismissedIDs.suffix(64)))
        #expect(try store.dismissedPresentation(id: again.id, sessionID: "s1")?.destination == "again")
        // More in one change than are kept: its newest 64 only.
        let many = (0..<70).map { index in
            var entry = template
            entry.id = "many-\(index)"
            return Fixtures.dismissed(entry, at: 41)
        }
        session.version += 1
        try store.commit([Fixtures.save(session, dismissed: many)])
        let all = dismissedIDs + many.map(\.id)
        #expect(
            try all.filter { try store.dismissedPresentation(id: $0, sessionID: "s1") != nil } == Array(all.suffix(64)))
        try store.commit([.delete(sessionID: "s1")])
        #expect(try store.dismissedPresentation(id: "gone-39-1", sessionID: "s1") == nil)
    }

    @Test(
        "the event log keeps the newest changes per session, in order, and pages by events", arguments: StoreEngine.all)
    func eventLog(engine: StoreEngine) throws {
        let store = try engine(eventLogSize: 5)
        var session = Fixtures.session("s1")
        for version in 1...8 {
            session.version = Int64(version)
            try store.commit([Fixtures.save(session)])
        }
        try store.commit([Fixtures.save(Fixtures.session("other"))])
        let all = try loggedChanges(store, sessionID: "s1", after: 0, eventLimit: 100)
        #expect(all.map(\.version) == [4, 5, 6, 7, 8])
        #expect(all.last == Fixtures.change(of: session))
        #expect(all.first?.stackIDs == session.stack.map(\.id))
        #expect(try loggedChanges(store, sessionID: "s1", after: 6, eventLimit: 100).map(\.version) == [7, 8])
        #expect(try loggedChanges(store, sessionID: "s1", after: 0, eventLimit: 2).map(\.version) == [4, 5])
        #expect(try loggedChanges(store, sessionID: "s1", after: 8, eventLimit: 100).isEmpty)
        #expect(try store.change(sessionID: "s1", version: 3) == nil)
        #expect(try store.change(sessionID: "s1", version: 6)?.version == 6)
        try store.commit([.delete(sessionID: "s1")])
        #expect(try loggedChanges(store, sessionID: "s1", after: 0, eventLimit: 100).isEmpty)
        #expect(try loggedChanges(store, sessionID: "other", after: 0, eventLimit: 100).map(\.version) == [1])
    }

    @Test(
        "every version the log shows is rebuilt exactly, across checkpoints; older and later ones are not",
        arguments: StoreEngine.all)
    func versions(engine: StoreEngine) throws {
        let store = try engine(eventLogSize: 100)
        var script = ScriptedSession("s1")
        var committed: [Int64: Session] = [:]
        func commit(_ write: SessionWrite) throws {
            try store.commit([write])
            committed[script.session.version] = script.session
        }
        try commit(script.create(ttlSeconds: 120))
        // 201 versions, the stack rising and falling, so that checkpoints (every 64th version)
        // hold different states.
        for round in 0..<50 {
            try commit(script.present("sheet\(round)"))
            try commit(script.present("alert\(round)", content: .alert(AlertContent(title: "Sure?"))))
            try commit(script.dismiss())
            try commit(script.dismiss())
        }
        let current = script.session.version
        #expect(current == 201)
        for version in [1, 2, 101, 102, 127, 128, 129, 150, 192, 200, 201] as [Int64] {
            let rebuilt = try store.session(id: "s1", at: version)
            #expect(rebuilt == (version >= current - 99 ? committed[version] : nil), "version \(version)")
        }
        #expect(try store.session(id: "s1", at: 202) == nil)
        #expect(try store.session(id: "missing", at: 1) == nil)
        #expect(try store.changes(sessionID: "s1", after: 0, eventLimit: 1000).map(\.version) == Array(102...201))
    }

    @Test("pages of the event log hold whole changes, at least the events asked for", arguments: StoreEngine.all)
    func eventLogPagesWholeChanges(engine: StoreEngine) throws {
        let store = try engine()
        var session = Fixtures.session("s1")
        for version in 1...4 {
            session.version = Int64(version)
            // Three events per change: two dismissals and the update.
            let dismissed = (0..<2).map { Fixtures.dismissed(session.stack[0], at: Int64(version * 10 + $0)) }
            try store.commit([Fixtures.save(session, dismissed: dismissed)])
        }
        let page = try store.changes(sessionID: "s1", after: 0, eventLimit: 4)
        #expect(page.map(\.version) == [1, 2])
        #expect(page.map(\.events.count) == [3, 3])
    }

    @Test(
        "an idempotent response is stored with its change, read back exactly, and expires", arguments: StoreEngine.all)
    func idempotentResponses(engine: StoreEngine) throws {
        let time = ManualTime()
        let store = try engine(time: time)
        let response = StoredResponse(
            scope: "s1", key: "k-1", fingerprint: Array("POST /x\n{}".utf8) + [0, 255], status: 201,
            headers: ["Content-Type": "application/json", "ETag": "\"1\""], body: Array(#"{"a":1}"#.utf8) + [0],
            createdAt: Timestamp(millisecondsSinceEpoch: time.wallMilliseconds()))
        try store.commit([Fixtures.save(Fixtures.session("s1"), response: response)])
        #expect(try lookedUp(store, scope: "s1", key: "k-1") == response)
        #expect(try lookedUp(store, scope: "s2", key: "k-1") == nil)
        #expect(try lookedUp(store, scope: "s1", key: "k-2") == nil)
        // Outside any session ("" scope), with a session's write.
        var global = response
        global.scope = ""
        try store.commit([Fixtures.save(Fixtures.session("s2"), response: global)])
        #expect(try lookedUp(store, scope: "", key: "k-1") == global)
        // Written already older than the lifetime: never readable.
        var old = response
        old.key = "k-old"
        old.createdAt = Timestamp(millisecondsSinceEpoch: 1000)
        try store.commit([Fixtures.save(Fixtures.session("s1", version: 2), response: old)])
        #expect(try lookedUp(store, scope: "s1", key: "k-old") == nil)
        // Once its lifetime has passed, a response is gone.
        time.advance(by: .milliseconds(RetentionPolicy.standard.idempotencyLifetimeMilliseconds - 1))
        #expect(try lookedUp(store, scope: "s1", key: "k-1") == response)
        time.advance(by: .milliseconds(2))
        #expect(try lookedUp(store, scope: "s1", key: "k-1") == nil)
        // A deleted session takes its responses along.
        time.advance(by: .milliseconds(-RetentionPolicy.standard.idempotencyLifetimeMilliseconds))
        try store.commit([.delete(sessionID: "s1")])
        #expect(try lookedUp(store, scope: "s1", key: "k-1") == nil)
        #expect(try lookedUp(store, scope: "", key: "k-1") == global)
    }

    @Test(
        "pruning removes responses past their lifetime, at most the limit at a time, and keeps live ones",
        arguments: StoreEngine.all)
    func pruneResponses(engine: StoreEngine) throws {
        let time = ManualTime()
        let store = try engine(time: time)
        let lifetime = RetentionPolicy.standard.idempotencyLifetimeMilliseconds
        func now() -> Timestamp { Timestamp(millisecondsSinceEpoch: time.wallMilliseconds()) }
        func response(_ key: String, age: Int64) -> StoredResponse {
            StoredResponse(
                scope: "s", key: key, fingerprint: [1], status: 200, headers: [:], body: [],
                createdAt: Timestamp(millisecondsSinceEpoch: time.wallMilliseconds() - age))
        }
        let old = (0..<5).map { response("old-\($0)", age: lifetime + 1) }
        let live = response("live", age: lifetime - 1)
        try store.commit(
            (old + [live]).enumerated().map { index, response in
                Fixtures.save(Fixtures.session("s", version: Int64(index + 1)), response: response)
            })
        #expect(try store.pruneIdempotentResponses(at: now(), limit: 3) == 3)
        #expect(try store.pruneIdempotentResponses(at: now(), limit: 3) == 2)
        #expect(try store.pruneIdempotentResponses(at: now(), limit: 3) == 0)
        #expect(try store.idempotentResponse(scope: "s", key: "live") == live)
        time.advance(by: .milliseconds(2))
        #expect(try store.pruneIdempotentResponses(at: now(), limit: 3) == 1)
    }

    @Test("deleting a session removes everything it owns, and nothing of another's", arguments: StoreEngine.all)
    func deletionRemovesEverything(engine: StoreEngine) throws {
        let time = ManualTime()
        let store = try engine(time: time)
        for id in ["a", "b"] {
            let session = Fixtures.session(id)
            let response = StoredResponse(
                scope: id, key: "k", fingerprint: [1], status: 200, headers: [:], body: [],
                createdAt: Timestamp(millisecondsSinceEpoch: time.wallMilliseconds()))
            try store.commit([
                Fixtures.save(session, dismissed: [Fixtures.dismissed(session.stack[0], at: 1)], response: response)
            ])
        }
        try store.commit([.delete(sessionID: "a")])
        #expect(try store.session(id: "a") == nil)
        #expect(try store.changes(sessionID: "a", after: 0, eventLimit: 10).isEmpty)
        #expect(try store.dismissedPresentation(id: "a-p0", sessionID: "a") == nil)
        #expect(try store.idempotentResponse(scope: "a", key: "k") == nil)
        #expect(try store.session(id: "b") != nil)
        #expect(try store.changes(sessionID: "b", after: 0, eventLimit: 10).count == 1)
        #expect(try store.dismissedPresentation(id: "b-p0", sessionID: "b") != nil)
        #expect(try store.idempotentResponse(scope: "b", key: "k") != nil)
        #expect(try store.sessionCount() == 1)
        // Deleting what is not there is not an error.
        try store.commit([.delete(sessionID: "never")])
    }

    @Test("the health check passes on a working store; after close every call fails", arguments: StoreEngine.all)
    func healthAndClose(engine: StoreEngine) throws {
        let store = try engine()
        try store.checkHealth()
        try store.commit([Fixtures.save(Fixtures.session("s"))])
        // A later version too, which an engine may hold in memory until it closes.
        try store.commit([Fixtures.save(Fixtures.session("s", version: 2))])
        store.close()
        #expect(throws: StoreError.self) { try store.session(id: "s") }
        #expect(throws: StoreError.self) { try store.commit([Fixtures.save(Fixtures.session("t"))]) }
        #expect(throws: StoreError.self) { try store.checkHealth() }
    }

    @Test(
        "listing: live sessions newest first; one that does not change while paging appears exactly once",
        arguments: StoreEngine.all)
    func listingPagesWhileOthersChange(engine: StoreEngine) throws {
        func session(_ id: String, updatedAt milliseconds: Int64, ttl: Int64 = 3600) -> Session {
            var session = Fixtures.session(id, stackSize: 1)
            session.updatedAt = Timestamp(millisecondsSinceEpoch: milliseconds)
            session.ttlSeconds = ttl
            return session
        }
        let store = try engine()
        var generator = SeededGenerator(seed: 21)
        let start: Int64 = 1_790_000_000_000
        // Times spread over ten minutes, so that pages cross buckets, with ties on the millisecond;
        // ids whose bytewise order differs from a locale's ("B" < "a" < "b").
        var sessions = (0..<120).map { index in
            session(
                ["s\(index)", "S\(index)", "s_\(index)"][index % 3],
                updatedAt: start + Int64.random(in: 0..<600_000, using: &generator) / 7 * 7)
        }
        sessions.append(session("expired", updatedAt: start, ttl: 1))
        try store.commit(sessions.map { Fixtures.save($0) })
        let now = Timestamp(millisecondsSinceEpoch: start + 600_000)

        var seen: [String] = []
        var changed: Set<String> = []
        var cursor: SessionCursor?
        var clock = start + 600_000
        while true {
            let page = try store.recentSessions(after: cursor, limit: 7, at: now)
            #expect(page.count <= 7)
            for (earlier, later) in zip(page, page.dropFirst()) {
                // Swift orders ASCII strings bytewise, as the engines must.
                #expect((earlier.updatedAt, earlier.id) > (later.updatedAt, later.id))
            }
            seen += page.map(\.id)
            guard let last = page.last else { break }
            cursor = SessionCursor(updatedAt: last.updatedAt, id: last.id)
            // Another client changes two sessions between pages: they move to the front.
            for _ in 0..<2 {
                var moved = sessions[Int.random(in: 0..<120, using: &generator)]
                clock += 1
                moved.version += 1
                moved.updatedAt = Timestamp(millisecondsSinceEpoch: clock)
                try store.commit([Fixtures.save(moved)])
                changed.insert(moved.id)
            }
        }
        #expect(!seen.contains("expired"))
        let unchanged = Set(sessions.map(\.id)).subtracting(changed).subtracting(["expired"])
        #expect(unchanged.count > 60)
        for id in unchanged { #expect(seen.filter { $0 == id }.count == 1, "\(id)") }
        #expect(try store.recentSessions(after: nil, limit: 200, at: now).count == 120)
    }

    @Test("listing: ties on the millisecond order by id, bytewise, descending", arguments: StoreEngine.all)
    func listingTieOrder(engine: StoreEngine) throws {
        let store = try engine()
        let ids = ["b", "B", "a", "A", "_", "ab"]
        try store.commit(ids.map { Fixtures.save(Fixtures.session($0)) })
        let now = Timestamp(millisecondsSinceEpoch: 1_790_000_000_600)
        let expected = Array(ids.sorted().reversed())
        #expect(try store.recentSessions(after: nil, limit: 10, at: now).map(\.id) == expected)
        let first = try store.recentSessions(after: nil, limit: 2, at: now)
        let cursor = SessionCursor(updatedAt: first[1].updatedAt, id: first[1].id)
        #expect(try store.recentSessions(after: cursor, limit: 10, at: now).map(\.id) == Array(expected.dropFirst(2)))
    }
}

/// The response stored for a key, looked up on the caller's thread and without holding it: the
/// two must agree.
private func lookedUp(_ store: some SessionStore, scope: String, key: String) throws -> StoredResponse? {
    let direct = try store.idempotentResponse(scope: scope, key: key)
    let answer = LockedValue<Result<StoredResponse?, StoreError>?>(nil)
    let answered = DispatchSemaphore(value: 0)
    store.idempotentResponse(scope: scope, key: key) { result in
        answer.withLock { $0 = result }
        answered.signal()
    }
    #expect(answered.wait(timeout: .now() + .seconds(10)) == .success)
    #expect(try answer.withLock { $0 }?.get() == direct, "looked up without holding the thread")
    return direct
}

/// A session's logged changes, read on the caller's thread and without holding it: the two must agree.
private func loggedChanges(_ store: some SessionStore, sessionID: String, after version: Int64, eventLimit: Int) throws
    -> [SessionChange]
{
    let direct = try store.changes(sessionID: sessionID, after: version, eventLimit: eventLimit)
    let answer = LockedValue<Result<[SessionChange], StoreError>?>(nil)
    let answered = DispatchSemaphore(value: 0)
    store.changes(sessionID: sessionID, after: version, eventLimit: eventLimit) { result in
        answer.withLock { $0 = result }
        answered.signal()
    }
    #expect(answered.wait(timeout: .now() + .seconds(10)) == .success)
    #expect(try answer.withLock { $0 }?.get() == direct, "read without holding the thread")
    return direct
}
