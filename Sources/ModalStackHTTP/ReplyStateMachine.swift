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
/// The answer is a whole response or the head of a stream; a started stream is remembered until
/// `close`, which hands it back so that it learns the connection is gone.
struct ReplyStateMachine: Sendable {
    /// What `send` delivers.
    enum Answer: Sendable, Equatable {
        case response(HTTPResponse)
        /// The status and headers of a streamed response whose body `stream` provides.
        case stream(head: HTTPResponse, HTTPStream)

        static func == (lhs: Answer, rhs: Answer) -> Bool {
            switch (lhs, rhs) {
            case (.response(let left), .response(let right)): left == right
            case (.stream(let leftHead, let left), .stream(let rightHead, let right)):
                leftHead == rightHead && left === right
            default: false
            }
        }
    }

    enum State: Sendable, Equatable {
        case responding
        case answeredWhileResponding(Answer)
        case suspending
        case answeredWhileSuspending(Answer)
        case suspended
        case resuming(Answer)
        case delivered
        case closed(answered: Bool)
    }

    enum SendAction: Equatable {
        /// Taken; the worker thread queues it when `respond` returns or the suspension completes.
        case none
        /// Taken, and the connection is suspended: call `MHD_resume_connection`.
        case resume(Answer)
        /// Not taken: the reply was already answered, or the request is over.
        case ignored
    }

    enum ReturnAction: Equatable {
        /// Queue this answer now, in the same handler call.
        case queue(Answer)
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
    /// The stream started by the answer, until ``close()`` hands it back.
    private(set) var stream: HTTPStream?

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

    /// `HTTPReply.send` or `HTTPReply.startStream` was called.
    mutating func send(_ answer: Answer) -> SendAction {
        let action: SendAction
        switch state {
        case .responding:
            state = .answeredWhileResponding(answer)
            action = .none
        case .suspending:
            state = .answeredWhileSuspending(answer)
            action = .none
        case .suspended:
            state = .resuming(answer)
            action = .resume(answer)
        case .answeredWhileResponding, .answeredWhileSuspending, .resuming, .delivered, .closed:
            return .ignored
        }
        if case .stream(_, let started) = answer { stream = started }
        return action
    }

    /// The responder's `respond` returned.
    mutating func respondReturned() -> ReturnAction {
        switch state {
        case .responding:
            state = .suspending
            return .suspend
        case .answeredWhileResponding(let answer):
            state = .delivered
            return .queue(answer)
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
        case .answeredWhileSuspending(let answer):
            state = .resuming(answer)
            return .resume
        case .responding, .answeredWhileResponding, .suspended, .resuming, .delivered, .closed:
            return .none
        }
    }

    /// libmicrohttpd called the handler again after a resume: the answer to queue, if any.
    mutating func resumed() -> Answer? {
        guard case .resuming(let answer) = state else { return nil }
        state = .delivered
        return answer
    }

    /// The request is over (libmicrohttpd's completion callback). Returns the started stream, once.
    mutating func close() -> HTTPStream? {
        defer { stream = nil }
        if case .closed = state { return stream }
        state = .closed(answered: isAnswered)
        return stream
    }
}
