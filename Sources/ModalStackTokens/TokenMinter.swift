import ModalStackCore
import Timekeeping

/// Mints HS256 client tokens, for backends that would rather not sign their own.
public struct TokenMinter: Sendable {
    /// Lifetimes are clamped to about 317 years either way, so that `exp` cannot overflow.
    private static let maxLifetimeSeconds: Int64 = 10_000_000_000

    /// `{"alg":"HS256","typ":"JWT"}`, encoded.
    private static let encodedHeader: String = {
        var writer = JSONWriter(capacity: 32)
        writer.object { header in
            header.write("alg", string: TokenAlgorithm.hs256.rawValue)
            header.write("typ", string: "JWT")
        }
        return Base64URL.encode(writer.bytes)
    }()

    private let secret: [UInt8]
    private let audience: String?
    private let time: any TimeSource

    /// Nil when the keys hold no secret.
    public init?(keys: TokenKeys, audience: String?, time: any TimeSource) {
        guard let secret = keys.secrets.first else { return nil }
        self.secret = secret
        self.audience = audience
        self.time = time
    }

    /// An HS256 token for the session, signed with the first secret, with `iat`, `exp`, `sub`, `scope` (and `aud` when set).
    ///
    /// The token carries exactly what it is given: an invalid session id or an empty set of scopes makes a
    /// token that every verifier refuses, so callers validate both first.
    public func mint(sessionID: String, scopes: Set<TokenScope>, lifetimeSeconds: Int64) -> (
        token: String, expiresAt: Timestamp
    ) {
        let milliseconds = time.wallMilliseconds()
        // Whole seconds, rounded down, as NumericDates usually are.
        let issuedAt = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let expires = issuedAt + min(max(lifetimeSeconds, -Self.maxLifetimeSeconds), Self.maxLifetimeSeconds)
        var writer = JSONWriter(capacity: 128)
        writer.object { claims in
            claims.write("sub", string: sessionID)
            claims.write("scope", string: TokenScope.claim(scopes))
            claims.write("iat", integer: issuedAt)
            claims.write("exp", integer: expires)
            if let audience {
                claims.write("aud", string: audience)
            }
        }
        let signingInput = Self.encodedHeader + "." + Base64URL.encode(writer.bytes)
        let signature = LibCrypto.hmacSHA256(key: secret, message: ArraySlice(signingInput.utf8))
        return (signingInput + "." + Base64URL.encode(signature), Timestamp(millisecondsSinceEpoch: expires * 1000))
    }
}

/// Never shows its secret.
extension TokenMinter: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "TokenMinter(audience: \(audience.map { "\"\($0)\"" } ?? "none"))" }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
