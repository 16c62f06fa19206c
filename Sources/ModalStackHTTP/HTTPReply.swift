import CMicroHTTPD
import Locking

/// The one-shot answer channel of a request.
///
/// Call ``send(_:)`` once, either inside `HTTPResponder.respond(to:reply:)` or later from any thread.
/// When `respond` returns without an answer, the server suspends the connection (no worker thread
/// waits) and resumes it when `send` comes. Later calls are ignored, as is a `send` after the
/// connection is gone or the server answered 503 because it was stopping.
///
/// Instead of a whole response, ``startStream(status:headers:)`` answers with a head and a body
/// written over time (Server-Sent Events); it counts as the one answer.
public final class HTTPReply: Sendable {
    private enum Destination: Sendable {
        case connection(ConnectionHandle, StreamSettings)
        case callback(@Sendable (HTTPResponse) -> Void, onWrite: @Sendable ([UInt8]) -> Void)
    }

    /// What the lock guards: the answer's state, the route template the completion hook reports,
    /// and the headers every answer gets.
    private struct State {
        var machine: ReplyStateMachine
        var routeTemplate: String?
        var extraHeaders: [(name: String, value: String)] = []
    }

    private let destination: Destination
    private let state: LockedValue<State>

    /// A reply that is not attached to a connection, for driving a responder without a socket
    /// (tests, in-process calls).
    /// - Parameters:
    ///   - onSend: Receives the first answer: the response sent, or the head (status and headers,
    ///     empty body) of a stream started with ``startStream(status:headers:)``.
    ///   - onWrite: Receives the bytes written to that stream, in order, while it is open (under the
    ///     stream's lock: it must not call back into the stream).
    public init(
        onSend: @escaping @Sendable (HTTPResponse) -> Void,
        onWrite: @escaping @Sendable ([UInt8]) -> Void = { _ in }
    ) {
        destination = .callback(onSend, onWrite: onWrite)
        state = LockedValue(State(machine: ReplyStateMachine(state: .suspended)))
    }

    init(connection: ConnectionHandle, streams: StreamSettings) {
        destination = .connection(connection, streams)
        state = LockedValue(State(machine: ReplyStateMachine()))
    }

    /// Sends `response`; only the first answer has an effect.
    public func send(_ response: HTTPResponse) {
        answer(.response(response))
    }

    /// Answers with a streamed response instead of a whole one: `status` and `headers` go out now
    /// (without `Content-Length`; HTTP/1.1 clients get chunked transfer encoding), the body is what
    /// is then written to the returned stream, from any thread, until it is closed.
    ///
    /// Callable wherever ``send(_:)`` is. For Server-Sent Events, pass `Content-Type:
    /// text/event-stream` and `Cache-Control: no-cache`. A `HEAD` request gets the head alone, and
    /// its stream closes when that has gone out.
    /// - Returns: The stream to write the body to, or `nil` if the reply was already answered (or
    ///   the request is over).
    public func startStream(status: Int, headers: HTTPHeaders = [:]) -> HTTPStream? {
        let stream =
            switch destination {
            case .connection(let connection, let settings):
                HTTPStream(connection: connection, bufferLimit: settings.bufferLimit, watcher: settings.watcher)
            case .callback(_, let onWrite):
                HTTPStream(onWrite: onWrite)
            }
        return answer(.stream(head: HTTPResponse(status: status, headers: headers), stream)) ? stream : nil
    }

    /// Adds `headers` to whatever answer this reply sends, a response or a stream's head: for a
    /// layer in front of the responder (CORS) that does not see the response itself.
    public func addHeaders(_ headers: HTTPHeaders) {
        state.withLock { $0.extraHeaders += headers.fields }
    }

    /// Delivers the first answer; returns whether this one was taken.
    @discardableResult
    private func answer(_ answer: ReplyStateMachine.Answer) -> Bool {
        let (taken, callbackAnswer) = state.withLock { state -> (Bool, ReplyStateMachine.Answer?) in
            switch state.machine.send(Self.adding(state.extraHeaders, to: answer)) {
            case .ignored:
                return (false, nil)
            case .none:
                return (true, nil)
            case .resume(let answer):
                switch destination {
                case .connection(let connection, _):
                    // Under the lock, so that neither the completion callback nor stop()'s own send can
                    // slip in between the transition and the resume: once stop() has gone through every
                    // suspended reply, none is left suspended (libmicrohttpd aborts on stop otherwise).
                    // No lock-order risk: libmicrohttpd never calls the handler or the completion
                    // callback (the other lock holders) while holding the mutex the resume takes.
                    MHD_resume_connection(connection.pointer)
                    return (true, nil)
                case .callback:
                    return (true, answer)
                }
            }
        }
        if let callbackAnswer, case .callback(let onSend, _) = destination {
            switch callbackAnswer {
            case .response(let response): onSend(response)
            case .stream(let head, _): onSend(head)
            }
        }
        return taken
    }

    private static func adding(
        _ headers: [(name: String, value: String)], to answer: ReplyStateMachine.Answer
    ) -> ReplyStateMachine.Answer {
        guard !headers.isEmpty else { return answer }
        switch answer {
        case .response(var response):
            for (name, value) in headers { response.headers.add(name, value) }
            return .response(response)
        case .stream(var head, let stream):
            for (name, value) in headers { head.headers.add(name, value) }
            return .stream(head: head, stream)
        }
    }

    /// Whether a response was sent or a stream started.
    public var isAnswered: Bool {
        state.withLock { $0.machine.isAnswered }
    }

    /// Whether the connection is suspended, waiting for the answer.
    var isSuspended: Bool {
        state.withLock { $0.machine.state == .suspended }
    }

    /// The pattern of the route that took the request, set by ``Router`` before it calls the handler.
    ///
    /// The reply is the one per-request object the responder shares with the server (the request is
    /// a value, and the router annotates its own copy), so the route template travels here to
    /// ``CompletedRequest/routeTemplate``.
    var routeTemplate: String? {
        get { state.withLock { $0.routeTemplate } }
        set { state.withLock { $0.routeTemplate = newValue } }
    }

    // MARK: Worker-thread events (see ReplyStateMachine)

    func respondReturned() -> ReplyStateMachine.ReturnAction {
        state.withLock { $0.machine.respondReturned() }
    }

    func suspendCompleted() -> ReplyStateMachine.SuspendAction {
        state.withLock { $0.machine.suspendCompleted() }
    }

    func resumed() -> ReplyStateMachine.Answer? {
        state.withLock { $0.machine.resumed() }
    }

    /// The request is over; returns the stream the reply started, if any (once).
    func close() -> HTTPStream? {
        state.withLock { $0.machine.close() }
    }
}

/// A libmicrohttpd connection pointer (and its socket), passed between threads only as the state
/// machines allow.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let socket: Int32
}

/// What a reply needs to start a stream on its connection.
struct StreamSettings: Sendable {
    /// ``HTTPServer/Configuration/maxStreamBufferBytes``.
    let bufferLimit: Int
    let watcher: HangUpWatcher?
}
