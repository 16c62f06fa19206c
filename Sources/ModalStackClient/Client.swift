import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A connection to one ModalStack server: every operation of its API as an `async throws` call.
///
/// ```swift
/// let client = ModalStack(baseURL: URL(string: "https://modalstack.example")!, credential: .apiKey(key))
/// let outcome = try await client.present(PresentRequest(destination: "paywall"), in: "user-42")
/// ```
///
/// A refusal throws the ``ModalStackError`` of its problem (`.stackFull`, `.locked`,
/// `.preconditionFailed(currentVersion:)`, …); a network failure throws the `URLError`, after the
/// retries ``Configuration/maxAttempts`` allows; an answer that is not the API's throws
/// ``UnexpectedResponse``. The client is `Sendable`: share one per server.
///
/// The library's types keep short names (`Session`, `Presentation`, `PathEntry`); types that
/// belong to another are nested in it (`AlertButton.Role`, `ModalStyle.Detent`,
/// `ModalStackError.Problem`). No type is named like the module, so where an app has a `Session`
/// of its own, `ModalStackClient.Session` names this one.
public final class ModalStack: Sendable {
    /// What the client sends as `Authorization: Bearer`.
    public enum Credential: Sendable {
        /// No credential: a server started without keys.
        case none
        /// An API key: everything, on any session. For backends, never for an app.
        case apiKey(String)
        /// A client token for one session, used until it expires.
        case token(String)
        /// Called for a token when the client first needs one, shortly before the one it has
        /// expires, and when the server refuses it as invalid (`401`) or a stream ends because it
        /// expired (the request is then retried once with the new token). Requests that need a
        /// token while one is being fetched wait for that one: the provider runs once at a time.
        case tokenProvider(@Sendable () async throws -> ClientToken)
    }

    /// How the client sends changes and follows sessions.
    public struct Configuration: Sendable {
        /// Send `If-Match` with the last version this client saw of the session on every change that
        /// does not name one, so a change made from a stale view is refused (`412`) instead of applied.
        public var sendsIfMatch: Bool
        /// Tries per request. A request is tried again after a network failure, and after a `503` or
        /// a `409 idempotency-key-in-use` that carries `Retry-After`, only where that is safe: reads,
        /// `PUT`s, and `POST`s and `PATCH`es, which carry an `Idempotency-Key` made for the request,
        /// so that the server applies the change once and answers a retry with the same response.
        public var maxAttempts: Int
        /// The delay before the first retry; it doubles on each one, with jitter, up to ``maxRetryDelay``.
        public var retryDelay: Duration
        /// The longest delay between retries, and between reconnections of ``ModalStack/updates(of:resumingFrom:onStatus:)``.
        public var maxRetryDelay: Duration
        /// Seconds a request may wait for an answer (a long poll waits this much longer).
        public var requestTimeout: TimeInterval
        /// Seconds without a byte (an event or a heartbeat) after which an event stream is taken
        /// for dead and reopened; keep it above the server's `--sse-heartbeat` (15 s by default).
        public var heartbeatTimeout: TimeInterval
        /// How ``ModalStack/updates(of:resumingFrom:onStatus:)`` follows a session.
        public var liveUpdates: LiveUpdateTransport
        /// Seconds a long poll asks the server to wait (the server caps it at its `--max-wait`).
        public var longPollWait: Int

        /// A configuration; the defaults send no `If-Match` and try 3 times, and a `maxAttempts` below 1 counts as 1.
        public init(
            sendsIfMatch: Bool = false, maxAttempts: Int = 3, retryDelay: Duration = .milliseconds(200),
            maxRetryDelay: Duration = .seconds(10), requestTimeout: TimeInterval = 30,
            heartbeatTimeout: TimeInterval = 45,
            liveUpdates: LiveUpdateTransport = .automatic, longPollWait: Int = 30
        ) {
            self.sendsIfMatch = sendsIfMatch
            self.maxAttempts = max(1, maxAttempts)
            self.retryDelay = retryDelay
            self.maxRetryDelay = maxRetryDelay
            self.requestTimeout = requestTimeout
            self.heartbeatTimeout = heartbeatTimeout
            self.liveUpdates = liveUpdates
            self.longPollWait = longPollWait
        }
    }

    /// The server's URL, without `/v1`.
    public let baseURL: URL
    /// How the client sends changes and follows sessions, as given when it was made.
    public let configuration: Configuration
    let credential: Credential
    let urlSession: URLSession
    /// The token in use with a ``Credential/tokenProvider(_:)``, or the one being fetched.
    private let providedToken = Locked<ProvidedToken>(.none)
    /// The last version seen of each session, for ``Configuration/sendsIfMatch``.
    private let seenVersions = Locked<[String: Int64]>([:])

    /// A client of the server at `baseURL` (`https://host:port`, without `/v1`).
    public init(baseURL: URL, credential: Credential = .none, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.credential = credential
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        urlSession = URLSession(configuration: sessionConfiguration)
    }

    deinit { urlSession.invalidateAndCancel() }

    // MARK: Sessions

    /// The session as last written.
    public func session(_ sessionID: String) async throws -> Session {
        try await send(Call(.get, sessionPath(sessionID), sessionID: sessionID)).decode()
    }

    /// The session as it was at `version`, while the server's event log holds it; an older one
    /// throws ``ModalStackError/versionGone(_:)``, a later one
    /// ``ModalStackError/versionNotFound(currentVersion:_:)``.
    public func session(_ sessionID: String, at version: Int64) async throws -> Session {
        try await send(Call(.get, sessionPath(sessionID) + "/versions/\(version)", sessionID: sessionID)).decode()
    }

    /// The session once its version is no longer `version`, waiting at most `seconds` (capped by
    /// the server's `--max-wait`); `nil` when the wait ended first. A long poll.
    public func waitForChange(of sessionID: String, from version: Int64, seconds: Int) async throws -> Session? {
        var call = Call(.get, sessionPath(sessionID), sessionID: sessionID)
        call.headers["If-None-Match"] = entityTag(version)
        call.headers["Prefer"] = "wait=\(max(0, seconds))"
        call.timeout = configuration.requestTimeout + TimeInterval(max(0, seconds))
        let answer = try await send(call)
        return answer.status == 304 ? nil : try answer.decode()
    }

    /// Creates the session `sessionID` with its own `ttl` (seconds), or returns it when it exists;
    /// an existing session with another ttl throws ``ModalStackError/sessionExists(ttl:_:)``.
    public func createSession(_ sessionID: String, ttl: Int? = nil) async throws -> Session {
        try await send(
            try Call(.put, sessionPath(sessionID), body: CreateSessionRequest(ttl: ttl), sessionID: sessionID)
        )
        .decode()
    }

    /// The first page of the live sessions, the most recently changed first (API key only): at
    /// most `limit` (the server's default is 20, its most 100). ``SessionsPage/nextPage`` leads on.
    public func sessions(limit: Int? = nil) async throws -> SessionsPage {
        var call = Call(.get, "/v1/sessions")
        if let limit { call.query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await send(call).decode()
    }

    /// The page of sessions that `cursor` (a page's ``SessionsPage/nextPage``) leads to.
    public func sessions(at cursor: PageCursor) async throws -> SessionsPage {
        try await send(cursor.call).decode()
    }

    /// Creates a session with an id made by the server (API key only).
    public func createSession(ttl: Int? = nil) async throws -> Session {
        var call = try Call(.post, "/v1/sessions", body: CreateSessionRequest(ttl: ttl))
        call.headers["Idempotency-Key"] = UUID().uuidString  // a retry gets the same session, not a second one
        let session: Session = try await send(call).decode()
        saw(session)
        return session
    }

    /// Deletes the session with its event log and idempotency keys (API key only).
    public func deleteSession(_ sessionID: String, expecting version: Int64? = nil) async throws {
        var call = Call(.delete, sessionPath(sessionID), sessionID: sessionID)
        call.headers["If-Match"] = version.map(entityTag)
        _ = try await send(call)
        forgetVersion(of: sessionID)
    }

    /// A client token for the session (API key only; the server needs `--token-secret`).
    public func token(for sessionID: String, scope: TokenScope? = nil, ttl: Int? = nil) async throws -> TokenResponse {
        try await send(try Call(.post, sessionPath(sessionID) + "/tokens", body: TokenRequest(scope: scope, ttl: ttl)))
            .decode()
    }

    // MARK: Changes

    /// Presents on top of the session's stack, queues it when the rules block it (unless
    /// `whenBlocked` is `reject`), or updates the presentation already on top with its key.
    public func present(
        _ request: PresentRequest, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> PresentOutcome {
        let answer = try await send(changeCall(.present(request), in: sessionID, options))
        switch answer.status {
        case 201: return .presented(try answer.decode())
        case 202: return .queued(try answer.decode())
        default: return .updated(try answer.decode())
        }
    }

    /// Dismisses what `request` says (the top by default), with its `result` and `force`.
    public func dismiss(
        _ request: DismissRequest = DismissRequest(), in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> DismissResponse {
        try await send(changeCall(.dismiss(request), in: sessionID, options)).decode()
    }

    /// Removes a presentation and everything above it, or cancels it if queued; an alert it removes
    /// records its cancel button (`DELETE`, which takes no result: use ``dismiss(_:in:options:)`` for one).
    public func deletePresentation(
        _ presentationID: String, in sessionID: String, force: Bool = false, options: ChangeOptions = ChangeOptions()
    ) async throws -> DismissResponse {
        try await send(changeCall(.deletePresentation(presentationID, force: force), in: sessionID, options)).decode()
    }

    /// Changes a presentation in place: its payload, or a progress's `message`, `total`, `completed`.
    public func update(
        _ presentationID: String, in sessionID: String, with request: UpdateRequest,
        options: ChangeOptions = ChangeOptions()
    ) async throws -> UpdateResponse {
        try await send(changeCall(.update(presentationID, request), in: sessionID, options)).decode()
    }

    /// Replaces the whole stack (a deep link); entries that match the bottom of the old stack keep their identity.
    public func replaceStack(
        _ request: ReplaceStackRequest, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> ReplaceStackResponse {
        try await send(changeCall(.replaceStack(request), in: sessionID, options)).decode()
    }

    /// Pushes a screen onto a level's path (by default the top-most container on the stack, else the
    /// root), or updates the level's last entry in place when it has the same key and destination.
    /// The first push creates the session; an alert-like top does not queue it: it happens beneath.
    public func push(
        _ request: PushRequest, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> PushOutcome {
        let answer = try await send(changeCall(.push(request), in: sessionID, options))
        return answer.status == 201 ? .pushed(try answer.decode()) : .updated(try answer.decode())
    }

    /// Pops what `request` says (the last entry of the default level by default), handing its
    /// `result` back for the top-most entry popped. It never dismisses a modal.
    public func pop(
        _ request: PopRequest = PopRequest(), in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> PopResponse {
        try await send(changeCall(.pop(request), in: sessionID, options)).decode()
    }

    /// Goes to a whole navigation in one change: the root path, the modals and their paths. Modals
    /// and entries matching the current ones along the common prefix keep their identity; the
    /// answer's transition is the plan from here to there.
    public func navigate(
        to request: NavigationRequest, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> NavigationResponse {
        try await send(changeCall(.navigate(request), in: sessionID, options)).decode()
    }

    /// Opens a deep link in the session: the server resolves it with its catalog's routes and applies
    /// what the route says as one change; ``ModalStackError/noRoute(url:_:)`` when none matches.
    public func open(
        url: URL, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> LinkResponse {
        try await send(changeCall(.open(url), in: sessionID, options)).decode()
    }

    /// Makes `change` and asks for the small answer (`Prefer: return=minimal`): the version it made
    /// and its transition plan, without the session. For a client that follows the session anyway
    /// (``updates(of:resumingFrom:onStatus:)``) and only needs to know the change took.
    public func apply(
        _ change: Change, in sessionID: String, options: ChangeOptions = ChangeOptions()
    ) async throws -> ChangeReceipt {
        var call = try changeCall(change, in: sessionID, options)
        call.headers["Prefer"] = "return=minimal"
        let answer = try await send(call)
        let body: MinimalAnswer = try answer.decode()
        return ChangeReceipt(status: answer.status, version: body.version, transition: body.transition)
    }

    /// What the server sends under `Prefer: return=minimal`.
    private struct MinimalAnswer: Decodable {
        var version: Int64
        var transition: [TransitionStep]
    }

    /// What opening `url` would do, without a session and without changing anything.
    public func resolve(url: URL) async throws -> LinkResolution {
        var call = Call(.get, "/v1/links/resolve")
        call.query = [URLQueryItem(name: "url", value: url.absoluteString)]
        return try await send(call).decode()
    }

    // MARK: Reads

    /// One presentation, in any state.
    public func presentation(_ presentationID: String, in sessionID: String) async throws -> Presentation {
        try await send(Call(.get, presentationPath(presentationID, in: sessionID))).decode()
    }

    /// An entry on any level's path now, with its level and position;
    /// ``ModalStackError/entryNotFound(entryId:_:)`` once it was popped or went with its modal.
    public func pathEntry(_ entryID: String, in sessionID: String) async throws -> PathEntryPlace {
        try await send(Call(.get, sessionPath(sessionID) + "/path/" + Self.pathSegment(entryID))).decode()
    }

    /// The first page of the event log after `version` (`0`: from the oldest change logged, which
    /// ``EventsPage/after`` tells), oldest first. A page holds whole changes: it ends with the change
    /// that brings it to at least `limit` events (the server's default is 100), so it may hold more.
    /// ``EventsPage/nextPage`` leads on. A `version` the log no longer reaches back to throws
    /// ``ModalStackError/versionGone(_:)``: read the session instead.
    public func events(in sessionID: String, after version: Int64 = 0, limit: Int? = nil) async throws -> EventsPage {
        var call = Call(.get, sessionPath(sessionID) + "/events")
        call.query = [URLQueryItem(name: "after", value: String(version))]
        if let limit { call.query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await send(call).decode()
    }

    /// The page of the event log that `cursor` (a page's ``EventsPage/nextPage``) leads to.
    public func events(at cursor: PageCursor) async throws -> EventsPage {
        try await send(cursor.call).decode()
    }

    /// The steps from the stack at `version` (`0`: an empty stack) to the current one;
    /// ``ModalStackError/versionGone(_:)`` when the log no longer holds `version`.
    public func transition(in sessionID: String, from version: Int64) async throws -> TransitionResponse {
        var call = Call(.get, sessionPath(sessionID) + "/transition")
        call.query = [URLQueryItem(name: "from", value: String(version))]
        return try await send(call).decode()
    }

    /// Whether the server is alive (`/livez`: it answers HTTP), or with `ready`, ready for traffic
    /// (`/readyz`: started, not stopping, its database reachable). Not ready is an answer, not an
    /// error: ``Health/status`` is ``Health/Status/notReady`` with its ``Health/reason``.
    public func health(ready: Bool = false) async throws -> Health {
        let call = Call(.get, ready ? "/readyz" : "/livez")
        do {
            return try await send(call).decode()
        } catch let error as UnexpectedResponse where error.status == 503 {
            guard let health = try? ModalStackJSON.makeDecoder().decode(Health.self, from: error.body) else {
                throw error
            }
            return health
        }
    }

    /// The destination catalog the server enforces, or ``Destinations/open``.
    public func destinations() async throws -> Destinations {
        try await send(Call(.get, "/v1/destinations")).decode()
    }

    /// With ``Configuration/sendsIfMatch``, the last version this client saw of the session: from
    /// the last answer that showed it (not a refusal's, not a replay's); `nil` otherwise.
    public func lastSeenVersion(of sessionID: String) -> Int64? {
        seenVersions.withLock { $0[sessionID] }
    }
}

/// What a present did.
public enum PresentOutcome: Sendable, Hashable {
    /// Pushed on top (`201`).
    case presented(PresentResponse)
    /// The presentation on top with the same key was updated in place (`200`).
    case updated(PresentResponse)
    /// The rules blocked it: it waits in the queue (`202`).
    case queued(QueuedResponse)

    /// The presentation presented, updated or queued.
    public var presentation: Presentation {
        switch self {
        case .presented(let answer), .updated(let answer): answer.presentation
        case .queued(let answer): answer.presentation
        }
    }

    /// The session after the change.
    public var session: Session {
        switch self {
        case .presented(let answer), .updated(let answer): answer.session
        case .queued(let answer): answer.session
        }
    }

    /// The steps from the stack before to the stack after.
    public var transition: [TransitionStep] {
        switch self {
        case .presented(let answer), .updated(let answer): answer.transition
        case .queued(let answer): answer.transition
        }
    }
}

/// What a push did.
public enum PushOutcome: Sendable, Hashable {
    /// A new entry on top of the level's path (`201`).
    case pushed(PushResponse)
    /// The level's last entry, with the same key and destination, updated in place (`200`).
    case updated(PushResponse)

    /// The answer, whichever it was.
    public var response: PushResponse {
        switch self {
        case .pushed(let answer), .updated(let answer): answer
        }
    }

    /// The entry pushed or updated.
    public var entry: PathEntry { response.entry }
    /// The level it is on.
    public var level: NavigationLevel { response.level }
    /// The session after the change.
    public var session: Session { response.session }
    /// The steps from the navigation before to the one after.
    public var transition: [TransitionStep] { response.transition }
}

/// An answer that is not the API's: a status it does not give, or a body that does not decode.
public struct UnexpectedResponse: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status of the answer.
    public var status: Int
    /// The answer's `Content-Type`; `nil` when it had none.
    public var contentType: String?
    /// The body, cut at 4 KiB.
    public var body: Data
    /// The status, the content type and the start of the body, for people.
    public var description: String {
        "unexpected \(status) answer (\(contentType ?? "no type")): \(String(decoding: body.prefix(200), as: UTF8.self))"
    }
}

// MARK: - Sending

extension ModalStack {
    enum Method: String, Sendable {
        case get = "GET"
        case put = "PUT"
        case post = "POST"
        case patch = "PATCH"
        case delete = "DELETE"
    }

    /// One request to send.
    struct Call: Sendable {
        var method: Method
        var path: String
        var query: [URLQueryItem] = []
        var headers: [String: String] = [:]
        var body: Data?
        /// The session whose version the answer carries.
        var sessionID: String?
        var timeout: TimeInterval?

        init(_ method: Method, _ path: String, sessionID: String? = nil) {
            self.method = method
            self.path = path
            self.sessionID = sessionID
        }

        /// Throws `EncodingError` for a body JSON cannot carry (a payload number that is not finite).
        init(_ method: Method, _ path: String, body: some Encodable, sessionID: String? = nil) throws {
            self.init(method, path, sessionID: sessionID)
            self.body = try ModalStackJSON.makeEncoder().encode(body)
        }

        /// Whether sending it twice has the effect of sending it once.
        var isIdempotent: Bool {
            switch method {
            case .get: true
            // Retried after its change was applied, a conditional PUT would fail its own If-Match.
            case .put: headers["If-Match"] == nil
            case .post, .patch: headers["Idempotency-Key"] != nil
            case .delete: false
            }
        }
    }

    /// An answer with a 2xx or 304 status.
    struct Answer {
        var status: Int
        var body: Data

        func decode<Value: Decodable>() throws -> Value {
            do {
                return try ModalStackJSON.makeDecoder().decode(Value.self, from: body)
            } catch {
                throw UnexpectedResponse(status: status, contentType: "application/json", body: body.prefix(4096))
            }
        }
    }

    func sessionPath(_ sessionID: String) -> String { "/v1/sessions/" + Self.pathSegment(sessionID) }

    func presentationPath(_ presentationID: String, in sessionID: String) -> String {
        sessionPath(sessionID) + "/presentations/" + Self.pathSegment(presentationID)
    }

    static func pathSegment(_ value: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    func entityTag(_ version: Int64) -> String { "\"\(version)\"" }

    /// The request that makes `change`: its method, path and body, `If-Match` as `options` and the
    /// configuration say, and an `Idempotency-Key` (the caller's, or a fresh one) where the server takes one.
    func changeCall(_ change: Change, in sessionID: String, _ options: ChangeOptions) throws -> Call {
        let session = sessionPath(sessionID)
        var call: Call
        switch change {
        case .present(let request): call = try Call(.post, session + "/presentations", body: request)
        case .dismiss(let request): call = try Call(.post, session + "/dismiss", body: request)
        case .deletePresentation(let presentationID, let force):
            call = Call(.delete, presentationPath(presentationID, in: sessionID))
            if force { call.query = [URLQueryItem(name: "force", value: "true")] }
        case .update(let presentationID, let request):
            call = try Call(.patch, presentationPath(presentationID, in: sessionID), body: request)
        case .replaceStack(let request): call = try Call(.put, session + "/stack", body: request)
        case .push(let request): call = try Call(.post, session + "/path", body: request)
        case .pop(let request): call = try Call(.post, session + "/path/pop", body: request)
        case .navigate(let request): call = try Call(.put, session + "/navigation", body: request)
        case .open(let url): call = try Call(.post, session + "/links", body: LinkRequest(url: url.absoluteString))
        }
        call.sessionID = sessionID
        let expected = options.expectedVersion ?? (configuration.sendsIfMatch ? lastSeenVersion(of: sessionID) : nil)
        call.headers["If-Match"] = expected.map(entityTag)
        if call.method == .post || call.method == .patch {
            call.headers["Idempotency-Key"] = options.idempotencyKey ?? UUID().uuidString
        }
        return call
    }

    /// Sends `call`, retrying as ``Configuration/maxAttempts`` allows; throws the server's refusal.
    func send(_ call: Call) async throws -> Answer {
        var attempt = 1
        var refreshedToken = false
        while true {
            let request = try await urlRequest(for: call)
            let data: Data
            let response: HTTPURLResponse
            do {
                let (body, urlResponse) = try await urlSession.data(for: request)
                guard let http = urlResponse as? HTTPURLResponse else { throw URLError(.badServerResponse) }
                (data, response) = (body, http)
            } catch let error as URLError where attempt < configuration.maxAttempts && isRetryable(error, call) {
                try await Task.sleep(for: retryDelay(attempt: attempt))
                attempt += 1
                continue
            }
            let status = response.statusCode
            if (200..<300).contains(status) || status == 304 {
                // A 412's ETag is a version the client has not seen, and a replay's may be an old one.
                if let sessionID = call.sessionID, let version = Self.version(fromETag: response),
                    response.value(forHTTPHeaderField: "Idempotent-Replayed") == nil
                {
                    saw(version, of: sessionID)
                }
                return Answer(status: status, body: data)
            }
            let error = Self.refusal(status: status, data: data, response: response)
            if case .unauthorized = error as? ModalStackError, case .tokenProvider = credential, !refreshedToken {
                refreshedToken = true
                dropToken(sentIn: request)
                continue
            }
            if let delay = Self.retryAfter(response, status: status, error: error), call.isIdempotent,
                attempt < configuration.maxAttempts
            {
                try await Task.sleep(for: min(delay, configuration.maxRetryDelay))
                attempt += 1
                continue
            }
            throw error
        }
    }

    /// The request for `call`: its URL under ``baseURL`` (whose path it keeps), headers and credential.
    func urlRequest(for call: Call) async throws -> URLRequest {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.percentEncodedPath = components.percentEncodedPath.trimmingSuffix("/") + call.path
        if !call.query.isEmpty { components.queryItems = call.query }
        guard let url = components.url else { throw URLError(.badURL) }
        var request = URLRequest(url: url)
        request.httpMethod = call.method.rawValue
        if let timeout = call.timeout { request.timeoutInterval = timeout }
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body = call.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        if let bearer = try await bearer() { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// The credential to send now.
    private func bearer() async throws -> String? {
        switch credential {
        case .none: return nil
        case .apiKey(let key): return key
        case .token(let token): return token
        case .tokenProvider(let provide): return try await providedToken(from: provide)
        }
    }

    /// A ``Credential/tokenProvider(_:)``'s token: the one held while it is not due for renewal,
    /// else the one being fetched, else a new fetch that every caller meanwhile waits for.
    private func providedToken(from provide: @escaping @Sendable () async throws -> ClientToken) async throws -> String
    {
        let now = Date()
        enum Next {
            case send(String)
            case wait(for: Task<ClientToken, any Error>)
        }
        let next: Next = providedToken.withLock { state in
            switch state {
            case .ready(let token, let fetchedAt) where !token.isDue(at: now, fetchedAt: fetchedAt):
                return .send(token.token)
            case .fetching(let fetch):
                return .wait(for: fetch)
            case .none, .ready:
                let fetch = Task { try await provide() }
                state = .fetching(fetch)
                return .wait(for: fetch)
            }
        }
        let fetch: Task<ClientToken, any Error>
        switch next {
        case .send(let token): return token  // the usual case: a token held and not due, no task made
        case .wait(let task): fetch = task
        }
        do {
            let token = try await fetch.value
            providedToken.withLock { held in
                if case .fetching(let current) = held, current == fetch { held = .ready(token, fetchedAt: now) }
            }
            return token.token
        } catch {
            providedToken.withLock { held in
                if case .fetching(let current) = held, current == fetch { held = .none }
            }
            throw error
        }
    }

    /// Forgets the provided token `request` carried, so the next request asks the provider for a new one
    /// (unless another request already did).
    func dropToken(sentIn request: URLRequest) {
        let sent = request.value(forHTTPHeaderField: "Authorization").map { String($0.dropFirst("Bearer ".count)) }
        providedToken.withLock { held in
            if case .ready(let token, _) = held, token.token == sent { held = .none }
        }
    }

    private func isRetryable(_ error: URLError, _ call: Call) -> Bool {
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed:
            true  // nothing was sent
        case .timedOut, .networkConnectionLost, .notConnectedToInternet, .badServerResponse, .cannotParseResponse:
            call.isIdempotent
        default:
            false
        }
    }

    /// Exponential backoff with jitter: a random delay from half to all of `retryDelay · 2^(attempt − 1)`, capped.
    func retryDelay(attempt: Int) -> Duration {
        let ceiling = min(configuration.retryDelay * (1 << min(attempt - 1, 20)), configuration.maxRetryDelay)
        return ceiling * Double.random(in: 0.5...1)
    }

    /// The error for a refused request: its ``ModalStackError``, or ``UnexpectedResponse`` without a problem.
    static func refusal(status: Int, data: Data, response: HTTPURLResponse) -> any Error {
        let contentType = response.value(forHTTPHeaderField: "Content-Type")
        if contentType?.hasPrefix("application/problem+json") == true,
            let problem = try? ModalStackJSON.makeDecoder().decode(ModalStackError.Problem.self, from: data)
        {
            return ModalStackError(problem)
        }
        return UnexpectedResponse(status: status, contentType: contentType, body: data.prefix(4096))
    }

    /// How long to wait before a retry the server invited with `Retry-After`, if it did.
    private static func retryAfter(_ response: HTTPURLResponse, status: Int, error: any Error) -> Duration? {
        guard status == 503 || isKeyInUse(error),
            let seconds = response.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init), seconds >= 0
        else { return nil }
        return .seconds(seconds)
    }

    private static func isKeyInUse(_ error: any Error) -> Bool {
        if case .idempotencyKeyInUse = error as? ModalStackError { true } else { false }
    }

    static func version(fromETag response: HTTPURLResponse) -> Int64? {
        guard let tag = response.value(forHTTPHeaderField: "ETag"), tag.count > 2, tag.first == "\"", tag.last == "\""
        else { return nil }
        return Int64(tag.dropFirst().dropLast())
    }

    func saw(_ session: Session) { saw(session.version, of: session.id) }

    func saw(_ version: Int64, of sessionID: String) {
        guard configuration.sendsIfMatch else { return }
        seenVersions.withLock { $0[sessionID] = version }
    }

    /// The session is gone: a change sent now is not based on any version of it.
    func forgetVersion(of sessionID: String) {
        _ = seenVersions.withLock { $0.removeValue(forKey: sessionID) }
    }
}

/// A token from a ``ModalStack/Credential/tokenProvider(_:)``, with when it expires.
///
/// It decodes from the JSON of ``TokenResponse`` (`{"token": …, "expiresAt": …}`), so a backend
/// can hand the server's answer to the app as it is.
public struct ClientToken: Codable, Sendable, Hashable {
    /// A compact JWS, sent as `Authorization: Bearer <token>`.
    public var token: String
    /// When the server stops taking it; `nil` when unknown (then it is renewed only when refused).
    public var expiresAt: Date?

    /// A token that expires at `expiresAt`.
    public init(_ token: String, expiresAt: Date?) {
        self.token = token
        self.expiresAt = expiresAt
    }

    /// The token of a ``ModalStack/token(for:scope:ttl:)`` answer.
    public init(_ response: TokenResponse) {
        self.init(response.token, expiresAt: response.expiresAt)
    }

    /// Whether to fetch the next one before sending this one: when less than a quarter of its
    /// lifetime, or 30 s, is left, so that a request in flight does not outlive it.
    func isDue(at now: Date, fetchedAt: Date) -> Bool {
        guard let expiresAt else { return false }
        let margin = min(30, expiresAt.timeIntervalSince(fetchedAt) / 4)
        return expiresAt.timeIntervalSince(now) <= margin
    }
}

/// Where a ``ModalStack/Credential/tokenProvider(_:)``'s token is.
enum ProvidedToken {
    case none
    case fetching(Task<ClientToken, any Error>)
    case ready(ClientToken, fetchedAt: Date)
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
