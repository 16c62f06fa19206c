import Glibc
import ModalStackAPI
import ModalStackStorage
import Timekeeping

// Kept thin: read the configuration, start the server, stop it on SIGTERM or SIGINT.
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(ServerConfiguration.helpText)
    print(
        "\nusage: modalstack healthcheck [options]\n      exit 0 when the server configured by the same options answers GET /livez"
    )
    exit(0)
}
let isHealthCheck = arguments.first == "healthcheck"
if isHealthCheck { arguments.removeFirst() }

let configuration: ServerConfiguration
do {
    configuration = try ServerConfiguration.parse(arguments: arguments, environment: Environment.variables())
} catch {
    Environment.fail("modalstack: \(error)", status: 2)
}

if isHealthCheck {
    exit(HealthCheck.run(configuration))
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
    server = try ModalStackServer(configuration: configuration, time: time) { configuration in
        try Storage.open(configuration, time: time)
    }
    try server.start()
} catch {
    Environment.fail("modalstack: cannot start: \(error)", status: 1)
}
Environment.log(
    "modalstack: listening on \(configuration.host):\(server.boundPort), database \(Storage.describe(configuration))"
)

var received: Int32 = 0
sigwait(&stopSignals, &received)
Environment.log("modalstack: signal \(received), stopping")
Shutdown.guardStop(
    signals: stopSignals, timeoutSeconds: configuration.shutdownDelaySeconds + configuration.shutdownTimeoutSeconds)
server.stopBeingReady()
if configuration.shutdownDelaySeconds > 0 {
    Environment.log("modalstack: not ready; draining in \(configuration.shutdownDelaySeconds) s")
    sleep(UInt32(configuration.shutdownDelaySeconds))
}
server.stop()
Environment.log("modalstack: stopped")
exit(0)
