/// Why the server answered on the application's behalf; the application renders the response.
public enum HTTPRejection: Sendable, Equatable {
    /// The request body is larger than the configured limit (render as 413).
    case bodyTooLarge(limit: Int)
    /// The server is stopping and a deferred request was still unanswered (render as 503).
    case serverStopping
}
