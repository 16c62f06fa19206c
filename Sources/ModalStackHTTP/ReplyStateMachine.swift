/// The life of one reply, shared by the worker thread that runs `respond` and whichever thread calls
/// `send`. Each event returns the side effect its caller must perform outside the lock.
///
///     responding ──send──▶ answeredWhileResponding ──respondReturned──▶ delivered (queue now)
///         │ respondReturned (no answer yet)
///         ▼
///     suspending ──send──▶ answeredWhileSuspending ──suspended──▶ resuming (worker resumes)
///         │ suspended
///         ▼
///     suspended ──send──▶ resuming (sender resumes) ──resumed──▶ delivered (queue on the re-call)
///
/// `closed` (the request is over; remembers whether it was answered) absorbs every later event, so a
/// late `send` never touches a freed connection. A second `send` is ignored: the first one wins.
struct ReplyStateMachine: Sendable {
    enum State: Sendable, Equatable {
        case responding
        case answeredWhileResponding(HTTPResponse)
        case suspending
        case answeredWhileSuspending(HTTPResponse)
        case suspended
        case resuming(HTTPResponse)
        case delivered
        case closed(answered: Bool)
    }

    enum SendAction: Equatable {
        case none
        /// The connection is suspended: call `MHD_resume_connection`.
        case resume(HTTPResponse)
    }

    enum ReturnAction: Equatable {
        /// Queue this response now, in the same handler call.
        case queue(HTTPResponse)
        /// No answer yet: call `MHD_suspend_connection`, then ``suspendCompleted()``.
        case suspend
        /// Not a valid moment (a bug): close the connection.
        case fail
    }

    enum SuspendAction: Equatable {
        case none
        /// `send` came while suspending: call `MHD_resume_connection` now.
        case resume
    }

    private(set) var state: State

    init(state: State = .responding) {
        self.state = state
    }

    /// Whether a response was sent (it may still be on its way to the connection).
    var isAnswered: Bool {
        switch state {
        case .responding, .suspending, .suspended: false
        case .answeredWhileResponding, .answeredWhileSuspending, .resuming, .delivered: true
        case .closed(let answered): answered
        }
    }

    /// `HTTPReply.send` was called.
    mutating func send(_ response: HTTPResponse) -> SendAction {
        switch state {
        case .responding:
            state = .answeredWhileResponding(response)
            return .none
        case .suspending:
            state = .answeredWhileSuspending(response)
            return .none
        case .suspended:
            state = .resuming(response)
            return .resume(response)
        case .answeredWhileResponding, .answeredWhileSuspending, .resuming, .delivered, .closed:
            return .none
        }
    }

    /// The responder's `respond` returned.
    mutating func respondReturned() -> ReturnAction {
        switch state {
        case .responding:
            state = .suspending
            return .suspend
        case .answeredWhileResponding(let response):
            state = .delivered
            return .queue(response)
        case .suspending, .answeredWhileSuspending, .suspended, .resuming, .delivered, .closed:
            return .fail
        }
    }

    /// The worker thread has suspended the connection.
    mutating func suspendCompleted() -> SuspendAction {
        switch state {
        case .suspending:
            state = .suspended
            return .none
        case .answeredWhileSuspending(let response):
            state = .resuming(response)
            return .resume
        case .responding, .answeredWhileResponding, .suspended, .resuming, .delivered, .closed:
            return .none
        }
    }

    /// libmicrohttpd called the handler again after a resume: the response to queue, if any.
    mutating func resumed() -> HTTPResponse? {
        guard case .resuming(let response) = state else { return nil }
        state = .delivered
        return response
    }

    /// The request is over (libmicrohttpd's completion callback).
    mutating func close() {
        if case .closed = state { return }
        state = .closed(answered: isAnswered)
    }
}
