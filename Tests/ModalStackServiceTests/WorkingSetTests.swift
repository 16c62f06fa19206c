import ModalStackCore
import Testing

@testable import ModalStackService

private func session(_ id: String, version: Int64 = 1) -> Session {
    Session(
        id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000),
        updatedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + version), stack: [])
}

private func version(_ lookup: WorkingSet.Lookup) -> Int64? {
    guard case .session(let session, _) = lookup else { return nil }
    return session.version
}

private func isMiss(_ lookup: WorkingSet.Lookup) -> Bool {
    if case .miss = lookup { return true }
    return false
}

@Suite("Working set")
struct WorkingSetTests {
    @Test("past its capacity, a new session takes the place of one not looked up since the hand passed")
    func evictsUnused() {
        let workingSet = WorkingSet(capacity: 3)
        for id in ["a", "b", "c"] { workingSet.loaded(session(id)) }
        _ = workingSet.lookup("a")
        workingSet.loaded(session("d"))
        #expect(workingSet.count == 3)
        #expect(isMiss(workingSet.lookup("b")))
        #expect(version(workingSet.lookup("a")) == 1)
        #expect(version(workingSet.lookup("c")) == 1)
        #expect(version(workingSet.lookup("d")) == 1)
    }

    @Test("sessions read over and over stay while a stream of one-off reads passes through")
    func keepsTheHotOnes() {
        let workingSet = WorkingSet(capacity: 100)
        let hot = (0..<20).map { "hot-\($0)" }
        for id in hot { workingSet.loaded(session(id)) }
        var hotMisses = 0
        for round in 0..<1_000 {
            for id in hot where round % 10 == 0 && isMiss(workingSet.lookup(id)) {
                hotMisses += 1
                workingSet.loaded(session(id))
            }
            workingSet.loaded(session("cold-\(round)"))
            #expect(workingSet.count <= 100)
        }
        #expect(hotMisses == 0)
        #expect(isMiss(workingSet.lookup("cold-0")))
        #expect(version(workingSet.lookup("cold-999")) == 1)
    }

    @Test("a read never replaces a newer version or a deletion; a commit replaces anything")
    func versions() {
        let workingSet = WorkingSet(capacity: 10)
        workingSet.committed(session("s", version: 5), id: "s")
        workingSet.loaded(session("s", version: 4))
        #expect(version(workingSet.lookup("s")) == 5)
        workingSet.loaded(session("s", version: 6))
        #expect(version(workingSet.lookup("s")) == 6)
        workingSet.committed(nil, id: "s")
        workingSet.loaded(session("s", version: 7))
        guard case .deleted = workingSet.lookup("s") else {
            Issue.record("a read brought a deleted session back")
            return
        }
        workingSet.committed(session("s", version: 8), id: "s")
        #expect(version(workingSet.lookup("s")) == 8)
    }

    @Test("rendered JSON is kept only for the version held, and dropped when a newer one arrives")
    func rendered() {
        let workingSet = WorkingSet(capacity: 10)
        workingSet.loaded(session("s", version: 2))
        workingSet.rendered([1], for: session("s", version: 1))
        guard case .session(_, let stale) = workingSet.lookup("s") else { return }
        #expect(stale == nil)
        workingSet.rendered([2], for: session("s", version: 2))
        guard case .session(_, let current) = workingSet.lookup("s") else { return }
        #expect(current == [2])
        workingSet.committed(session("s", version: 3), id: "s")
        guard case .session(_, let afterCommit) = workingSet.lookup("s") else { return }
        #expect(afterCommit == nil)
    }

    @Test("a forgotten session misses until it is learnt again, whatever its version was")
    func forget() {
        let workingSet = WorkingSet(capacity: 10)
        workingSet.committed(session("s", version: 5), id: "s")
        workingSet.rendered([5], for: session("s", version: 5))
        workingSet.forget("s")
        #expect(isMiss(workingSet.lookup("s")))
        #expect(workingSet.rendering(of: session("s", version: 5)) == nil)
        // Another instance may have deleted and re-created it: an older version read now is the truth.
        workingSet.loaded(session("s", version: 2))
        #expect(version(workingSet.lookup("s")) == 2)
        workingSet.rendered([2], for: session("s", version: 2))
        #expect(workingSet.rendering(of: session("s", version: 2)) == [2])
        #expect(workingSet.rendering(of: session("s", version: 3)) == nil)
        workingSet.forget("missing")
        #expect(isMiss(workingSet.lookup("missing")))
    }

    @Test("a capacity of 0 keeps nothing")
    func disabled() {
        let workingSet = WorkingSet(capacity: 0)
        workingSet.committed(session("s"), id: "s")
        #expect(isMiss(workingSet.lookup("s")))
        #expect(workingSet.count == 0)
    }
}
