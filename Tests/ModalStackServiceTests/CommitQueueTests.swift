import ModalStackCore
import ModalStackStore
import Testing

@testable import ModalStackService

private func commit(_ sessionID: String, writes: [SessionWrite] = []) -> PendingCommit {
    PendingCommit(sessionID: sessionID, writes: writes, session: nil, change: nil, finish: nil)
}

private let deletion: [SessionWrite] = [.delete(sessionID: "x")]

/// The commit queue's transitions, one event at a time.
@Suite("Commit queue")
struct CommitQueueTests {
    @Test("an empty queue starts the committer on its first ready change, and not again while it runs")
    func startsOnce() {
        var queue = CommitQueue()
        #expect(queue.nextBatch(limit: 10) == nil)
        #expect(queue.enqueue(commit("a", writes: deletion)) == .startCommitter)
        #expect(queue.isCommitting)
        #expect(queue.enqueue(commit("b", writes: deletion)) == .none)
        #expect(queue.nextBatch(limit: 10)?.map(\.sessionID) == ["a", "b"])
        #expect(queue.isCommitting)
        #expect(queue.nextBatch(limit: 10) == nil)
        #expect(!queue.isCommitting)
        #expect(queue.isEmpty)
        #expect(queue.enqueue(commit("c", writes: deletion)) == .startCommitter)
    }

    @Test("a reserved change holds its place: the committer stops before it, and its readiness starts it again")
    func reservedHoldsItsPlace() {
        var queue = CommitQueue()
        let first = queue.reserve(commit("a"))
        // Ready changes behind a reserved one wait: answers keep the order of decisions.
        #expect(queue.enqueue(commit("b", writes: deletion)) == .none)
        #expect(!queue.isCommitting)
        #expect(queue.ready(first, writes: deletion) == .startCommitter)
        let batch = queue.nextBatch(limit: 10)
        #expect(batch?.map(\.sessionID) == ["a", "b"])
        #expect(batch?.first?.writes == deletion)
    }

    @Test("a batch stops at a change still rendering; the rest waits for it")
    func batchStopsAtRendering() {
        var queue = CommitQueue()
        #expect(queue.enqueue(commit("a", writes: deletion)) == .startCommitter)
        let second = queue.reserve(commit("b"))
        #expect(queue.enqueue(commit("c", writes: deletion)) == .none)
        #expect(queue.nextBatch(limit: 10)?.map(\.sessionID) == ["a"])
        #expect(queue.nextBatch(limit: 10) == nil)
        #expect(!queue.isCommitting)
        #expect(queue.ready(second, writes: []) == .startCommitter)
        #expect(queue.nextBatch(limit: 10)?.map(\.sessionID) == ["b", "c"])
    }

    @Test("a ready change behind the head while the committer runs does not start a second one")
    func readyWhileCommitting() {
        var queue = CommitQueue()
        #expect(queue.enqueue(commit("a", writes: deletion)) == .startCommitter)
        let second = queue.reserve(commit("b"))
        #expect(queue.ready(second, writes: deletion) == .none)
        #expect(queue.nextBatch(limit: 1)?.map(\.sessionID) == ["a"])
        #expect(queue.nextBatch(limit: 1)?.map(\.sessionID) == ["b"])
    }

    @Test("superseded sessions' changes are taken out in order, reserved ones too, whose readiness is then ignored")
    func removeCommitsOfSessions() {
        var queue = CommitQueue()
        _ = queue.enqueue(commit("a", writes: deletion))
        let reserved = queue.reserve(commit("b"))
        _ = queue.enqueue(commit("c", writes: deletion))
        _ = queue.enqueue(commit("b", writes: deletion))
        #expect(queue.nextBatch(limit: 1)?.map(\.sessionID) == ["a"])
        #expect(queue.removeCommits(of: ["b"]).map(\.sessionID) == ["b", "b"])
        #expect(queue.ready(reserved, writes: deletion) == .none)
        #expect(queue.nextBatch(limit: 10)?.map(\.sessionID) == ["c"])
    }

    @Test("after a failed commit every queued change is taken out, and the committer stops on its next call")
    func removeAll() {
        var queue = CommitQueue()
        _ = queue.enqueue(commit("a", writes: deletion))
        _ = queue.reserve(commit("b"))
        #expect(queue.nextBatch(limit: 10)?.map(\.sessionID) == ["a"])
        #expect(queue.removeAll().map(\.sessionID) == ["b"])
        #expect(queue.isEmpty)
        #expect(queue.nextBatch(limit: 10) == nil)
        #expect(!queue.isCommitting)
    }

    @Test("batches hold at most the limit, in order, over many changes")
    func limit() {
        var queue = CommitQueue()
        var tickets: [CommitQueue.Ticket] = []
        for index in 0..<3000 { tickets.append(queue.reserve(commit("s\(index)"))) }
        // Readied out of order: only the head's readiness starts the committer.
        #expect(queue.ready(tickets[1], writes: deletion) == .none)
        #expect(queue.ready(tickets[0], writes: deletion) == .startCommitter)
        for ticket in tickets[2...] { #expect(queue.ready(ticket, writes: deletion) == .none) }
        var committed: [String] = []
        while let batch = queue.nextBatch(limit: 512) {
            #expect(batch.count <= 512)
            committed += batch.map(\.sessionID)
        }
        #expect(committed == (0..<3000).map { "s\($0)" })
    }
}
