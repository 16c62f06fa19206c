import ModalStackCore
import ModalStackService
import ModalStackTestSupport
import Testing

/// The sweeper is timed by the service's clock: a test moves the clock and the sweeps run in
/// `advance(by:)`.
@Suite("Expiry sweeper, on a manual clock")
struct ExpirySweeperTests {
    @Test("the sweeper sweeps once each interval has passed, not before, and not after it stops")
    func sweepsEachInterval() throws {
        let harness = try ServiceHarness()
        let sweeper = ExpirySweeper(service: harness.service, intervalSeconds: 10)
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 5)), on: "early")?.answer?.version == 1)
        sweeper.start()
        harness.time.advance(by: .seconds(10) - .milliseconds(1))
        // Expired since 5 s: had the sweeper run, it would have taken it already.
        #expect(try harness.service.sweepExpired(limit: 10) == 1)

        #expect(harness.change(.create(SessionOptions(ttlSeconds: 5)), on: "swept")?.answer?.version == 1)
        harness.time.advance(by: .milliseconds(1))
        #expect(try harness.service.session(id: "swept") != nil)
        harness.time.advance(by: .seconds(10))
        #expect(try waitUntil { try harness.service.sessionCount() == 0 })

        sweeper.stop()
        #expect(harness.change(.create(SessionOptions(ttlSeconds: 5)), on: "late")?.answer?.version == 1)
        harness.time.advance(by: .seconds(30))
        #expect(try harness.service.sweepExpired(limit: 10) == 1)
        #expect(harness.time.scheduledWorkCount == 0)
    }
}
