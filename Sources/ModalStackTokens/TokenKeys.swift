/// The JWS algorithms tokens may be signed with (RFC 7518 §3.1, RFC 8037 §3.1).
enum TokenAlgorithm: String, Sendable, CaseIterable {
    case hs256 = "HS256"
    case edDSA = "EdDSA"
    case es256 = "ES256"
}

/// The keys tokens may be signed with: HS256 secrets (rotation: any of them verifies, the first signs)
/// and public keys from PEM files (Ed25519 → alg EdDSA, EC P-256 → alg ES256).
///
/// Each algorithm is accepted only with its own kind of key, so that no key is ever used as another
/// kind: an HS256 token is checked against the secrets alone, never against a public key's bytes.
public struct TokenKeys: Sendable {
    let secrets: [[UInt8]]
    let publicKeys: [PublicKey]

    /// - Parameters:
    ///   - secrets: HS256 secrets, none empty; the first signs minted tokens.
    ///   - publicKeysPEM: the contents of PEM files, each with one or more `PUBLIC KEY` blocks of
    ///     Ed25519 or EC P-256 keys.
    public init(secrets: [[UInt8]], publicKeysPEM: [[UInt8]]) throws(TokenKeyError) {
        for (index, secret) in secrets.enumerated() {
            guard !secret.isEmpty else { throw TokenKeyError(.emptySecret(index: index)) }
            guard secret.count <= Int(Int32.max) else { throw TokenKeyError(.secretTooLong(index: index)) }
        }
        var publicKeys: [PublicKey] = []
        for (index, pem) in publicKeysPEM.enumerated() {
            do {
                publicKeys += try PublicKey.load(pem: pem)
            } catch {
                throw TokenKeyError(.publicKey(index: index, error))
            }
        }
        self.secrets = secrets
        self.publicKeys = publicKeys
    }

    /// Whether there is a secret to sign minted tokens with.
    public var canMint: Bool { !secrets.isEmpty }

    /// The `alg` values these keys verify, in the order HS256, EdDSA, ES256.
    public var algorithms: [String] {
        TokenAlgorithm.allCases.filter(supports).map(\.rawValue)
    }

    func supports(_ algorithm: TokenAlgorithm) -> Bool {
        switch algorithm {
        case .hs256: !secrets.isEmpty
        case .edDSA: publicKeys.contains { $0.kind == .ed25519 }
        case .es256: publicKeys.contains { $0.kind == .p256 }
        }
    }

    /// Whether `signature` signs `signingInput` (the ASCII `header.payload`) under `algorithm` with
    /// one of the keys of its kind.
    func verify(_ algorithm: TokenAlgorithm, signingInput: ArraySlice<UInt8>, signature: [UInt8]) -> Bool {
        switch algorithm {
        case .hs256:
            guard signature.count == LibCrypto.sha256Length else { return false }
            return secrets.contains { secret in
                LibCrypto.constantTimeEqual(LibCrypto.hmacSHA256(key: secret, message: signingInput), signature)
            }
        case .edDSA:
            return publicKeys.contains { $0.kind == .ed25519 && $0.verify(message: signingInput, signature: signature) }
        case .es256:
            return publicKeys.contains { $0.kind == .p256 && $0.verify(message: signingInput, signature: signature) }
        }
    }
}

/// Why ``TokenKeys`` refused its keys. The description names a key by its position, never by its bytes.
public struct TokenKeyError: Error, Sendable, CustomStringConvertible {
    fileprivate enum Kind {
        case emptySecret(index: Int)
        case secretTooLong(index: Int)
        case publicKey(index: Int, PublicKey.LoadError)
    }

    private let kind: Kind

    fileprivate init(_ kind: Kind) {
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case .emptySecret(let index):
            return "token secret \(index + 1) is empty"
        case .secretTooLong(let index):
            return "token secret \(index + 1) is too long"
        case .publicKey(let index, .noPublicKey):
            return "token public key file \(index + 1) holds no PEM 'PUBLIC KEY' block"
        case .publicKey(let index, .unreadable):
            return "token public key file \(index + 1) is not a readable PEM public key"
        case .publicKey(let index, .unsupportedKey):
            return "token public key file \(index + 1) holds a key that is neither Ed25519 nor EC P-256"
        }
    }
}

/// Says how many keys of each kind there are, never what they are: keys end up in logs by way of
/// `print`, `dump` and test failures.
extension TokenKeys: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let ed25519 = publicKeys.count { $0.kind == .ed25519 }
        return "TokenKeys(\(secrets.count) secrets, \(ed25519) Ed25519 keys, \(publicKeys.count - ed25519) P-256 keys)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
