import Foundation

/// A value behind a lock: the client's few states shared between requests. `Mutex` would do, but
/// it needs iOS 18 and macOS 15, and the client runs from iOS 17 and macOS 14 (what `@Observable`
/// needs).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
