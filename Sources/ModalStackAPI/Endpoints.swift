import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore
import ModalStackTokens
import Synchronization
import Timekeeping

/// The REST endpoints: each maps an HTTP request to a service call and the result back to HTTP.
struct Endpoints: Sendable {
    let service: SessionService
    let changes: HTTPChanges
    let readiness: Readiness
    let watch: SessionWatch
    let metrics: Metrics
    /// Where a failed readiness check logs what the store said, which `/readyz` does not show.
    let log: AccessLog
    let time: any TimeSource

    let access: AccessControl
    /// Mints client tokens; nil without `--token-secret`.
    let minter: TokenMinter?
    /// The longest life a minted token may be given, in seconds.
    let maxTokenLifetimeSeconds: Int64

    func register(on router: inout Router) {
        route(&router, "GET", "/livez", .operations) { _ in Self.alive }
        route(&router, "GET", "/readyz", .operations, readyz)
        route(&router, "GET", "/metrics", .operations, metricsText)
        route(&router, "GET", "/openapi.yaml", .open) { _ in
            var headers = HTTPHeaders()
            headers.set("Content-Type", "application/yaml")
            return HTTPResponse(status: 200, headers: headers, body: OpenAPIDocument.bytes)
        }
        suspending(&router, "GET", "/v1/sessions", .admin, listSessions)
        suspending(&router, "POST", "/v1/sessions", .admin, createSessionWithServerID)
        suspending(&router, "PUT", "/v1/sessions/{sessionId}", .session(.write), putSession)
        deferred(&router, "GET", "/v1/sessions/{sessionId}", .session(.read), watch.getSession)
        suspending(&router, "DELETE", "/v1/sessions/{sessionId}", .admin, deleteSession)
        route(&router, "POST", "/v1/sessions/{sessionId}/tokens", .admin, mintToken)
        suspending(&router, "POST", "/v1/sessions/{sessionId}/presentations", .session(.write), present)
        suspending(
            &router, "GET", "/v1/sessions/{sessionId}/presentations/{presentationId}", .session(.read),
            getPresentation)
        suspending(
            &router, "PATCH", "/v1/sessions/{sessionId}/presentations/{presentationId}", .session(.write),
            updatePresentation)
        suspending(
            &router, "DELETE", "/v1/sessions/{sessionId}/presentations/{presentationId}", .session(.write),
            deletePresentation)
        suspending(&router, "POST", "/v1/sessions/{sessionId}/dismiss", .session(.write), dismiss)
        suspending(&router, "PUT", "/v1/sessions/{sessionId}/stack", .session(.write), replaceStack)
        suspending(&router, "POST", "/v1/sessions/{sessionId}/path", .session(.write), push)
        suspending(&router, "GET", "/v1/sessions/{sessionId}/path/{entryId}", .session(.read), getPathEntry)
        suspending(&router, "POST", "/v1/sessions/{sessionId}/path/pop", .session(.write), pop)
        suspending(&router, "PUT", "/v1/sessions/{sessionId}/navigation", .session(.write), navigate)
        suspending(&router, "POST", "/v1/sessions/{sessionId}/links", .session(.write), openLink)
        route(&router, "GET", "/v1/links/resolve", .anyClient, resolveLink)
        suspending(&router, "GET", "/v1/sessions/{sessionId}/events", .session(.read), events)
        deferred(&router, "GET", "/v1/sessions/{sessionId}/events/stream", .session(.read), watch.streamEvents)
        suspending(&router, "GET", "/v1/sessions/{sessionId}/transition", .session(.read), transition)
        suspending(&router, "GET", "/v1/sessions/{sessionId}/versions/{version}", .session(.read), sessionVersion)
        route(&router, "GET", "/v1/destinations", .anyClient, destinations)
    }

    /// An endpoint answered at once, once its credential lets it in.
    private func route(
        _ router: inout Router, _ method: String, _ pattern: String, _ required: Access,
        _ endpoint: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse
    ) {
        let access = self.access
        router.add(method, pattern) { request in
            switch access.authorize(request, for: required) {
            case .failure(let problem): problem.response
            case .success: Responses.guarded(endpoint, request)
            }
        }
    }

    /// An endpoint that answers later through `reply` (a long poll, an event stream), once its
    /// credential lets it in; it gets the grant, whose expiry bounds how long it may answer.
    private func deferred(
        _ router: inout Router, _ method: String, _ pattern: String, _ required: Access,
        _ endpoint: @escaping @Sendable (HTTPRequest, HTTPReply, Grant) throws -> Void
    ) {
        let access = self.access
        router.addDeferred(method, pattern) { request, reply in
            switch access.authorize(request, for: required) {
            case .failure(let problem):
                reply.send(problem.response)
            case .success(let grant):
                do {
                    try endpoint(request, reply, grant)
                } catch {
                    reply.send(Responses.problem(for: error))
                }
            }
        }
    }

    /// A change, or a read of the store: answered from the thread that finishes it (the commit,
    /// once durable, or the store's answer), so no worker waits for a commit or a database.
    private func suspending(
        _ router: inout Router, _ method: String, _ pattern: String, _ required: Access,
        _ endpoint: @escaping @Sendable (HTTPRequest, HTTPReply) throws -> Void
    ) {
        deferred(&router, method, pattern, required) { request, reply, _ in try endpoint(request, reply) }
    }

    // MARK: Health

    /// `/livez`'s answer, the same for every request: rendered once.
    private static let alive = Responses.json(200, ["status": "alive"])

    private func readyz(_ request: HTTPRequest) throws -> HTTPResponse {
        if let reason = readiness.notReadyReason {
            return Responses.json(503, ["status": "not ready", "reason": .string(reason)])
        }
        do {
            try service.checkHealth()
        } catch {
            // Whoever may probe readiness learns which dependency failed and how, never where it
            // is: the store's message names the database's host, port and name, so only the log has it.
            let reason = "database: \(error.kind.rawValue)"
            log.write(.warn, "not ready", ["reason": reason, "error": error.message], at: time.now())
            return Responses.json(503, ["status": "not ready", "reason": .string(reason)])
        }
        return Responses.json(200, ["status": "ready"])
    }

    private func metricsText(_ request: HTTPRequest) throws -> HTTPResponse {
        let sessions = (try? service.estimatedSessionCount()).map(Double.init) ?? .nan
        let text = metrics.render(gauges: [
            ("modalstack_sessions", "Sessions stored.", sessions),
            (
                "modalstack_store_reads_waiting", "Requests suspended while the database answers their read.",
                Double(service.readsWaitingForStore)
            ),
            (
                "modalstack_long_polls_waiting", "Long polls held, waiting for a change.",
                Double(metrics.longPollsWaiting.load(ordering: .relaxed))
            ),
            (
                "modalstack_event_streams_open", "Server-Sent Event streams open.",
                Double(metrics.eventStreamsOpen.load(ordering: .relaxed))
            ),
        ])
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"], body: Array(text.utf8))
    }

    // MARK: Sessions

    static let defaultSessionPage = 50
    static let maxSessionPage = 100

    /// The live sessions, the most recently changed first, a page at a time.
    private func listSessions(_ request: HTTPRequest, reply: HTTPReply) throws {
        let limit = Int(
            try request.integerQuery("limit", in: 1...Int64(Self.maxSessionPage)) ?? Int64(Self.defaultSessionPage))
        let cursor = try request.queryParameter("cursor").map(SessionListCursor.parse)
        service.recentSessions(after: cursor, limit: limit + 1) { found in
            Self.send(found, to: reply, for: request) { found in Self.sessionPage(found, limit: limit) }
        }
    }

    /// A page of the listing, from up to `limit + 1` sessions: one more says there is a next page.
    private static func sessionPage(_ found: [Session], limit: Int) -> HTTPResponse {
        var sessions = found
        let hasMore = sessions.count > limit
        sessions = Array(sessions.prefix(limit))
        let next: JSONValue =
            hasMore
            ? .string("/v1/sessions?limit=\(limit)&cursor=\(SessionListCursor.format(sessions[limit - 1]))") : .null
        var writer = JSONWriter(capacity: 256 * sessions.count + 64)
        writer.object { object in
            object.array("sessions") { array in
                for session in sessions {
                    array.object { summary in
                        summary.write("id", string: session.id)
                        summary.write("version", integer: session.version)
                        summary.write("updatedAt", session.updatedAt)
                        summary.write("expiresAt", session.expiresAt)
                        summary.write("depth", integer: Int64(session.stack.count))
                        summary.write("queueLength", integer: Int64(session.queue.count))
                        summary.member("top") { writer in
                            guard let top = session.top else { return writer.write(JSONValue.null) }
                            writer.object { entry in
                                entry.write("presentationId", string: top.id)
                                entry.write("destination", string: top.destination)
                                entry.write("style", string: top.style.rawValue)
                            }
                        }
                    }
                }
            }
            object.write("next", next)
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: writer.bytes)
    }

    private func createSessionWithServerID(_ request: HTTPRequest, reply: HTTPReply) throws {
        let options = try SessionOptions(json: try request.jsonBody(emptyBody: [:]))
        try changes.submit(
            .create(options), onSession: service.makeID(), createIfMissing: true, request: request,
            idempotencyScope: "",
            reply: reply
        ) { outcome, document in sessionCreated(outcome, document, to: request) }
    }

    private func putSession(_ request: HTTPRequest, reply: HTTPReply) throws {
        let id = try request.sessionID()
        let options = try SessionOptions(json: try request.jsonBody(emptyBody: [:]))
        try changes.submit(.create(options), onSession: id, createIfMissing: true, request: request, reply: reply) {
            outcome, document in
            outcome.changed
                ? sessionCreated(outcome, document, to: request)
                : Responses.sessionWritten(200, outcome, document, to: request)
        }
    }

    private func sessionCreated(_ outcome: CommandOutcome, _ document: SessionDocument, to request: HTTPRequest)
        -> HTTPResponse
    {
        var headers = HTTPHeaders()
        headers.set("Location", "/v1/sessions/\(outcome.session.id)")
        return Responses.sessionWritten(201, outcome, document, to: request, headers: headers)
    }

    private func deleteSession(_ request: HTTPRequest, reply: HTTPReply) throws {
        try changes.delete(sessionID: try request.sessionID(), request: request, reply: reply)
    }

    // MARK: Client tokens

    /// `{"scope"?: "read write", "ttl"?: seconds}` → a token for the session, signed with the first secret.
    private func mintToken(_ request: HTTPRequest) throws -> HTTPResponse {
        let sessionID = try request.sessionID()
        let body = try request.jsonBody(emptyBody: [:])
        guard let minter else { throw Problem.tokensNotConfigured() }
        let (scopes, lifetime) = try Self.tokenRequest(body, maxLifetimeSeconds: maxTokenLifetimeSeconds)
        let minted = minter.mint(sessionID: sessionID, scopes: scopes, lifetimeSeconds: lifetime)
        // A credential: no cache may keep it (RFC 6749 §5.1).
        return Responses.json(
            201,
            [
                "token": .string(minted.token), "expiresAt": .string(minted.expiresAt.rfc3339),
                "scope": .string(TokenScope.claim(scopes)),
            ], headers: ["Cache-Control": "no-store"])
    }

    /// The default life of a minted token: an hour, or the longest allowed if that is shorter.
    static let defaultTokenLifetimeSeconds: Int64 = 3600

    static func tokenRequest(_ body: JSONValue, maxLifetimeSeconds: Int64) throws(ModalError)
        -> (scopes: Set<TokenScope>, lifetimeSeconds: Int64)
    {
        guard let object = body.objectValue else {
            throw .validation([.init(pointer: "", message: "expected an object, got \(body.typeName)")])
        }
        var errors: [ModalError.FieldError] = []
        var scopes = Set(TokenScope.allCases)
        var lifetime = min(defaultTokenLifetimeSeconds, maxLifetimeSeconds)
        for member in object.members {
            let value = member.value
            switch member.key {
            case "scope":
                if let parsed = value.stringValue.flatMap(TokenScope.parse(claim:)) {
                    scopes = parsed
                } else {
                    errors.append(.init(pointer: "/scope", message: "must be \"read\", \"write\" or \"read write\""))
                }
            case "ttl":
                if let seconds = value.intValue, (1...maxLifetimeSeconds).contains(Int64(seconds)) {
                    lifetime = Int64(seconds)
                } else {
                    errors.append(
                        .init(
                            pointer: "/ttl",
                            message: "must be a whole number of seconds from 1 to \(maxLifetimeSeconds)"))
                }
            default:
                errors.append(.init(pointer: "/" + JSONPointer.escape(member.key), message: "is not a known field"))
            }
        }
        guard errors.isEmpty else { throw .validation(errors) }
        return (scopes, lifetime)
    }

    // MARK: Presentations

    private func present(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let command = Command.present(try PresentRequest(json: try request.jsonBody()))
        try changes.submit(command, onSession: sessionID, createIfMissing: true, request: request, reply: reply) {
            outcome, document in
            let subject: Responses.ChangeSubject
            let status: Int
            var headers = HTTPHeaders()
            switch outcome.effect {
            case .presented(let presentation):
                status = 201
                subject = .presentation(presentation)
                headers.set("Location", location(of: presentation, in: sessionID))
            case .queued(let presentation, let position):
                status = 202
                subject = .presentation(presentation, position: position)
                headers.set("Location", location(of: presentation, in: sessionID))
            case .updated(let presentation):
                status = 200
                subject = .presentation(presentation)
            case .created, .dismissed, .replaced, .pushed, .entryUpdated, .popped, .navigated:
                preconditionFailure("a present presents, queues or updates")
            }
            return Responses.change(status, subject, outcome, document, to: request, headers: headers)
        }
    }

    private func location(of presentation: Presentation, in sessionID: String) -> String {
        "/v1/sessions/\(sessionID)/presentations/\(presentation.id)"
    }

    private func getPresentation(_ request: HTTPRequest, reply: HTTPReply) throws {
        let id = request.pathParameters["presentationId"] ?? ""
        try onSession(request, reply) { [service] session in
            service.presentation(id: id, in: session) { found in
                Self.send(found, to: reply, for: request) { presentation in
                    guard let presentation else { throw ModalError.presentationNotFound(id) }
                    return try Responses.read(presentation.serialized(), of: session, for: request)
                }
            }
        }
    }

    private func updatePresentation(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let presentationID = request.pathParameters["presentationId"] ?? ""
        let command = Command.update(presentationID: presentationID, try UpdateRequest(json: try request.jsonBody()))
        try changes.submit(command, onSession: sessionID, createIfMissing: false, request: request, reply: reply) {
            outcome, document in
            guard case .updated(let presentation) = outcome.effect else { preconditionFailure("an update updates") }
            return Responses.change(200, .presentation(presentation), outcome, document, to: request)
        }
    }

    private func deletePresentation(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let presentationID = request.pathParameters["presentationId"] ?? ""
        let dismiss = DismissRequest(.presentation(id: presentationID), force: try request.booleanQuery("force"))
        try dismissed(dismiss, onSession: sessionID, request: request, reply: reply)
    }

    private func dismiss(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let dismiss = try DismissRequest(json: try request.jsonBody(emptyBody: [:]))
        try dismissed(dismiss, onSession: sessionID, request: request, reply: reply)
    }

    private func dismissed(
        _ dismiss: DismissRequest, onSession sessionID: String, request: HTTPRequest, reply: HTTPReply
    ) throws {
        try changes.submit(
            .dismiss(dismiss), onSession: sessionID, createIfMissing: false, request: request, reply: reply
        ) { outcome, document in
            guard case .dismissed(let removed) = outcome.effect else {
                preconditionFailure("a dismiss always dismisses")
            }
            return Responses.change(200, .dismissed(removed), outcome, document, to: request)
        }
    }

    private func replaceStack(_ request: HTTPRequest, reply: HTTPReply) throws {
        try setWhole(.replaceStack(try ReplaceStackRequest(json: try request.jsonBody())), request, reply)
    }

    /// A change that sets the stack whole (`PUT …/stack`, `PUT …/navigation`), answered with what left it.
    private func setWhole(_ command: Command, _ request: HTTPRequest, _ reply: HTTPReply) throws {
        try changes.submit(
            command, onSession: try request.sessionID(), createIfMissing: true, request: request, reply: reply
        ) { outcome, document in
            Responses.change(200, .dismissed(outcome.dismissed), outcome, document, to: request)
        }
    }

    // MARK: Paths

    private func push(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let command = Command.push(try PushRequest(json: try request.jsonBody()))
        try changes.submit(command, onSession: sessionID, createIfMissing: true, request: request, reply: reply) {
            outcome, document in
            switch outcome.effect {
            case .pushed(let entry, let level):
                var headers = HTTPHeaders()
                headers.set("Location", "/v1/sessions/\(sessionID)/path/\(entry.id)")
                return Responses.change(
                    201, .entry(entry, level: level), outcome, document, to: request, headers: headers)
            case .entryUpdated(let entry, let level):
                return Responses.change(200, .entry(entry, level: level), outcome, document, to: request)
            default:
                preconditionFailure("a push pushes or updates")
            }
        }
    }

    private func getPathEntry(_ request: HTTPRequest, reply: HTTPReply) throws {
        let id = request.pathParameters["entryId"] ?? ""
        try onSession(request, reply) { session in reply.send(try Self.pathEntry(id, of: session, for: request)) }
    }

    private static func pathEntry(_ id: String, of session: Session, for request: HTTPRequest) throws -> HTTPResponse {
        guard let found = session.pathEntry(id: id) else {
            throw ModalError(
                .entryNotFound, "no level of the session has the path entry \(id) now",
                context: ["entryId": .string(id)])
        }
        var writer = JSONWriter(capacity: 512)
        writer.object { object in
            object.write("level", string: found.level.name)
            object.write("position", integer: Int64(found.position))
            object.write("entry", found.entry)
        }
        return try Responses.read(writer.bytes, of: session, for: request)
    }

    private func pop(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let command = Command.pop(try PopRequest(json: try request.jsonBody(emptyBody: [:])))
        try changes.submit(command, onSession: sessionID, createIfMissing: false, request: request, reply: reply) {
            outcome, document in
            guard case .popped(let entries, let level) = outcome.effect else { preconditionFailure("a pop pops") }
            return Responses.change(200, .popped(entries, level: level), outcome, document, to: request)
        }
    }

    private func navigate(_ request: HTTPRequest, reply: HTTPReply) throws {
        try setWhole(.navigate(try NavigationRequest(json: try request.jsonBody())), request, reply)
    }

    // MARK: Deep links

    private func openLink(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let link = try resolve(try LinkRequest(json: try request.jsonBody()).url)
        try changes.submit(
            .openLink(link), onSession: sessionID, createIfMissing: true, request: request, reply: reply
        ) { outcome, document in
            Responses.change(200, .link(link), outcome, document, to: request)
        }
    }

    private func resolveLink(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let url = try request.queryParameter("url") else {
            throw Problem.invalidParameter("url", "is required: the link to resolve")
        }
        let link: ResolvedLink
        do {
            link = try resolve(url)
        } catch let error as ModalError where error.kind == .validationFailed {
            // A query parameter, not a body member: no pointer to give.
            throw Problem.invalidParameter("url", error.fieldErrors.first?.message ?? error.detail)
        }
        return Responses.json(
            200,
            [
                "route": link.route.json, "action": .string(link.action.name), "clear": .bool(link.action.clears),
                "request": link.request,
            ])
    }

    /// The catalog's answer for a link; without a catalog no route matches anything.
    private func resolve(_ url: String) throws -> ResolvedLink {
        guard let catalog = service.catalog else {
            throw ModalError(
                .noRoute, "no route matches \(url): the server has no catalog of routes", context: ["url": .string(url)]
            )
        }
        return try catalog.resolve(url)
    }

    // MARK: Event log and transitions

    /// The default and the largest page of `GET …/events`.
    static let defaultEventPage = 100
    static let maxEventPage = 1000

    /// A page of the log after `after`, as `transition` plans from `from`: beyond the session's
    /// version is a 400, and past what the log still holds a 410, but for `after=0`, "from the
    /// start", which begins where the log does and says so in `after`.
    private func events(_ request: HTTPRequest, reply: HTTPReply) throws {
        try onSession(request, reply) { [service] session in
            let after = try request.integerQuery("after", in: 0...Int64.max) ?? 0
            let limit = Int(
                try request.integerQuery("limit", in: 1...Int64(Self.maxEventPage)) ?? Int64(Self.defaultEventPage))
            guard after <= session.version else {
                throw Problem.invalidParameter("after", "is newer than the session's version \(session.version)")
            }
            service.changes(sessionID: session.id, after: after, eventLimit: limit) { logged in
                Self.send(logged, to: reply, for: request) { logged in
                    try Self.eventsPage(logged, of: session, after: after, limit: limit, for: request)
                }
            }
        }
    }

    /// A page of the session's events: the changes logged after `after`, and where the next page starts.
    private static func eventsPage(
        _ logged: [SessionChange], of session: Session, after: Int64, limit: Int, for request: HTTPRequest
    ) throws -> HTTPResponse {
        let sessionID = session.id
        let start = logged.first.map { $0.version - 1 } ?? after
        if after > 0, start > after { throw Problem.versionGone(after) }
        let last = logged.last?.version ?? after
        let next: JSONValue =
            last < session.version ? .string("/v1/sessions/\(sessionID)/events?after=\(last)&limit=\(limit)") : .null
        var writer = JSONWriter(capacity: 4096)
        writer.object { object in
            object.write("after", integer: start)
            object.write("events", logged.flatMap(\.flatEvents))
            object.write("changes", logged.map(\.summary))
            object.write("version", integer: session.version)
            object.write("next", next)
        }
        return try Responses.read(writer.bytes, of: session, for: request)
    }

    private func transition(_ request: HTTPRequest, reply: HTTPReply) throws {
        try onSession(request, reply) { [service] session in
            guard let from = try request.integerQuery("from", in: 0...Int64.max) else {
                throw Problem.invalidParameter("from", "is required: the version the client shows")
            }
            guard from <= session.version else {
                throw Problem.invalidParameter("from", "is newer than the session's version \(session.version)")
            }
            guard from != session.version, from != 0 else {
                let old = from == 0 ? NavigationShape() : NavigationShape(session)
                return reply.send(try Self.transition(from: from, old, to: session, for: request))
            }
            service.change(sessionID: session.id, version: from) { change in
                Self.send(change, to: reply, for: request) { change in
                    guard let change else { throw Problem.versionGone(from) }
                    return try Self.transition(from: from, change.shape, to: session, for: request)
                }
            }
        }
    }

    /// The plan from what a client shows at version `from` (its shape `old`) to the session now.
    private static func transition(
        from: Int64, _ old: NavigationShape, to session: Session, for request: HTTPRequest
    ) throws -> HTTPResponse {
        let plan = TransitionPlan(from: old, to: NavigationShape(session))
        let body: JSONValue = ["from": JSONValue(from), "to": JSONValue(session.version), "transition": plan.json]
        return try Responses.read(body.serialized(), of: session, for: request)
    }

    /// The session as it was at a version, in the representation `GET` gives: the current
    /// version as `GET` answers it, an older one rebuilt from the log while the log holds the
    /// change that made it (else 410), a version not reached yet 404. Tagged with that version,
    /// so that `If-None-Match` answers 304 for the version a client already has.
    private func sessionVersion(_ request: HTTPRequest, reply: HTTPReply) throws {
        let sessionID = try request.sessionID()
        let version = try request.versionParameter()
        try onRenderedSession(request, reply) { [service] rendered in
            let current = rendered.session
            if version == current.version {
                return reply.send(try Responses.read(rendered.body, of: current, for: request))
            }
            guard version < current.version else {
                throw Problem.versionNotFound(version, currentVersion: current.version)
            }
            service.session(id: sessionID, at: version) { old in
                Self.send(old, to: reply, for: request) { old in
                    guard let old else { throw Problem.versionGone(version) }
                    return try Responses.read(old.serialized(), of: old, for: request)
                }
            }
        }
    }

    /// Reads the request's session without holding the thread, then goes on with it in `next`,
    /// which answers through the request's reply. No session: a 404 problem; `next` throwing: its problem.
    private func onSession(
        _ request: HTTPRequest, _ reply: HTTPReply, _ next: @escaping @Sendable (Session) throws -> Void
    ) throws {
        try onRenderedSession(request, reply) { rendered in try next(rendered.session) }
    }

    /// ``onSession(_:_:_:)``, with the session's JSON as `GET` answers it.
    private func onRenderedSession(
        _ request: HTTPRequest, _ reply: HTTPReply,
        _ next: @escaping @Sendable (SessionService.RenderedSession) throws -> Void
    ) throws {
        let sessionID = try request.sessionID()
        service.renderedSession(id: sessionID) { read in
            do {
                guard let rendered = try read.get() else { throw Problem.sessionNotFound(sessionID) }
                try next(rendered)
            } catch {
                reply.send(Responses.problem(for: error))
            }
        }
    }

    /// Answers with what `respond` makes of a read's result, or with the problem either holds.
    private static func send<Value>(
        _ result: Result<Value, StoreError>, to reply: HTTPReply, for request: HTTPRequest,
        _ respond: (Value) throws -> HTTPResponse
    ) {
        reply.send(Responses.guarded({ _ in try respond(try result.get()) }, request))
    }

    // MARK: Destinations

    private func destinations(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let catalog = service.catalog else {
            return Responses.json(200, ["mode": "open", "destinations": []])
        }
        return Responses.json(200, ["mode": "catalog", "destinations": catalog.json["destinations"] ?? []])
    }
}

/// The `cursor` of `GET /v1/sessions`: where the previous page ended, as `<updatedAt ms>.<id>`.
/// Clients pass it back as given.
enum SessionListCursor {
    static func format(_ session: Session) -> String {
        "\(session.updatedAt.millisecondsSinceEpoch).\(session.id)"
    }

    static func parse(_ text: String) throws -> SessionCursor {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, (1...18).contains(parts[0].utf8.count),
            parts[0].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let milliseconds = Int64(parts[0]), Identifiers.isValidSessionID(parts[1])
        else { throw Problem.invalidParameter("cursor", "is not a cursor this server gave (take it from next)") }
        return SessionCursor(updatedAt: Timestamp(millisecondsSinceEpoch: milliseconds), id: parts[1])
    }
}
