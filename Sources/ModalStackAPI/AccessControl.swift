import ModalStackCore
import ModalStackHTTP
import ModalStackTokens

/// Who may call an endpoint.
enum Access: Sendable {
    /// Anyone (`/openapi.yaml`).
    case open
    /// `/livez`, `/readyz`, `/metrics`: anyone, or an API key with `--auth-operations`.
    case operations
    /// An API key only: deleting or listing sessions, minting tokens.
    case admin
    /// An API key or any valid client token (the catalog of destinations).
    case anyClient
    /// An API key, or a token for the session in the path that has `scope`.
    case session(TokenScope)
}

extension Access {
    /// Whether a client token can ever be enough here.
    var acceptsTokens: Bool {
        switch self {
        case .anyClient, .session: true
        case .open, .operations, .admin: false
        }
    }
}

/// The credential a request was let in with.
enum Grant: Sendable {
    /// None was needed.
    case open
    case apiKey
    /// A client token, accepted until `usableUntil` (its `exp` and the leeway).
    case token(ClientToken, usableUntil: Timestamp)

    /// When the credential stops working, for answers that outlive the request's start (long
    /// polls, event streams); nil for one that does not expire.
    var usableUntil: Timestamp? {
        if case .token(_, let usableUntil) = self { return usableUntil }
        return nil
    }
}

/// The one place that decides whether a request's credential lets it call an endpoint.
///
/// When API keys or token keys are configured, `/v1` needs `Authorization: Bearer <credential>`,
/// or on `GET` `?access_token=<token>` (RFC 6750 §2.3, for `EventSource`, which cannot send
/// headers; a token only, never an API key). An API key may do everything; a client token only what its session and scope allow.
/// Refusals follow RFC 6750: 401 `invalid_token` for a credential that is not valid, 403
/// `insufficient_scope` for a valid one used beyond what it grants, 400 `invalid_request` for a
/// credential sent twice or in the query of a change. Every refusal is counted by reason.
struct AccessControl: Sendable {
    private let keys: [SecretDigest]
    private let verifier: TokenVerifier?
    /// The verifier's allowance past `exp`, in milliseconds.
    private let leewayMilliseconds: Int64
    private let protectsOperations: Bool
    private let metrics: Metrics

    init(keys: [String], verifier: TokenVerifier?, leewaySeconds: Int64, protectsOperations: Bool, metrics: Metrics) {
        self.keys = keys.map { SecretDigest(Array($0.utf8)) }
        self.verifier = verifier
        leewayMilliseconds = leewaySeconds * 1000
        self.protectsOperations = protectsOperations
        self.metrics = metrics
    }

    /// Whether any credential is configured: without one the API is open.
    var isEnabled: Bool { !keys.isEmpty || verifier != nil }

    func authorize(_ request: HTTPRequest, for access: Access) -> Result<Grant, Problem> {
        switch access {
        case .open:
            return .success(.open)
        case .operations:
            guard protectsOperations, !keys.isEmpty else { return .success(.open) }
        case .admin, .anyClient, .session:
            guard isEnabled else { return .success(.open) }
        }
        switch Self.credential(of: request) {
        case .none:
            return refuse(
                .unauthorized(keyGiven: false, tokensAccepted: access.acceptsTokens && verifier != nil),
                reason: "missing")
        case .conflicting(let detail):
            return refuse(.invalidAuthorizationRequest(detail), reason: "invalid_request")
        case .header(let credential):
            if isAPIKey(credential) { return .success(.apiKey) }
            return tokenGrant(credential, for: access, on: request, mayBeAPIKey: !keys.isEmpty)
        case .query(let token):
            // Never an API key: a URL ends up in histories and proxy logs.
            return tokenGrant(token, for: access, on: request, mayBeAPIKey: false)
        }
    }

    /// - Parameter mayBeAPIKey: the credential came where an API key may, and keys are configured.
    private func tokenGrant(
        _ credential: String, for access: Access, on request: HTTPRequest, mayBeAPIKey: Bool
    ) -> Result<Grant, Problem> {
        guard let verifier else {
            return refuse(.unauthorized(keyGiven: true, tokensAccepted: false), reason: "invalid_key")
        }
        let token: ClientToken
        switch verifier.verify(credential) {
        case .failure(.malformed) where mayBeAPIKey:
            // Not shaped like a token: as likely a mistyped key, so the detail names neither alone.
            return refuse(
                .invalidToken("the credential is neither a valid API key nor a well-formed client token"),
                reason: TokenRefusal.malformed.reason)
        case .failure(let refusal):
            return refuse(.invalidToken(refusal.detail), reason: refusal.reason)
        case .success(let verified): token = verified
        }
        switch access {
        case .open, .anyClient:
            return .success(.token(token, usableUntil: usableUntil(token)))
        case .operations, .admin:
            return refuse(.insufficientScope("this endpoint needs an API key, not a client token"), reason: "scope")
        case .session(let scope):
            // Compared raw: a path parameter that is not a valid id cannot equal a token's `sub`.
            guard token.sessionID == request.pathParameters["sessionId"] else {
                return refuse(.insufficientScope("the token is for another session"), reason: "session")
            }
            guard token.scopes.contains(scope) else {
                return refuse(
                    .insufficientScope("the token's scope does not include \(scope.rawValue)"), reason: "scope")
            }
            return .success(.token(token, usableUntil: usableUntil(token)))
        }
    }

    private func usableUntil(_ token: ClientToken) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: token.expiresAt.millisecondsSinceEpoch + leewayMilliseconds)
    }

    private func refuse(_ problem: Problem, reason: String) -> Result<Grant, Problem> {
        metrics.recordAuthFailure(reason: reason)
        return .failure(problem)
    }

    private enum Credential {
        case none
        /// `Authorization: Bearer …` (anything else there is an empty credential, refused).
        case header(String)
        /// `?access_token=…`, on GET and HEAD only.
        case query(String)
        case conflicting(String)
    }

    private static func credential(of request: HTTPRequest) -> Credential {
        let header = request.headers["Authorization"]
        let query: String?
        do {
            query = try request.queryParameter("access_token")
        } catch {
            return .conflicting("send the credential once: access_token is given more than once")
        }
        switch (header, query) {
        case (nil, nil):
            return .none
        case (_?, _?):
            return .conflicting("send the credential once: in Authorization or in access_token, not both")
        case (nil, let token?):
            guard request.method == "GET" || request.method == "HEAD" else {
                return .conflicting("access_token in the query is accepted on GET only; send Authorization: Bearer")
            }
            return token.isEmpty ? .none : .query(token)
        case (let header?, nil):
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .header("") }
            return .header(String(parts[1]))
        }
    }

    private func isAPIKey(_ credential: String) -> Bool {
        let presented = SecretDigest(Array(credential.utf8))
        // Every key is compared, so the time taken says nothing about which one matched.
        var matched = false
        for key in keys where key.matches(presented) {
            matched = true
        }
        return matched
    }
}
