import Glibc

/// Runs `body` on a new detached POSIX thread: one of its own, which neither waits for nor holds up
/// Dispatch's pool (there, other tests' blocking clients may take every thread).
public func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
    precondition(status == 0, "pthread_create failed")
    pthread_detach(thread)
}
