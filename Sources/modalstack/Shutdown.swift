import Dispatch
import Glibc

/// What keeps a stop bounded: a second SIGTERM or SIGINT exits at once, and a stop that takes
/// longer than the timeout exits anyway. Kept out of main.swift so that these closures are not
/// main-actor isolated (they run on other threads).
enum Shutdown {
    static func guardStop(signals: sigset_t, timeoutSeconds: Int) {
        DispatchQueue.global().async {
            var signals = signals
            var received: Int32 = 0
            sigwait(&signals, &received)
            Environment.log("modalstack: second signal \(received), exiting at once")
            _exit(130)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(timeoutSeconds)) {
            Environment.log("modalstack: stop took longer than \(timeoutSeconds) s, exiting")
            _exit(1)
        }
    }
}
