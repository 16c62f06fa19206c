import ModalStackAPI

/// `modalstack healthcheck`: asks the local server for `/livez`, for a container's HEALTHCHECK
/// without curl in the image. With `--auth-operations` it sends the first API key the server's
/// own settings give (`--api-key`, else `--api-key-file`).
enum HealthCheck {
    static func run(_ configuration: ServerConfiguration) -> Int32 {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let probe = StatusProbe(host: host, port: configuration.port, timeoutSeconds: 2)
        do {
            let key =
                configuration.authenticateOperations ? try ModalStackApplication.apiKeys(configuration).first : nil
            let status = try probe.status(of: "/livez", key: key)
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
