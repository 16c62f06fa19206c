import ModalStackCore
import Timekeeping

/// Verifies client tokens: compact JWS (RFC 7515) carrying JWT claims (RFC 7519).
///
/// The header is read first and its `alg` must be one the keys support; the signature is checked
/// before any claim is read, so unauthenticated claims are never parsed. Then `sub` (a session id)
/// and `exp` are required, and `iat`, `nbf`, `aud` and `scope` are checked when present.
public struct TokenVerifier: Sendable {
    /// Longer tokens are refused as malformed before anything is decoded.
    public static let maxTokenLength = 8192

    /// Headers and claims are small flat objects: nothing deeper or longer is needed.
    private static let jsonLimits = JSONParser.Limits(maxDepth: 4, maxStringBytes: maxTokenLength, maxNumberLength: 32)

    /// NumericDates beyond this many seconds from the epoch (about the year 318 000) are refused, and
    /// configured durations clamped to it, so that the arithmetic in milliseconds cannot overflow.
    private static let maxSeconds: Int64 = 10_000_000_000_000

    private let keys: TokenKeys
    private let audience: String?
    private let maxLifetimeMilliseconds: Int64
    private let leewayMilliseconds: Int64
    private let time: any TimeSource

    /// - Parameters:
    ///   - audience: when set, the `aud` claim must name it.
    ///   - maxLifetimeSeconds: the longest `exp - iat` accepted (`exp - now` without `iat`).
    ///   - leewaySeconds: the clock skew allowed on `exp` and `nbf`.
    public init(
        keys: TokenKeys, audience: String?, maxLifetimeSeconds: Int64, leewaySeconds: Int64, time: any TimeSource
    ) {
        self.keys = keys
        self.audience = audience
        self.maxLifetimeMilliseconds = min(max(maxLifetimeSeconds, 0), Self.maxSeconds) * 1000
        self.leewayMilliseconds = min(max(leewaySeconds, 0), Self.maxSeconds) * 1000
        self.time = time
    }

    public func verify(_ token: String) -> Result<ClientToken, TokenRefusal> {
        Result { () throws(TokenRefusal) in try check(Array(token.utf8)) }
    }

    private func check(_ token: [UInt8]) throws(TokenRefusal) -> ClientToken {
        guard token.count <= Self.maxTokenLength else { throw .malformed }
        let dots = token.indices.filter { token[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else { throw .malformed }
        let header = try Self.object(token[..<dots[0]])
        let algorithm = try Self.algorithm(of: header)
        guard keys.supports(algorithm) else { throw .unsupportedAlgorithm }
        guard let signature = Base64URL.decode(token[(dots[1] + 1)...]) else { throw .malformed }
        guard keys.verify(algorithm, signingInput: token[..<dots[1]], signature: signature) else {
            throw .badSignature
        }
        let claims = try Self.object(token[(dots[0] + 1)..<dots[1]])
        return try validate(claims)
    }

    /// The JSON object that `part` encodes.
    private static func object(_ part: ArraySlice<UInt8>) throws(TokenRefusal) -> JSONObject {
        guard let json = Base64URL.decode(part),
            let value = try? JSONParser.parse(json, limits: jsonLimits),
            let object = value.objectValue
        else { throw .malformed }
        return object
    }

    private static func algorithm(of header: JSONObject) throws(TokenRefusal) -> TokenAlgorithm {
        guard case .string(let name)? = header["alg"] else { throw .malformed }
        if let type = header["typ"] {
            guard let type = type.stringValue, type.lowercased() == "jwt" else { throw .malformed }
        }
        // No header extension is understood, so any listed as critical must be refused (RFC 7515 §4.1.11).
        guard header["crit"] == nil else { throw .malformed }
        guard let algorithm = TokenAlgorithm(rawValue: name) else { throw .unsupportedAlgorithm }
        return algorithm
    }

    private func validate(_ claims: JSONObject) throws(TokenRefusal) -> ClientToken {
        guard let subject = claims["sub"] else { throw .missingClaim("sub") }
        guard let sessionID = subject.stringValue, Identifiers.isValidSessionID(sessionID) else {
            throw .invalidClaim("sub")
        }
        guard let expires = try Self.numericDate(claims, "exp") else { throw .missingClaim("exp") }
        let issued = try Self.numericDate(claims, "iat")
        let notBefore = try Self.numericDate(claims, "nbf")
        let audiences = try Self.audiences(claims)
        var scopes = Set(TokenScope.allCases)
        if let scope = claims["scope"] {
            guard let text = scope.stringValue, let parsed = TokenScope.parse(claim: text) else {
                throw .invalidClaim("scope")
            }
            scopes = parsed
        }

        let now = time.wallMilliseconds()
        // An `iat` in the future must not stretch the lifetime: `exp - now` is bounded too.
        guard expires - (issued ?? now) <= maxLifetimeMilliseconds,
            expires - now <= maxLifetimeMilliseconds + leewayMilliseconds
        else { throw .lifetimeTooLong }
        guard now < expires + leewayMilliseconds else { throw .expired }
        if let notBefore {
            guard now + leewayMilliseconds >= notBefore else { throw .notYetValid }
        }
        if let audience {
            guard audiences.contains(audience) else { throw .wrongAudience }
        }
        return ClientToken(
            sessionID: sessionID, scopes: scopes, expiresAt: Timestamp(millisecondsSinceEpoch: expires))
    }

    /// A NumericDate claim (seconds since the epoch, fractions allowed) in milliseconds, or nil when absent.
    private static func numericDate(_ claims: JSONObject, _ name: String) throws(TokenRefusal) -> Int64? {
        guard let value = claims[name] else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite, abs(seconds) <= Double(maxSeconds) else {
            throw .invalidClaim(name)
        }
        return Int64((seconds * 1000).rounded(.down))
    }

    /// The `aud` claim: one string or an array of strings (RFC 7519 §4.1.3); empty when absent.
    private static func audiences(_ claims: JSONObject) throws(TokenRefusal) -> [String] {
        switch claims["aud"] {
        case nil:
            return []
        case .string(let audience):
            return [audience]
        case .array(let elements):
            var audiences: [String] = []
            for element in elements {
                guard let audience = element.stringValue else { throw .invalidClaim("aud") }
                audiences.append(audience)
            }
            return audiences
        default:
            throw .invalidClaim("aud")
        }
    }
}
