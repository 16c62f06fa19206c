import CMicroHTTPD
import Synchronization

/// The one-shot answer channel of a request.
///
/// Call ``send(_:)`` once, either inside `HTTPResponder.respond(to:reply:)` or later from any thread.
/// When `respond` returns without an answer, the server suspends the connection (no worker thread
/// waits) and resumes it when `send` comes. Later calls are ignored, as is a `send` after the
/// connection is gone or the server answered 503 because it was stopping.
public final class HTTPReply: Sendable {
    private enum Destination: Sendable {
        case connection(ConnectionHandle)
        case callback(@Sendable (HTTPResponse) -> Void)
    }

    private let destination: Destination
    private let machine: Mutex<ReplyStateMachine>

    /// A reply that is not attached to a connection: `onSend` receives the first response sent.
    /// For driving a responder without a socket (tests, in-process calls).
    public init(onSend: @escaping @Sendable (HTTPResponse) -> Void) {
        destination = .callback(onSend)
        machine = Mutex(ReplyStateMachine(state: .suspended))
    }

    init(connection: ConnectionHandle) {
        destination = .connection(connection)
        machine = Mutex(ReplyStateMachine())
    }

    /// Sends `response`; only the first call has an effect.
    public func send(_ response: HTTPResponse) {
        let callbackResponse: HTTPResponse? = machine.withLock { machine in
            guard case .resume(let response) = machine.send(response) else { return nil }
            switch destination {
            case .connection(let connection):
                // Under the lock, so that neither the completion callback nor stop()'s own send can
                // slip in between the transition and the resume: once stop() has gone through every
                // suspended reply, none is left suspended (libmicrohttpd aborts on stop otherwise).
                // No lock-order risk: libmicrohttpd never calls the handler or the completion
                // callback (the other lock holders) while holding the mutex the resume takes.
                MHD_resume_connection(connection.pointer)
                return nil
            case .callback:
                return response
            }
        }
        if let callbackResponse, case .callback(let onSend) = destination {
            onSend(callbackResponse)
        }
    }

    /// Whether a response was sent.
    public var isAnswered: Bool {
        machine.withLock { $0.isAnswered }
    }

    // MARK: Worker-thread events (see ReplyStateMachine)

    func respondReturned() -> ReplyStateMachine.ReturnAction {
        machine.withLock { $0.respondReturned() }
    }

    func suspendCompleted() -> ReplyStateMachine.SuspendAction {
        machine.withLock { $0.suspendCompleted() }
    }

    func resumed() -> HTTPResponse? {
        machine.withLock { $0.resumed() }
    }

    func close() {
        machine.withLock { $0.close() }
    }
}

/// A libmicrohttpd connection pointer, passed between threads only as the state machine allows.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
