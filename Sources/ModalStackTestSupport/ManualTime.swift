import Locking
import Timekeeping

/// A time source that moves only when a test moves it: expiry, TTLs and deadlines are tested by
/// advancing it, not by sleeping. Both clocks move together.
public final class ManualTime: TimeSource {
    private let state: LockedValue<(wall: Int64, monotonic: Int64)>

    /// Starts at `wallMilliseconds` on the wall clock (2026-12-01T00:00:00Z by default).
    public init(wallMilliseconds: Int64 = 1_796_083_200_000) {
        state = LockedValue((wallMilliseconds, 1_000_000_000))
    }

    public func wallMilliseconds() -> Int64 { state.withLock { $0.wall } }

    public func monotonicNanoseconds() -> Int64 { state.withLock { $0.monotonic } }

    /// Moves both clocks forward.
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        state.withLock { time in
            time.wall += nanoseconds / 1_000_000
            time.monotonic += nanoseconds
        }
    }
}
