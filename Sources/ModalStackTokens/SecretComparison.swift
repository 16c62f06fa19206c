/// A secret (an API key) kept as its SHA-256 digest, compared with libcrypto's `CRYPTO_memcmp`,
/// so that the time a comparison takes tells nothing about the secret: not how many bytes of a
/// guess matched, not its length.
public struct SecretDigest: Sendable {
    private let digest: [UInt8]

    public init(_ secret: [UInt8]) {
        digest = LibCrypto.sha256(secret)
    }

    /// Whether both digests are of the same secret.
    public func matches(_ other: SecretDigest) -> Bool {
        digest.count == LibCrypto.sha256Length && LibCrypto.constantTimeEqual(digest, other.digest)
    }
}
