import Glibc

/// Tries `condition` until it holds (true) or `timeout` has passed (false): how a test waits for a
/// state it can only observe, instead of sleeping and hoping that the state has come.
/// - Parameters:
///   - timeout: How long to keep trying.
///   - interval: The pause between tries; one that asks a server over HTTP may want a longer one.
///   - condition: Called on the calling thread, at once and after each pause.
public func waitUntil<Failure: Error>(
    timeout: Duration = .seconds(5),
    pollingEvery interval: Duration = .milliseconds(1),
    _ condition: () throws(Failure) -> Bool
) throws(Failure) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    let pause = interval.components
    let pauseMicroseconds = UInt32(clamping: pause.seconds * 1_000_000 + pause.attoseconds / 1_000_000_000_000)
    while try !condition() {
        if clock.now > deadline { return false }
        usleep(pauseMicroseconds)
    }
    return true
}
