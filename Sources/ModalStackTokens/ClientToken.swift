import ModalStackCore

/// What a token lets its holder do with its session: `read` (the session, its presentations, events,
/// transition, long polls and the event stream) and `write` (present, dismiss, patch, replace).
public enum TokenScope: String, Sendable, Hashable, CaseIterable {
    case read
    case write
}

extension TokenScope {
    /// The `scope` claim's form of `scopes`: space-separated, in ``allCases`` order ("read write").
    public static func claim(_ scopes: Set<TokenScope>) -> String {
        allCases.filter(scopes.contains).map(\.rawValue).joined(separator: " ")
    }

    /// The scopes of a `scope` claim: a non-empty list of `read` and `write` separated by single spaces;
    /// nil for anything else.
    public static func parse(claim: String) -> Set<TokenScope>? {
        var scopes = Set<TokenScope>()
        for name in claim.split(separator: " ", omittingEmptySubsequences: false) {
            guard let scope = TokenScope(rawValue: String(name)) else { return nil }
            scopes.insert(scope)
        }
        return scopes.isEmpty ? nil : scopes
    }
}

/// A verified client token: what it lets its holder do.
public struct ClientToken: Sendable, Equatable {
    /// The `sub` claim.
    public let sessionID: String
    /// `scope` (space-separated); absent means both.
    public let scopes: Set<TokenScope>
    /// `exp`.
    public let expiresAt: Timestamp

    public init(sessionID: String, scopes: Set<TokenScope>, expiresAt: Timestamp) {
        self.sessionID = sessionID
        self.scopes = scopes
        self.expiresAt = expiresAt
    }
}

/// Why a token was refused. Neither ``reason`` nor ``detail`` ever contains the token.
public enum TokenRefusal: Error, Sendable, Equatable {
    case malformed
    case unsupportedAlgorithm
    case badSignature
    case expired
    case notYetValid
    case wrongAudience
    case lifetimeTooLong
    case missingClaim(String)
    case invalidClaim(String)

    /// A short label for metrics and logs.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "algorithm"
        case .badSignature: "signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .wrongAudience: "audience"
        case .lifetimeTooLong: "lifetime"
        case .missingClaim, .invalidClaim: "claims"
        }
    }

    /// A human sentence for a problem+json body.
    public var detail: String {
        switch self {
        case .malformed: "The token is not a well-formed compact JWS."
        case .unsupportedAlgorithm: "The token's signature algorithm is not one this server accepts."
        case .badSignature: "The token's signature does not verify."
        case .expired: "The token has expired."
        case .notYetValid: "The token is not valid yet."
        case .wrongAudience: "The token is meant for another audience."
        case .lifetimeTooLong: "The token lives longer than this server allows."
        case .missingClaim(let name): "The token has no '\(name)' claim."
        case .invalidClaim(let name): "The token's '\(name)' claim is invalid."
        }
    }
}
