import Glibc

/// A value guarded by a `pthread_mutex_t`: the replacement for `Synchronization.Mutex` that
/// ThreadSanitizer understands.
///
/// On Linux `Mutex` locks with raw futex system calls, which ThreadSanitizer cannot see, so it
/// reports every access that a `Mutex` guards as a data race. ThreadSanitizer intercepts
/// `pthread_mutex_lock`/`unlock`, so with this lock it reports only real races. Same API as
/// `Mutex` for what the package uses: `init(_:)` and `withLock(_:)`.
public final class LockedValue<Value>: @unchecked Sendable {
    // @unchecked Sendable for any `Value`, as `Mutex` is: the value is only reached under the
    // mutex, and it comes in and goes out only as `sending`, so no other reference to it (or to
    // anything reachable from it) can escape the lock.

    // On the heap, so its address never moves while threads wait on it.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: consuming sending Value) {
        value = initialValue
        mutex = UnsafeMutablePointer.allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        // Locking it again from the thread that holds it fails (and traps below) instead of
        // deadlocking.
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let error = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(error == 0, "pthread_mutex_init failed: \(error)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held and the value to read or change; returns what `body` returns.
    /// `body` must not call `withLock` on the same lock.
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        let error = pthread_mutex_lock(mutex)
        precondition(error == 0, "pthread_mutex_lock failed: \(error)")
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
