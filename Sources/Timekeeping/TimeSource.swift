import Dispatch
import Glibc

/// Where every part of the server reads the time: the wall clock for what is stored and shown
/// (timestamps, expiry, how long idempotent responses are kept), the monotonic clock for
/// durations and deadlines. Production uses ``SystemTime``; tests inject a source they move by
/// hand, so that nothing waits for real time to pass.
public protocol TimeSource: Sendable {
    /// Milliseconds since the Unix epoch (`CLOCK_REALTIME`).
    func wallMilliseconds() -> Int64
    /// Nanoseconds on a clock that never jumps (`CLOCK_MONOTONIC`), for durations and deadlines.
    func monotonicNanoseconds() -> Int64
    /// Runs `work` once, when `delay` has passed on the monotonic clock, unless it is cancelled
    /// first. `work` never runs inside this call, so the caller may hold a lock that `work` takes.
    @discardableResult
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork
}

extension TimeSource {
    /// Seconds on the monotonic clock, for measuring durations.
    public func monotonicSeconds() -> Double {
        Double(monotonicNanoseconds()) / 1e9
    }
}

/// Work a time source runs later (see ``TimeSource/schedule(after:_:)``).
public struct ScheduledWork: Sendable {
    private let callOff: @Sendable () -> Void

    public init(cancel: @escaping @Sendable () -> Void) {
        callOff = cancel
    }

    /// Keeps the work from running, if it has not started; later calls do nothing.
    public func cancel() {
        callOff()
    }
}

/// The kernel's clocks.
public struct SystemTime: TimeSource {
    public init() {}

    public func wallMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    public func monotonicNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Runs `work` on a global Dispatch queue.
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let item = CancellableItem(DispatchWorkItem(block: work))
        let deadline = DispatchTime.now() + .nanoseconds(Int(delay.saturatingNanoseconds))
        DispatchQueue.global().asyncAfter(deadline: deadline, execute: item.work)
        return ScheduledWork { item.work.cancel() }
    }

    /// A work item to cancel from any thread: libdispatch makes `cancel` safe there, but Swift's
    /// Dispatch on Linux does not mark `DispatchWorkItem` `Sendable`.
    private struct CancellableItem: @unchecked Sendable {
        let work: DispatchWorkItem

        init(_ work: DispatchWorkItem) {
            self.work = work
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, held at `Int64`'s bounds (292 years), as Dispatch holds
    /// its intervals: a delay too long to count is one that never ends, not a crash.
    package var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, wholeOverflows) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, totalOverflows) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !wholeOverflows, !totalOverflows else { return seconds < 0 ? .min : .max }
        return total
    }
}
