import Locking
import Timekeeping

/// Deletes expired sessions and idempotent responses in the background, in small batches, each
/// its own transaction, so that requests never wait long behind it. Sweeps are timed by the
/// service's time source; each schedules the next when it is done.
public final class ExpirySweeper: Sendable {
    static let batchSize = 100
    static let responseBatchSize = 1000

    private let service: SessionService
    private let intervalSeconds: Int
    private let running = LockedValue(false)

    public init(service: SessionService, intervalSeconds: Int) {
        self.service = service
        self.intervalSeconds = intervalSeconds
    }

    public func start() {
        running.withLock { $0 = true }
        schedule()
    }

    public func stop() {
        running.withLock { $0 = false }
    }

    private func schedule() {
        service.time.schedule(after: .seconds(intervalSeconds)) { [self] in
            guard running.withLock({ $0 }) else { return }
            while running.withLock({ $0 }), (try? service.sweepExpired(limit: Self.batchSize)) == Self.batchSize {}
            while running.withLock({ $0 }),
                (try? service.pruneIdempotentResponses(limit: Self.responseBatchSize)) == Self.responseBatchSize
            {}
            schedule()
        }
    }
}
