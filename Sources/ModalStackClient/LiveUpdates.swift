import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How ``ModalStack/updates(of:resumingFrom:onStatus:)`` follows a session.
public enum LiveUpdateTransport: Sendable, Hashable {
    /// The event stream; long polls instead once two streams in a row were answered but brought no
    /// event before they died (a proxy that buffers or cuts streams), or the answer was not a stream.
    case automatic
    /// Only the event stream.
    case eventStream
    /// Only long polls: each answer is the newest state, so versions that came and went between
    /// two polls are not seen.
    case longPoll
}

/// Where ``ModalStack/updates(of:resumingFrom:onStatus:)`` is, for a status line or a test.
public enum LiveUpdateStatus: Sendable, Hashable {
    /// Opening an event stream; `resumingAfter` is the `Last-Event-ID` sent.
    case connecting(resumingAfter: Int64?)
    /// The stream is open and delivering.
    case streaming
    /// Following the session with long polls.
    case polling
    /// The connection failed; the next try comes after a backoff with jitter. `reason` is one
    /// short line ("cannot connect to host", "timed out", "Server stopping (503)").
    case reconnecting(attempt: Int, reason: String)
}

extension LiveUpdateStatus {
    /// One short line for why a connection failed, for a status line or a log.
    static func reason(for error: any Error) -> String {
        switch error {
        case let error as ModalStackError: return "\(error.problem.title) (\(error.status))"
        case let error as URLError:
            switch error.code {
            case .cannotConnectToHost: return "cannot connect to host"
            case .cannotFindHost, .dnsLookupFailed: return "cannot find host"
            case .timedOut: return "timed out"
            case .networkConnectionLost: return "connection lost"
            case .notConnectedToInternet: return "not connected to the internet"
            case .secureConnectionFailed, .serverCertificateUntrusted: return "TLS failed"
            case .badServerResponse, .cannotParseResponse: return "bad answer from the server"
            default: return "network error \(error.code.rawValue)"
            }
        case let error as UnexpectedResponse: return "unexpected \(error.status) answer"
        case is DecodingError: return "an event the client cannot read"
        default: return String(describing: type(of: error))
        }
    }
}

/// Why ``ModalStack/updates(of:resumingFrom:onStatus:)`` ended with an error that is not the server's refusal.
public enum LiveUpdateError: Error, Sendable, Hashable {
    /// The session was deleted (`DELETE`).
    case sessionDeleted
    /// The session expired: its `ttl` passed without a change. A change made under its id now
    /// makes a new session, from version 1; follow it with a new ``ModalStack/updates(of:resumingFrom:onStatus:)``.
    case sessionExpired
    /// The token (a ``ModalStack/Credential/token(_:)``) expired; a token provider would have been asked again.
    case tokenExpired
}

extension ModalStack {
    /// The session's state now and after every change, as it happens.
    ///
    /// Over the event stream: the first element is the session as the stream opens; each `change`
    /// event yields the state it leaves, its modals and paths, derived from the one before with
    /// ``Session/applying(_:)`` (the server's change records are complete, so no read is needed; a
    /// change that does not follow from the state, which only a server bug makes, is answered by
    /// reading the session). A stream that breaks, or stays
    /// silent longer than ``Configuration/heartbeatTimeout``, is reopened after a backoff with jitter
    /// with `Last-Event-ID`, so no version is lost or repeated; a `reset` (the log was pruned past
    /// it) yields the whole session. Versions only go up.
    ///
    /// With `resumingFrom`, a state the app already has (kept from its last run, say), the stream
    /// starts after its version: the first element is the next change, or a `reset`.
    ///
    /// The sequence ends with ``LiveUpdateError/sessionDeleted``, ``LiveUpdateError/tokenExpired``,
    /// or the ``ModalStackError`` of a refusal that retrying cannot cure (`404`, `401`, `403`); it goes
    /// on through network failures and server restarts until the task iterating it is cancelled.
    public func updates(
        of sessionID: String, resumingFrom session: Session? = nil,
        onStatus: @escaping @Sendable (LiveUpdateStatus) -> Void = { _ in }
    ) -> AsyncThrowingStream<Session, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                let follower = SessionFollower(client: self, sessionID: sessionID, onStatus: onStatus) {
                    continuation.yield($0)
                }
                follower.current = session
                do {
                    try await follower.run()
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The loop behind ``ModalStack/updates(of:resumingFrom:onStatus:)``: one task owns it.
private final class SessionFollower {
    let client: ModalStack
    let sessionID: String
    let onStatus: @Sendable (LiveUpdateStatus) -> Void
    let yield: (Session) -> Void
    /// The state last yielded.
    var current: Session?
    /// Failed connections since the last event.
    var failures = 0
    /// Streams in a row that were answered but delivered nothing.
    var silentStreams = 0
    /// Whether the provided token was replaced since the last event, after a `401`.
    var refreshedToken = false
    /// The last stream request sent, with the token it carried.
    var request: URLRequest?
    var polling: Bool

    init(
        client: ModalStack, sessionID: String, onStatus: @escaping @Sendable (LiveUpdateStatus) -> Void,
        yield: @escaping (Session) -> Void
    ) {
        self.client = client
        self.sessionID = sessionID
        self.onStatus = onStatus
        self.yield = yield
        polling = client.configuration.liveUpdates == .longPoll
    }

    func run() async throws {
        while !Task.isCancelled {
            do {
                if polling { try await poll() } else { try await stream() }
            } catch let error as LiveUpdateError {
                throw error
            } catch let error as ModalStackError where !Self.isTransient(error) {
                throw error
            } catch is CancellationError {
                return
            } catch {
                failures += 1
                onStatus(.reconnecting(attempt: failures, reason: LiveUpdateStatus.reason(for: error)))
                try await Task.sleep(for: client.retryDelay(attempt: failures))
            }
        }
    }

    /// Refusals a later try may not get: a server stopping or short of storage.
    private static func isTransient(_ error: ModalStackError) -> Bool {
        switch error {
        case .serverStopping, .storageUnavailable, .storageFailed, .storageFull, .internalError: true
        default: false
        }
    }

    /// Shows `session` if it is newer than what was shown.
    private func offer(_ session: Session) {
        guard session.supersedes(current) else { return }
        current = session
        client.saw(session)
        yield(session)
    }

    // MARK: Long polls

    private func poll() async throws {
        onStatus(.polling)
        if let current {
            let wait = client.configuration.longPollWait
            if let session = try await client.waitForChange(of: sessionID, from: current.version, seconds: wait) {
                offer(session)
            }
        } else {
            offer(try await client.session(sessionID))
        }
        failures = 0
    }

    // MARK: The event stream

    private func stream() async throws {
        let resumingAfter = current?.version
        onStatus(.connecting(resumingAfter: resumingAfter))
        let request = try await streamRequest(resumingAfter: resumingAfter)
        self.request = request
        let connection = EventStreamConnection(
            request: request, heartbeatTimeout: client.configuration.heartbeatTimeout)
        defer { connection.close() }
        var parser = ServerSentEventParser()
        var delivered = false
        var refusal: (response: HTTPURLResponse, body: Data)?
        for try await chunk in connection.chunks {
            switch chunk {
            case .response(let response):
                guard response.statusCode == 200 else {
                    refusal = (response, Data())
                    continue
                }
                guard response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/event-stream") == true else {
                    if client.configuration.liveUpdates == .automatic { polling = true }
                    throw UnexpectedResponse(
                        status: 200, contentType: response.value(forHTTPHeaderField: "Content-Type"), body: Data())
                }
            case .bytes(let bytes) where refusal != nil:
                refusal?.body.append(bytes)
            case .bytes(let bytes):
                for event in parser.feed(bytes) {
                    if !delivered {
                        delivered = true
                        failures = 0
                        silentStreams = 0
                        refreshedToken = false
                        onStatus(.streaming)
                    }
                    guard try await handle(event) else { return }
                }
            }
        }
        if let refusal {
            try refused(refusal.response, body: refusal.body)
            return
        }
        if !delivered {
            silentStreams += 1
            if silentStreams >= 2, client.configuration.liveUpdates == .automatic { polling = true }
        }
        throw URLError(.networkConnectionLost)
    }

    private func streamRequest(resumingAfter version: Int64?) async throws -> URLRequest {
        var call = ModalStack.Call(.get, client.sessionPath(sessionID) + "/events/stream")
        call.headers["Accept"] = "text/event-stream"
        call.headers["Last-Event-ID"] = version.map(String.init)
        return try await client.urlRequest(for: call)
    }

    /// A stream refused with `response`: returns to try again at once with a new token after a first
    /// `401` with a token provider; else throws the refusal.
    private func refused(_ response: HTTPURLResponse, body: Data) throws {
        let error = ModalStack.refusal(status: response.statusCode, data: body, response: response)
        guard case .unauthorized = error as? ModalStackError, case .tokenProvider = client.credential, !refreshedToken,
            let request
        else { throw error }
        refreshedToken = true
        client.dropToken(sentIn: request)
    }

    /// Shows what `event` says; returns `false` to reopen the stream at once.
    private func handle(_ event: ServerSentEvent) async throws -> Bool {
        let decoder = ModalStackJSON.makeDecoder()
        let data = Data(event.data.utf8)
        switch event.type {
        case "session", "reset":
            let session = try decoder.decode(Session.self, from: data)
            if event.type == "reset" { current = nil }
            offer(session)
        case "change":
            let change = try decoder.decode(SessionChange.self, from: data)
            // A stream opened before the session exists starts with its first change.
            guard let current = current ?? (change.version == 1 ? .unwritten(sessionID) : nil),
                change.version > current.version
            else { return true }
            if let next = current.applying(change) {
                offer(next)
            } else {
                // Not derivable: a change that does not follow from what was shown. The read is
                // the truth, and the stream goes on from it.
                offer(try await client.session(sessionID))
            }
        case "sessionDeleted":
            client.forgetVersion(of: sessionID)
            let notice = try? decoder.decode(StreamNotice.self, from: data)
            throw notice?.reason == .expired ? LiveUpdateError.sessionExpired : LiveUpdateError.sessionDeleted
        case "tokenExpired":
            guard case .tokenProvider = client.credential, let request else { throw LiveUpdateError.tokenExpired }
            client.dropToken(sentIn: request)
            return false
        default:
            break
        }
        return true
    }
}

/// One `GET …/events/stream` over a `URLSession` of its own, whose delegate turns what arrives
/// into ``chunks``.
///
/// On Linux `URLSession.bytes(for:)` does not exist and a per-task delegate is never called with
/// data, so the delegate is the session's. The session's request timeout is the longest silence
/// allowed between two bytes: above it, the stream fails with `URLError.timedOut`.
private final class EventStreamConnection {
    enum Chunk {
        case response(HTTPURLResponse)
        case bytes(Data)
    }

    let chunks: AsyncThrowingStream<Chunk, any Error>
    private let session: URLSession

    init(request: URLRequest, heartbeatTimeout: TimeInterval) {
        let (chunks, continuation) = AsyncThrowingStream.makeStream(of: Chunk.self)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = heartbeatTimeout
        configuration.timeoutIntervalForResource = .infinity
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.chunks = chunks
        session = URLSession(
            configuration: configuration, delegate: Delegate(continuation: continuation), delegateQueue: nil)
        session.dataTask(with: request).resume()
    }

    func close() { session.invalidateAndCancel() }

    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let continuation: AsyncThrowingStream<Chunk, any Error>.Continuation

        init(continuation: AsyncThrowingStream<Chunk, any Error>.Continuation) {
            self.continuation = continuation
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            if let response = response as? HTTPURLResponse { continuation.yield(.response(response)) }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            continuation.yield(.bytes(data))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            if let error { continuation.finish(throwing: error) } else { continuation.finish() }
        }
    }
}
