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
}

extension TimeSource {
    /// Seconds on the monotonic clock, for measuring durations.
    public func monotonicSeconds() -> Double {
        Double(monotonicNanoseconds()) / 1e9
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
}
