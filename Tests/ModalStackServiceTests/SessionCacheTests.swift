import ModalStackCore
import Testing

@testable import ModalStackService

private func session(_ id: String, version: Int64 = 1) -> Session {
    Session(
        id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000),
        updatedAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + version), stack: [])
}

private func version(_ lookup: SessionCache.Lookup) -> Int64? {
    guard case .session(let session, _, _) = lookup else { return nil }
    return session.version
}

private func isMiss(_ lookup: SessionCache.Lookup) -> Bool {
    if case .miss = lookup { return true }
    return false
}

@Suite("Session cache")
struct SessionCacheTests {
    @Test("past its capacity, a new session takes the place of one not looked up since the hand passed")
    func evictsUnused() {
        let cache = SessionCache(capacity: 3)
        for id in ["a", "b", "c"] { cache.loaded(session(id)) }
        _ = cache.lookup("a")
        cache.loaded(session("d"))
        #expect(cache.count == 3)
        #expect(isMiss(cache.lookup("b")))
        #expect(version(cache.lookup("a")) == 1)
        #expect(version(cache.lookup("c")) == 1)
        #expect(version(cache.lookup("d")) == 1)
    }

    @Test("sessions read over and over stay while a stream of one-off reads passes through")
    func keepsTheHotOnes() {
        let cache = SessionCache(capacity: 100)
        let hot = (0..<20).map { "hot-\($0)" }
        for id in hot { cache.loaded(session(id)) }
        var hotMisses = 0
        for round in 0..<1_000 {
            for id in hot where round % 10 == 0 && isMiss(cache.lookup(id)) {
                hotMisses += 1
                cache.loaded(session(id))
            }
            cache.loaded(session("cold-\(round)"))
            #expect(cache.count <= 100)
        }
        #expect(hotMisses == 0)
        #expect(isMiss(cache.lookup("cold-0")))
        #expect(version(cache.lookup("cold-999")) == 1)
    }

    @Test("a read never replaces a newer version or a deletion; a commit replaces anything")
    func versions() {
        let cache = SessionCache(capacity: 10)
        cache.committed(session("s", version: 5), id: "s")
        cache.loaded(session("s", version: 4))
        #expect(version(cache.lookup("s")) == 5)
        cache.loaded(session("s", version: 6))
        #expect(version(cache.lookup("s")) == 6)
        cache.committed(nil, id: "s")
        cache.loaded(session("s", version: 7))
        guard case .deleted = cache.lookup("s") else {
            Issue.record("a read brought a deleted session back")
            return
        }
        cache.committed(session("s", version: 8), id: "s")
        #expect(version(cache.lookup("s")) == 8)
    }

    @Test("rendered JSON is kept only for the version held, and dropped when a newer one arrives")
    func rendered() {
        let cache = SessionCache(capacity: 10)
        cache.loaded(session("s", version: 2))
        cache.rendered([1], for: session("s", version: 1))
        guard case .session(_, let stale, _) = cache.lookup("s") else { return }
        #expect(stale == nil)
        cache.rendered([2], for: session("s", version: 2))
        guard case .session(_, let current, _) = cache.lookup("s") else { return }
        #expect(current == [2])
        cache.committed(session("s", version: 3), id: "s")
        guard case .session(_, let afterCommit, _) = cache.lookup("s") else { return }
        #expect(afterCommit == nil)
    }

    @Test("a forgotten session misses until it is learnt again, whatever its version was")
    func forget() {
        let cache = SessionCache(capacity: 10)
        cache.committed(session("s", version: 5), id: "s")
        cache.rendered([5], for: session("s", version: 5))
        cache.forget("s")
        #expect(isMiss(cache.lookup("s")))
        #expect(cache.rendering(of: session("s", version: 5)) == nil)
        // Another instance may have deleted and re-created it: an older version read now is the truth.
        cache.loaded(session("s", version: 2))
        #expect(version(cache.lookup("s")) == 2)
        cache.rendered([2], for: session("s", version: 2))
        #expect(cache.rendering(of: session("s", version: 2)) == [2])
        #expect(cache.rendering(of: session("s", version: 3)) == nil)
        cache.forget("missing")
        #expect(isMiss(cache.lookup("missing")))
    }

    @Test("a capacity of 0 keeps nothing")
    func disabled() {
        let cache = SessionCache(capacity: 0)
        cache.committed(session("s"), id: "s")
        #expect(isMiss(cache.lookup("s")))
        #expect(cache.count == 0)
    }
}
