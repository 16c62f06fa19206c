import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore

/// Changes over HTTP: reads `If-Match` and `Idempotency-Key`, hands the change to the service,
/// and answers with what it rendered, a replay, or a problem.
struct HTTPChanges: Sendable {
    let service: SessionService
    /// Whether every change must carry `If-Match` (428 otherwise).
    let requiresIfMatch: Bool

    /// Applies `command` to the session; `reply` gets `render`'s response once it is committed.
    /// `render` gets the session's JSON with the outcome: answers embed it as it is.
    /// - Parameters:
    ///   - createIfMissing: a first write creates the session instead of failing with 404.
    ///   - idempotencyScope: where an `Idempotency-Key` is unique; the session by default.
    func submit(
        _ command: Command, onSession id: String, createIfMissing: Bool, request: HTTPRequest,
        idempotencyScope: String? = nil, reply: HTTPReply,
        render: @escaping @Sendable (CommandOutcome, SessionDocument) -> HTTPResponse
    ) throws {
        let change = ChangeRequest(
            sessionID: id, command: command, createsSession: createIfMissing,
            expectedVersion: try expectedVersion(of: request, creates: command.isCreate),
            idempotencyKey: try Self.idempotencyKey(of: request, scope: idempotencyScope ?? id))
        service.submit(change, render: render) { result in
            switch result {
            case .answered(let response): reply.send(response)
            case .replayed(let stored): reply.send(Self.replay(stored))
            case .refused(let refusal): reply.send(Problem(refusal).response)
            }
        }
    }

    /// Deletes the session; `reply` gets 204 once the deletion is committed.
    func delete(sessionID id: String, request: HTTPRequest, reply: HTTPReply) throws {
        service.delete(sessionID: id, expecting: try expectedVersion(of: request, creates: false)) { result in
            switch result {
            case .success: reply.send(Responses.noContent())
            case .failure(let refusal): reply.send(Problem(refusal).response)
            }
        }
    }

    /// What the request's `If-Match` expects; a 428 when `--require-if-match` wants one and there
    /// is none, or only `*`, which any version matches and so prevents no lost update (session
    /// creation needs none).
    private func expectedVersion(of request: HTTPRequest, creates: Bool) throws -> ExpectedVersion? {
        let ifMatch = try request.ifMatch()
        if requiresIfMatch, ifMatch == nil || ifMatch == .any, !creates { throw Problem.preconditionRequired() }
        return ifMatch?.expected
    }

    /// Keys are 1–255 visible ASCII characters.
    static let maxKeyLength = 255

    /// The request's `Idempotency-Key` (IETF draft), which POST and PATCH may carry.
    static func idempotencyKey(of request: HTTPRequest, scope: String) throws -> IdempotencyKey? {
        guard request.method == "POST" || request.method == "PATCH", let key = request.headers["Idempotency-Key"] else {
            return nil
        }
        guard (1...maxKeyLength).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Problem.invalidHeader("Idempotency-Key", "must be 1-\(maxKeyLength) visible ASCII characters")
        }
        // Method, path and body: a retry must send exactly the same request.
        let fingerprint = Array("\(request.method) \(request.path)\n".utf8) + request.body
        return IdempotencyKey(scope: scope, key: key, fingerprint: fingerprint)
    }

    /// The response stored for the first request, as a retry gets it.
    static func replay(_ stored: StoredResponse) -> HTTPResponse {
        var headers = HTTPHeaders()
        for (name, value) in stored.headers.sorted(by: { $0.key < $1.key }) {
            headers.set(name, value)
        }
        headers.set("Idempotent-Replayed", "true")
        return HTTPResponse(status: stored.status, headers: headers, body: stored.body)
    }
}

extension EntityTag.Condition {
    /// What `If-Match` expects: strong comparison, so weak tags never match.
    var expected: ExpectedVersion {
        switch self {
        case .any: .any
        case .versions(let strong, _): .oneOf(strong)
        }
    }
}
