import ModalStackAPI
import ModalStackHTTP

/// `modalstack healthcheck`: asks the local server for `/livez`, for a container's HEALTHCHECK
/// without curl in the image.
enum HealthCheck {
    static func run(_ configuration: ServerConfiguration) -> Int32 {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let client = HTTPClient(host: host, port: configuration.port, timeoutSeconds: 2)
        defer { client.close() }
        do {
            let response = try client.send(method: "GET", path: "/livez")
            guard response.status == 200 else {
                Environment.log("healthcheck: /livez answered \(response.status)")
                return 1
            }
            return 0
        } catch {
            Environment.log("healthcheck: \(error)")
            return 1
        }
    }
}
