import Dispatch
import Locking
import ModalStackCore
import ModalStackService
import ModalStackStore
import ModalStackTestSupport
import Testing

@Suite("Session service, in process")
struct SessionServiceTests {
    // MARK: Ordering

    @Test(
        "concurrent changes to one session each get their own version, with none lost or given twice",
        arguments: [0, 100])
    func concurrentChangesGetEveryVersionOnce(cacheSize: Int) throws {
        let harness = try ServiceHarness(cacheSize: cacheSize)
        let threads = 4
        let perThread = 50
        let versions = LockedValue<[Int64]>([])
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            startThread {
                for index in 0..<perThread {
                    if let version = harness.change(replaceStack("t\(thread)-\(index)"), on: "s")?.answer?.version {
                        versions.withLock { $0.append(version) }
                    }
                }
                done.leave()
            }
        }
        #expect(done.wait(timeout: .now() + .seconds(60)) == .success)
        let answered = versions.withLock { $0 }.sorted()
        #expect(answered == Array(1...Int64(threads * perThread)))
        #expect(try harness.service.session(id: "s")?.version == Int64(threads * perThread))
        let logged = try harness.service.changes(sessionID: "s", after: 0, eventLimit: 10_000)
        #expect(logged.map(\.version) == answered)
    }

    @Test("changes submitted while a commit is running are answered in submission order, after their commit")
    func queuedChangesAnswerInOrder() throws {
        let harness = try ServiceHarness()
        harness.store.closeGate()
        let first = harness.submit(replaceStack("a"), on: "s")
        #expect(harness.store.waitForHeldCommit())
        let queued = (0..<10).map { harness.submit(replaceStack("q\($0)"), on: "s") }
        // A change that changes nothing still waits for the changes ahead of it.
        let unchanged = harness.submit(.create(SessionOptions()), on: "s")
        #expect(!first.isSet && queued.allSatisfy { !$0.isSet } && !unchanged.isSet)
        // Reads see committed state only.
        #expect(try harness.service.session(id: "s") == nil)
        harness.store.open()
        #expect(first.wait()?.answer?.version == 1)
        #expect(queued.map { $0.wait()?.answer?.version } == (2...11).map { Optional($0) })
        #expect(unchanged.wait()?.answer?.version == 11)
    }

    @Test("a change that changes nothing and waits for nothing is answered without a commit")
    func unchangedAnswersAtOnce() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(.create(SessionOptions()), on: "s")?.answer?.version == 1)
        let commits = harness.store.commitSizes
        harness.store.closeGate()
        #expect(harness.change(.create(SessionOptions()), on: "s")?.answer?.version == 1)
        #expect(harness.store.commitSizes == commits)
        harness.store.open()
    }

    // MARK: Batching

    @Test("every change waiting while a commit runs goes into the next transaction, answered together")
    func groupCommit() throws {
        let harness = try ServiceHarness()
        harness.store.closeGate()
        let first = harness.submit(replaceStack("a"), on: "first")
        #expect(harness.store.waitForHeldCommit())
        let waiting = (0..<50).map { harness.submit(replaceStack("b"), on: "session-\($0)") }
        #expect(waiting.allSatisfy { !$0.isSet })
        harness.store.open()
        #expect(first.wait()?.answer?.version == 1)
        #expect(waiting.allSatisfy { $0.wait()?.answer?.version == 1 })
        #expect(harness.store.commitSizes == [1, 50])
        #expect(harness.metrics.commits == 2)
        #expect(try harness.service.sessionCount() == 51)
    }

    @Test("a failed commit fails the changes queued behind it, and the session goes back to its committed state")
    func failedCommitFailsTheQueue() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(replaceStack("a"), on: "s")?.answer?.version == 1)
        harness.store.closeGate()
        let doomed = harness.submit(replaceStack("b"), on: "s")
        #expect(harness.store.waitForHeldCommit())
        let behind = harness.submit(replaceStack("c"), on: "s")
        harness.store.close()
        harness.store.open()
        guard case .storeFailed = doomed.wait()?.refusal else {
            Issue.record("the held change did not fail with the store")
            return
        }
        guard case .storeFailed = behind.wait()?.refusal else {
            Issue.record("the change queued behind it did not fail")
            return
        }
        #expect(try harness.service.session(id: "s")?.version == 1)
    }

    // MARK: Preconditions

    @Test("an expected version refuses a change to another version, or to a session that does not exist")
    func expectedVersion() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(.create(SessionOptions()), on: "s")?.answer?.version == 1)
        guard
            case .versionMismatch(let current) = harness.change(replaceStack("a"), on: "s", expecting: .oneOf([7]))?
                .refusal
        else {
            Issue.record("a change expecting version 7 was not refused")
            return
        }
        #expect(current == 1)
        #expect(harness.change(replaceStack("a"), on: "s", expecting: .oneOf([1]))?.answer?.version == 2)
        guard case .versionMismatch(nil) = harness.change(replaceStack("a"), on: "new", expecting: .any)?.refusal else {
            Issue.record("a change expecting any version created a session")
            return
        }
        guard
            case .sessionNotFound("gone") = harness.change(replaceStack("a"), on: "gone", createsSession: false)?
                .refusal
        else {
            Issue.record("a change that may not create the session created it")
            return
        }
        #expect(try harness.service.session(id: "new") == nil)
        #expect(try harness.service.session(id: "gone") == nil)
    }

    @Test("a deletion checks the expected version, then removes the session once committed")
    func deletion() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(replaceStack("a"), on: "s")?.answer?.version == 1)
        let refused = Eventually<Result<Void, ChangeRefusal>>()
        harness.service.delete(sessionID: "s", expecting: .oneOf([3])) { refused.set($0) }
        guard case .failure(.versionMismatch(1)) = refused.wait() else {
            Issue.record("a deletion expecting version 3 was not refused")
            return
        }
        let deleted = Eventually<Result<Void, ChangeRefusal>>()
        harness.service.delete(sessionID: "s", expecting: .oneOf([1])) { deleted.set($0) }
        guard case .success = deleted.wait() else {
            Issue.record("the deletion failed")
            return
        }
        #expect(try harness.service.session(id: "s") == nil)
        #expect(try harness.service.sessionCount() == 0)
    }

    // MARK: Idempotency

    @Test("a retry with the same idempotency key gets the stored answer; the change is applied once")
    func idempotentReplay() throws {
        let harness = try ServiceHarness()
        let key = IdempotencyKey(scope: "s", key: "k", fingerprint: Array("request".utf8))
        let first = try #require(harness.change(replaceStack("a"), on: "s", key: key)?.answer)
        let replay = try #require(harness.change(replaceStack("a"), on: "s", key: key)?.replayed)
        #expect(replay.body == first.body)
        #expect(replay.status == 200 && replay.headers == ["Version": "1"])
        #expect(try harness.service.session(id: "s")?.version == 1)
        let other = IdempotencyKey(scope: "s", key: "k", fingerprint: Array("another request".utf8))
        guard case .idempotencyKeyReused = harness.change(replaceStack("b"), on: "s", key: other)?.refusal else {
            Issue.record("the key was accepted for another request")
            return
        }
        #expect(try harness.service.session(id: "s")?.version == 1)
    }

    @Test("a retry while the first request is still running is refused, and replayed once it is answered")
    func retryInFlight() throws {
        let harness = try ServiceHarness()
        let key = IdempotencyKey(scope: "s", key: "k", fingerprint: [1])
        harness.store.closeGate()
        let first = harness.submit(replaceStack("a"), on: "s", key: key)
        #expect(harness.store.waitForHeldCommit())
        guard case .idempotencyKeyInUse = harness.change(replaceStack("a"), on: "s", key: key)?.refusal else {
            Issue.record("a retry during the first request was not refused")
            return
        }
        harness.store.open()
        #expect(first.wait()?.answer?.version == 1)
        #expect(harness.change(replaceStack("a"), on: "s", key: key)?.replayed != nil)
    }

    @Test("a refused change releases its key: a retry is refused for the same reason, not as in use")
    func refusalReleasesTheKey() throws {
        let harness = try ServiceHarness()
        let key = IdempotencyKey(scope: "missing", key: "k", fingerprint: [1])
        for _ in 0..<2 {
            guard
                case .sessionNotFound = harness.change(
                    replaceStack("a"), on: "missing", createsSession: false, key: key)?
                    .refusal
            else {
                Issue.record("the change was not refused as not found")
                return
            }
        }
    }

    @Test("a stored answer is replayed for its lifetime only; after it the same key makes a new change")
    func replayLifetime() throws {
        let harness = try ServiceHarness()
        let key = IdempotencyKey(scope: "s", key: "k", fingerprint: [1])
        // A session that outlives the answer's 24 hours.
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 7 * 86_400)), on: "s")?.answer?.version == 1)
        #expect(harness.change(replaceStack("a"), on: "s", key: key)?.answer?.version == 2)
        harness.time.advance(by: .seconds(23 * 3600))
        #expect(harness.change(replaceStack("a"), on: "s", key: key)?.replayed != nil)
        harness.time.advance(by: .seconds(2 * 3600))
        #expect(harness.change(replaceStack("b"), on: "s", key: key)?.answer?.version == 3)
    }

    // MARK: Expiry

    @Test("a session is gone once its time to live has passed without a change, and the sweep deletes it")
    func expiry() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 60)), on: "s")?.answer?.version == 1)
        harness.time.advance(by: .seconds(59))
        #expect(try harness.service.session(id: "s") != nil)
        #expect(try harness.service.sweepExpired(limit: 10) == 0)
        harness.time.advance(by: .seconds(2))
        #expect(try harness.service.session(id: "s") == nil)
        #expect(try harness.service.sweepExpired(limit: 10) == 1)
        #expect(try waitUntil { try harness.service.sessionCount() == 0 })
    }

    @Test("a change restarts the time to live")
    func changeRestartsTTL() throws {
        let harness = try ServiceHarness()
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 60)), on: "s")?.answer?.version == 1)
        harness.time.advance(by: .seconds(40))
        #expect(harness.change(replaceStack("a"), on: "s")?.answer?.version == 2)
        harness.time.advance(by: .seconds(40))
        #expect(try harness.service.session(id: "s")?.version == 2)
        #expect(try harness.service.sweepExpired(limit: 10) == 0)
    }

    @Test("a write to an expired session not swept yet starts a new session, without the old log")
    func expiredSessionStartsAfresh() throws {
        let harness = try ServiceHarness(cacheSize: 0)
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 60)), on: "s")?.answer?.version == 1)
        #expect(harness.change(replaceStack("a"), on: "s")?.answer?.version == 2)
        harness.time.advance(by: .seconds(61))
        #expect(harness.change(replaceStack("b"), on: "s")?.answer?.version == 1)
        let logged = try harness.service.changes(sessionID: "s", after: 0, eventLimit: 100)
        #expect(logged.map(\.version) == [1])
    }
}
