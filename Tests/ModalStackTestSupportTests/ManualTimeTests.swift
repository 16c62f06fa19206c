import Locking
import ModalStackTestSupport
import Testing
import Timekeeping

/// ManualTime's scheduled work: it runs when the clock is moved past its time, in order, and not
/// before.
@Suite("Manual time")
struct ManualTimeTests {
    /// What the scheduled work saw: its label and the monotonic time it ran at.
    private final class Runs: Sendable {
        private let runs = LockedValue<[(label: String, at: Int64)]>([])

        func record(_ label: String, _ time: ManualTime) {
            let at = time.monotonicNanoseconds()
            runs.withLock { $0.append((label, at)) }
        }

        var labels: [String] { runs.withLock { $0.map(\.label) } }
        var times: [Int64] { runs.withLock { $0.map(\.at) } }
    }

    @Test("work runs once its time has passed, not a nanosecond before")
    func notEarly() {
        let time = ManualTime()
        let runs = Runs()
        time.schedule(after: .seconds(2)) { runs.record("two", time) }
        time.advance(by: .seconds(2) - .nanoseconds(1))
        #expect(runs.labels.isEmpty)
        #expect(time.scheduledWorkCount == 1)
        time.advance(by: .nanoseconds(1))
        #expect(runs.labels == ["two"])
        #expect(time.scheduledWorkCount == 0)
        time.advance(by: .seconds(10))
        #expect(runs.labels == ["two"])
    }

    @Test("work runs in the order it is due, each with the clocks at its time, then the clocks reach the end")
    func dueOrder() {
        let time = ManualTime()
        let start = time.monotonicNanoseconds()
        let startWall = time.wallMilliseconds()
        let runs = Runs()
        time.schedule(after: .seconds(3)) { runs.record("three", time) }
        time.schedule(after: .seconds(1)) { runs.record("one", time) }
        time.schedule(after: .seconds(2)) { runs.record("two", time) }
        time.schedule(after: .seconds(1)) { runs.record("one again", time) }
        time.advance(by: .seconds(5))
        #expect(runs.labels == ["one", "one again", "two", "three"])
        #expect(runs.times.map { $0 - start } == [1, 1, 2, 3].map { $0 * 1_000_000_000 })
        #expect(time.monotonicNanoseconds() - start == 5_000_000_000)
        #expect(time.wallMilliseconds() - startWall == 5000)
    }

    @Test("work scheduled by work runs in the same advance when it falls within it")
    func repeating() {
        let time = ManualTime()
        let runs = Runs()
        @Sendable func tick() {
            runs.record("tick", time)
            time.schedule(after: .seconds(1), tick)
        }
        time.schedule(after: .seconds(1), tick)
        time.advance(by: .milliseconds(3500))
        #expect(runs.labels.count == 3)
        time.advance(by: .milliseconds(500))
        #expect(runs.labels.count == 4)
    }

    @Test("cancelled work never runs; cancelling twice, or after it ran, does nothing")
    func cancellation() {
        let time = ManualTime()
        let runs = Runs()
        let cancelled = time.schedule(after: .seconds(1)) { runs.record("cancelled", time) }
        let kept = time.schedule(after: .seconds(1)) { runs.record("kept", time) }
        cancelled.cancel()
        cancelled.cancel()
        #expect(time.scheduledWorkCount == 1)
        time.advance(by: .seconds(1))
        kept.cancel()
        time.advance(by: .seconds(1))
        #expect(runs.labels == ["kept"])
    }

    @Test("work due now runs at the next advance, even by zero, and never inside schedule")
    func dueNow() {
        let time = ManualTime()
        let runs = Runs()
        time.schedule(after: .zero) { runs.record("now", time) }
        time.schedule(after: .seconds(-1)) { runs.record("past", time) }
        #expect(runs.labels.isEmpty)
        time.advance(by: .zero)
        #expect(runs.labels == ["past", "now"])
    }

    @Test("a negative advance turns both clocks back")
    func backwards() {
        let time = ManualTime()
        let (wall, monotonic) = (time.wallMilliseconds(), time.monotonicNanoseconds())
        time.advance(by: .seconds(3))
        time.advance(by: .seconds(-2))
        #expect(time.wallMilliseconds() - wall == 1000)
        #expect(time.monotonicNanoseconds() - monotonic == 1_000_000_000)
    }
}
