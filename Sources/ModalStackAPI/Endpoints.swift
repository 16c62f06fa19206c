import ModalStackCore
import ModalStackHTTP

/// The REST endpoints: each maps an HTTP request to a service call and the result back to HTTP.
struct Endpoints: Sendable {
    let service: SessionService
    let readiness: Readiness

    func register(on router: inout Router) {
        router.add("GET", "/livez") { _ in Responses.json(200, ["status": "alive"]) }
        route(&router, "GET", "/readyz", readyz)
        router.add("GET", "/openapi.yaml") { _ in
            var headers = HTTPHeaders()
            headers.set("Content-Type", "application/yaml")
            return HTTPResponse(status: 200, headers: headers, body: OpenAPIDocument.bytes)
        }
        route(&router, "POST", "/v1/sessions", createSessionWithServerID)
        route(&router, "PUT", "/v1/sessions/{sessionId}", putSession)
        route(&router, "GET", "/v1/sessions/{sessionId}", getSession)
        route(&router, "DELETE", "/v1/sessions/{sessionId}", deleteSession)
        route(&router, "POST", "/v1/sessions/{sessionId}/presentations", present)
        route(&router, "GET", "/v1/sessions/{sessionId}/presentations/{presentationId}", getPresentation)
        route(&router, "DELETE", "/v1/sessions/{sessionId}/presentations/{presentationId}", deletePresentation)
        route(&router, "POST", "/v1/sessions/{sessionId}/dismiss", dismiss)
        route(&router, "PUT", "/v1/sessions/{sessionId}/stack", replaceStack)
    }

    private func route(
        _ router: inout Router, _ method: String, _ pattern: String,
        _ endpoint: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse
    ) {
        router.add(method, pattern) { request in Responses.guarded(endpoint, request) }
    }

    // MARK: Health

    private func readyz(_ request: HTTPRequest) throws -> HTTPResponse {
        if let reason = readiness.notReadyReason {
            return Responses.json(503, ["status": "not ready", "reason": .string(reason)])
        }
        do {
            try service.checkHealth()
        } catch {
            return Responses.json(503, ["status": "not ready", "reason": .string("database: \(error)")])
        }
        return Responses.json(200, ["status": "ready"])
    }

    // MARK: Sessions

    private func createSessionWithServerID(_ request: HTTPRequest) throws -> HTTPResponse {
        try SessionOptions(json: try request.jsonBody(emptyBody: [:]))
        let (session, _) = try service.createSession(id: RandomID.make())
        return sessionCreated(session)
    }

    private func putSession(_ request: HTTPRequest) throws -> HTTPResponse {
        let id = try request.sessionID()
        try SessionOptions(json: try request.jsonBody(emptyBody: [:]))
        let (session, created) = try service.createSession(id: id)
        return created ? sessionCreated(session) : Responses.json(200, session.json)
    }

    private func sessionCreated(_ session: Session) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Location", "/v1/sessions/\(session.id)")
        return Responses.json(201, session.json, headers: headers)
    }

    private func getSession(_ request: HTTPRequest) throws -> HTTPResponse {
        Responses.json(200, try service.session(id: try request.sessionID()).json)
    }

    private func deleteSession(_ request: HTTPRequest) throws -> HTTPResponse {
        try service.deleteSession(id: try request.sessionID())
        return Responses.noContent()
    }

    // MARK: Presentations

    private func present(_ request: HTTPRequest) throws -> HTTPResponse {
        let sessionID = try request.sessionID()
        let command = Command.present(try PresentRequest(json: try request.jsonBody()))
        let outcome = try service.execute(command, onSession: sessionID, createIfMissing: true)
        switch outcome.effect {
        case .presented(let presentation):
            var headers = HTTPHeaders()
            headers.set("Location", "/v1/sessions/\(sessionID)/presentations/\(presentation.id)")
            return Responses.json(201, ["presentation": presentation.json, "session": outcome.session.json], headers: headers)
        case .updated(let presentation):
            return Responses.json(200, ["presentation": presentation.json, "session": outcome.session.json])
        case .dismissed, .replaced:
            preconditionFailure("a present either presents or updates")
        }
    }

    private func getPresentation(_ request: HTTPRequest) throws -> HTTPResponse {
        let session = try service.session(id: try request.sessionID())
        let presentationID = request.pathParameters["presentationId"] ?? ""
        guard let position = session.position(ofPresentation: presentationID) else {
            throw ModalError.presentationNotFound(presentationID)
        }
        return Responses.json(200, session.stack[position].json)
    }

    private func deletePresentation(_ request: HTTPRequest) throws -> HTTPResponse {
        let presentationID = request.pathParameters["presentationId"] ?? ""
        return try dismissed(.presentation(id: presentationID), onSession: try request.sessionID())
    }

    private func dismiss(_ request: HTTPRequest) throws -> HTTPResponse {
        let sessionID = try request.sessionID()
        return try dismissed(try DismissTarget(json: try request.jsonBody(emptyBody: [:])), onSession: sessionID)
    }

    private func dismissed(_ target: DismissTarget, onSession sessionID: String) throws -> HTTPResponse {
        let outcome = try service.execute(.dismiss(target), onSession: sessionID, createIfMissing: false)
        guard case .dismissed(let removed) = outcome.effect else {
            preconditionFailure("a dismiss always dismisses")
        }
        return Responses.json(200, ["dismissed": .array(removed.map(\.json)), "session": outcome.session.json])
    }

    private func replaceStack(_ request: HTTPRequest) throws -> HTTPResponse {
        let sessionID = try request.sessionID()
        let command = Command.replaceStack(try ReplaceStackRequest(json: try request.jsonBody()))
        let outcome = try service.execute(command, onSession: sessionID, createIfMissing: true)
        return Responses.json(200, ["session": outcome.session.json])
    }
}
