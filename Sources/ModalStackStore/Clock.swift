import Glibc

/// The wall clock, for the store's own bookkeeping (how long idempotent responses are kept).
enum Clock {
    static func milliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}
