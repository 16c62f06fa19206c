import Locking
import Timekeeping

/// A time source that moves only when a test moves it: expiry, TTLs and deadlines are tested by
/// advancing it, not by sleeping. Both clocks move together, and scheduled work runs on the thread
/// that advances them, as they pass its time.
public final class ManualTime: TimeSource {
    private struct Scheduled {
        /// Orders work due at the same time: the first scheduled runs first.
        let number: UInt64
        /// On the monotonic clock.
        let due: Int64
        let work: @Sendable () -> Void
    }

    private struct State {
        let startWall: Int64
        let startMonotonic: Int64
        var monotonic: Int64
        var scheduled: [Scheduled] = []
        var numbersGiven: UInt64 = 0

        var wall: Int64 { startWall + (monotonic - startMonotonic) / 1_000_000 }

        /// Takes the work due first, if it is due by `deadline`, and moves the clocks to its time.
        mutating func takeNextDue(by deadline: Int64) -> Scheduled? {
            guard let next = scheduled.indices.min(by: { Self.runsBefore(scheduled[$0], scheduled[$1]) }),
                scheduled[next].due <= deadline
            else { return nil }
            monotonic = max(monotonic, scheduled[next].due)
            return scheduled.remove(at: next)
        }

        private static func runsBefore(_ first: Scheduled, _ second: Scheduled) -> Bool {
            (first.due, first.number) < (second.due, second.number)
        }
    }

    private let state: LockedValue<State>

    /// Starts at `wallMilliseconds` on the wall clock (2026-12-01T00:00:00Z by default).
    public init(wallMilliseconds: Int64 = 1_796_083_200_000) {
        let monotonic: Int64 = 1_000_000_000
        state = LockedValue(State(startWall: wallMilliseconds, startMonotonic: monotonic, monotonic: monotonic))
    }

    public func wallMilliseconds() -> Int64 { state.withLock { $0.wall } }

    public func monotonicNanoseconds() -> Int64 { state.withLock { $0.monotonic } }

    /// Keeps `work` until ``advance(by:)`` reaches its time (a delay of zero or less: the next call).
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let number = state.withLock { state in
            state.numbersGiven += 1
            let due = state.monotonic + min(delay.saturatingNanoseconds, .max - state.monotonic)
            state.scheduled.append(Scheduled(number: state.numbersGiven, due: due, work: work))
            return state.numbersGiven
        }
        return ScheduledWork { [state] in
            state.withLock { $0.scheduled.removeAll { $0.number == number } }
        }
    }

    /// How many scheduled works have neither run nor been cancelled: a test that expects every
    /// timer to be over can check that none was left behind.
    public var scheduledWorkCount: Int { state.withLock { $0.scheduled.count } }

    /// Moves both clocks forward by `duration`, stopping at the time of each scheduled work that
    /// comes due on the way to run it, in order, outside the lock: work it schedules in turn runs
    /// too when it falls within `duration`, as a repeating timer does on the real clocks. A
    /// negative `duration` turns both clocks back.
    public func advance(by duration: Duration) {
        let deadline = state.withLock { $0.monotonic + duration.saturatingNanoseconds }
        while let due = state.withLock({ $0.takeNextDue(by: deadline) }) {
            due.work()
        }
        state.withLock { $0.monotonic = deadline }
    }
}
