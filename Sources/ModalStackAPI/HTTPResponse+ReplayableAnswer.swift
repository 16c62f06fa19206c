import ModalStackHTTP
import ModalStackService

/// What of a change's response is kept with its `Idempotency-Key`, for a retry to be sent again
/// (see ``HTTPChanges/replay(_:)``).
extension HTTPResponse: ReplayableAnswer {
    /// The response headers that are stored and replayed with the body.
    static let replayedHeaders = ["Content-Type", "Location", "ETag"]

    public var recorded: (status: Int, headers: [String: String], body: [UInt8]) {
        var kept: [String: String] = [:]
        for name in Self.replayedHeaders {
            kept[name] = headers[name]
        }
        return (status, kept, body)
    }
}
