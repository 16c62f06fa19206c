import Dispatch
import Glibc
import Locking

/// Lines gathered into few `write(2)` calls, as nginx's `access_log … buffer= flush=` does: what
/// is pending is written once 64 KiB gather, at least every 100 ms, and by ``flush()`` (at
/// shutdown). A process killed before a flush loses its last lines; it loses no data.
public final class LogBuffer: Sendable {
    public static let capacity = 64 * 1024

    private let descriptor: Int32
    private let flushIntervalMilliseconds: Int
    private let pending = LockedValue<[UInt8]>([])
    /// Held while writing, so that two flushes write their bytes in the order they took them.
    private let writing = LockedValue(())
    private let flusher = DispatchQueue(label: "modalstack.log-flush")

    public init(descriptor: Int32 = STDOUT_FILENO, flushIntervalMilliseconds: Int = 100) {
        self.descriptor = descriptor
        self.flushIntervalMilliseconds = flushIntervalMilliseconds
        scheduleFlush()
    }

    /// Flushes every interval for as long as the buffer exists.
    private func scheduleFlush() {
        flusher.asyncAfter(deadline: .now() + .milliseconds(flushIntervalMilliseconds)) { [weak self] in
            self?.flush()
            self?.scheduleFlush()
        }
    }

    public func append(_ line: [UInt8]) {
        let full = pending.withLock { pending in
            pending.append(contentsOf: line)
            return pending.count >= Self.capacity
        }
        if full { flush() }
    }

    /// Writes whatever is pending now.
    public func flush() {
        writing.withLock { _ in
            let bytes = pending.withLock { pending in
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            var written = 0
            while written < bytes.count {
                let result = bytes.withUnsafeBytes {
                    Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written)
                }
                if result > 0 {
                    written += result
                } else if result < 0 && errno == EINTR {
                    continue
                } else {
                    return  // stdout closed or full: lines are dropped, never the request
                }
            }
        }
    }
}
