/// The life of one streamed response body, shared by the writers (any thread), libmicrohttpd's content
/// reader (the connection's worker thread), the hang-up watcher and the completion callback. It owns
/// the bytes written but not yet handed to libmicrohttpd. Each event returns the side effect its caller
/// must perform: under the same lock for suspending and resuming the connection (so that a resume
/// never precedes its suspend), after it for the close handlers.
///
///     open ──read, nothing buffered──▶ suspended ──write──▶ open (the writer resumes)
///       │ close                          │ close ──▶ closing (the closer resumes)
///       ▼                                │ hang-up ──▶ aborting (the watcher resumes)
///     closing ──read, drained──▶ ended ──finish──▶ finished
///     aborting ──read──▶ ended
///
/// A write past ``bufferLimit`` drops the buffer and goes to `aborting` (the connection is then
/// dropped, not ended cleanly). `finish` (the request is over, whatever the reason) is accepted in
/// every state and absorbs every later event, so nothing touches a freed connection. The stream
/// closes — stops taking writes, and its close handlers run — exactly once, on the first event that
/// leaves `open`/`suspended`.
struct StreamStateMachine: Sendable {
    enum State: Sendable, Equatable {
        /// Writes are taken; the reader hands libmicrohttpd what is buffered.
        case open
        /// The buffer was empty: the reader suspended the connection (no thread waits, nothing polls).
        case suspended
        /// `close()` was called: the buffered bytes go out, then the end of the body.
        case closing
        /// The buffer overflowed or the client hung up: the reader ends the body with an error.
        case aborting
        /// The reader reported the end; libmicrohttpd no longer asks for data.
        case ended
        /// The request is over: the connection is gone or serves another request.
        case finished
    }

    enum WriteAction: Equatable {
        /// Buffered; the reader takes it on its next call.
        case buffered
        /// Buffered, and the connection is suspended: resume it.
        case resume
        /// The stream is closed; nothing was buffered.
        case rejected
        /// The limit is passed: the buffer was dropped and the stream closed (run the close handlers).
        /// Resume the connection if it `wasSuspended` (the reader then fails the body), otherwise drop
        /// it (it is stuck on a client that does not read).
        case overflowed(wasSuspended: Bool)
    }

    enum CloseAction: Equatable {
        /// Nothing to do (already closed, or not a moment for this event).
        case none
        /// The stream just closed: run the close handlers; resume the connection if `resume`.
        case closed(resume: Bool)
    }

    enum ReadResult: Equatable {
        /// This many bytes were copied (0 only while already suspended).
        case bytes(Int)
        /// Nothing buffered: suspend the connection and return 0.
        case suspend
        /// Return `MHD_CONTENT_READER_END_OF_STREAM`: the terminating chunk goes out.
        case endOfStream
        /// Return `MHD_CONTENT_READER_END_WITH_ERROR`: libmicrohttpd closes the connection.
        case endWithError
    }

    private(set) var state: State = .open
    /// The most bytes held that libmicrohttpd has not taken yet.
    let bufferLimit: Int
    /// Bytes handed to libmicrohttpd so far (for ``CompletedRequest/responseBodyBytes``).
    private(set) var deliveredCount = 0
    private var buffer: [UInt8] = []
    private var bufferStart = 0

    init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
    }

    /// Bytes written and not yet handed to libmicrohttpd.
    var bufferedCount: Int { buffer.count - bufferStart }

    /// Whether writes are refused (close, overflow, hang-up, end of the request).
    var isClosed: Bool {
        switch state {
        case .open, .suspended: false
        case .closing, .aborting, .ended, .finished: true
        }
    }

    /// `HTTPStream.write` was called.
    mutating func write(_ bytes: [UInt8]) -> WriteAction {
        guard !isClosed else { return .rejected }
        guard !bytes.isEmpty else { return .buffered }
        let wasSuspended = state == .suspended
        guard bytes.count <= bufferLimit - bufferedCount else {
            dropBuffer()
            state = .aborting
            return .overflowed(wasSuspended: wasSuspended)
        }
        buffer.append(contentsOf: bytes)
        state = .open
        return wasSuspended ? .resume : .buffered
    }

    /// `HTTPStream.close` was called (or the server is stopping).
    mutating func close() -> CloseAction {
        switch state {
        case .open:
            state = .closing
            return .closed(resume: false)
        case .suspended:
            state = .closing
            return .closed(resume: true)
        case .closing, .aborting, .ended, .finished:
            return .none
        }
    }

    /// The client hung up while the connection was suspended.
    mutating func hangUp() -> CloseAction {
        guard state == .suspended else { return .none }
        dropBuffer()
        state = .aborting
        return .closed(resume: true)
    }

    /// libmicrohttpd's content reader asks for up to `destination.count` bytes.
    mutating func read(into destination: UnsafeMutableRawBufferPointer) -> ReadResult {
        switch state {
        case .open, .closing:
            if bufferedCount > 0 { return .bytes(take(into: destination)) }
            if state == .closing {
                state = .ended
                return .endOfStream
            }
            state = .suspended
            return .suspend
        case .suspended:
            // Not called while suspended; if it were, the connection is suspended and 0 is right.
            return .bytes(0)
        case .aborting, .ended, .finished:
            if state == .aborting { state = .ended }
            return .endWithError
        }
    }

    /// The request is over (the completion callback): the stream closes if it had not.
    mutating func finish() -> CloseAction {
        let wasClosed = isClosed
        dropBuffer()
        state = .finished
        // A suspended connection is never completed (stop() resumes them first): nothing to resume.
        return wasClosed ? .none : .closed(resume: false)
    }

    // MARK: Buffer

    private mutating func take(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(destination.count, bufferedCount)
        buffer.withUnsafeBytes { source in
            destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[bufferStart..<(bufferStart + count)]))
        }
        bufferStart += count
        deliveredCount += count
        if bufferStart == buffer.count {
            // Keep a small buffer for the next writes; let a large one go.
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            bufferStart = 0
        } else if bufferStart >= 64 * 1024 && bufferStart >= buffer.count / 2 {
            buffer.removeSubrange(..<bufferStart)
            bufferStart = 0
        }
        return count
    }

    private mutating func dropBuffer() {
        buffer = []
        bufferStart = 0
    }
}
