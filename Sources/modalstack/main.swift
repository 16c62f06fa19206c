import Glibc
import ModalStackAPI
import ModalStackLaunch
import Timekeeping

// Kept thin: read the configuration, start the server, stop it on SIGTERM or SIGINT.
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(LaunchConfiguration.helpText)
    print(
        "\nusage: modalstack healthcheck [options]\n      exit 0 when the server configured by the same options answers GET /livez"
    )
    exit(0)
}
let isHealthCheck = arguments.first == "healthcheck"
if isHealthCheck { arguments.removeFirst() }

let configuration: LaunchConfiguration
do {
    configuration = try LaunchConfiguration.parse(arguments: arguments, environment: Environment.variables())
} catch {
    Environment.fail("modalstack: \(error)", status: 2)
}

if isHealthCheck {
    exit(HealthCheck.run(configuration.server))
}

// Block the stop signals before any thread starts, so every thread inherits the mask and the
// main thread alone receives them through sigwait.
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGTERM)
sigaddset(&stopSignals, SIGINT)
pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

let server: ModalStackServer
do {
    let time = SystemTime()
    server = try ModalStackServer(configuration: configuration.server, time: time) {
        try Storage.open(configuration.storage, time: time)
    }
    try server.start()
} catch {
    Environment.fail("modalstack: cannot start: \(error)", status: 1)
}
Environment.log(
    "modalstack: listening on \(configuration.server.host):\(server.boundPort), database \(Storage.describe(configuration.storage))"
)

var received: Int32 = 0
sigwait(&stopSignals, &received)
Environment.log("modalstack: signal \(received), stopping")
Shutdown.guardStop(
    signals: stopSignals,
    timeoutSeconds: configuration.server.shutdownDelaySeconds + configuration.server.shutdownTimeoutSeconds)
server.stopBeingReady()
if configuration.server.shutdownDelaySeconds > 0 {
    Environment.log("modalstack: not ready; draining in \(configuration.server.shutdownDelaySeconds) s")
    sleep(UInt32(configuration.server.shutdownDelaySeconds))
}
server.stop()
Environment.log("modalstack: stopped")
exit(0)
