import ModalStackAPI

/// `modalstack healthcheck`: asks the local server for `/livez`, for a container's HEALTHCHECK
/// without curl in the image.
enum HealthCheck {
    static func run(_ configuration: ServerConfiguration) -> Int32 {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let probe = StatusProbe(host: host, port: configuration.port, timeoutSeconds: 2)
        do {
            let status = try probe.status(of: "/livez")
            guard status == 200 else {
                Environment.log("healthcheck: /livez answered \(status)")
                return 1
            }
            return 0
        } catch {
            Environment.log("healthcheck: \(error)")
            return 1
        }
    }
}
