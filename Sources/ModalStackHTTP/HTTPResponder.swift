/// The seam between the transport and the application: turns a request into a response.
///
/// `respond` runs on a libmicrohttpd worker thread and must not block. It answers through `reply`,
/// either before returning (the common case) or later from any thread (long polls, group commit).
public protocol HTTPResponder: Sendable {
    /// Handles `request` and eventually calls `reply.send(_:)` exactly once.
    func respond(to request: HTTPRequest, reply: HTTPReply)
}
