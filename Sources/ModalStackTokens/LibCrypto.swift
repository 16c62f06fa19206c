import CCrypto

/// The few libcrypto (OpenSSL 3) operations tokens need. Every failure path clears OpenSSL's
/// thread-local error queue, so that nothing is left behind for other code on the thread.
enum LibCrypto {
    static let sha256Length = 32

    /// HMAC-SHA256 of `message` under `key`.
    static func hmacSHA256(key: [UInt8], message: ArraySlice<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBufferPointer { message in
                digest.withUnsafeMutableBufferPointer { digest in
                    HMAC(
                        EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count,
                        digest.baseAddress, &length)
                }
            }
        }
        guard result != nil, Int(length) == sha256Length else {
            ERR_clear_error()
            return []
        }
        return Array(digest.prefix(sha256Length))
    }

    /// SHA-256 of `bytes`; empty if libcrypto fails.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = bytes.withUnsafeBytes { bytes in
            digest.withUnsafeMutableBufferPointer { digest in
                EVP_Digest(bytes.baseAddress, bytes.count, digest.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard result == 1, Int(length) == sha256Length else {
            ERR_clear_error()
            return []
        }
        return Array(digest.prefix(sha256Length))
    }

    /// Whether two byte strings are equal, in time that depends on their length only.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { lhs in
            rhs.withUnsafeBytes { rhs in CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0 }
        }
    }
}

/// A public key read from PEM: Ed25519 (for `EdDSA`) or EC P-256 (for `ES256`).
///
/// OpenSSL 3 allows one `EVP_PKEY` to be used for verification from several threads at once
/// (openssl-threads(7)); it is never changed after loading, hence `@unchecked Sendable`.
final class PublicKey: @unchecked Sendable {
    enum Kind: Sendable {
        case ed25519
        case p256
    }

    let kind: Kind
    private let key: OpaquePointer

    private init(key: OpaquePointer, kind: Kind) {
        self.key = key
        self.kind = kind
    }

    deinit {
        EVP_PKEY_free(key)
    }

    enum LoadError: Error {
        case noPublicKey
        case unreadable
        case unsupportedKey
    }

    /// Every `PUBLIC KEY` block of a PEM file (SubjectPublicKeyInfo), in order; other blocks are skipped.
    static func load(pem: [UInt8]) throws(LoadError) -> [PublicKey] {
        defer { ERR_clear_error() }
        // OpenSSL 3.0 ends a file with the same error as a damaged block, so the blocks are counted first.
        let blockCount = occurrences(of: Array("-----BEGIN PUBLIC KEY-----".utf8), in: pem)
        guard blockCount > 0 else { throw .noPublicKey }
        guard pem.count <= Int(Int32.max) else { throw .unreadable }
        let result = pem.withUnsafeBytes { pem -> Result<[PublicKey], LoadError> in
            // A read-only memory BIO reads `pem` in place: it must not outlive this closure.
            guard let bio = BIO_new_mem_buf(pem.baseAddress, Int32(pem.count)) else { return .failure(.unreadable) }
            defer { BIO_free(bio) }
            var keys: [PublicKey] = []
            for _ in 0..<blockCount {
                // Without a callback, OpenSSL would ask for a passphrase on the terminal when a block
                // claims to be encrypted; this one says there is none.
                guard let key = PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil) else {
                    return .failure(.unreadable)
                }
                guard let kind = kind(of: key) else {
                    EVP_PKEY_free(key)
                    return .failure(.unsupportedKey)
                }
                keys.append(PublicKey(key: key, kind: kind))
            }
            return .success(keys)
        }
        return try result.get()
    }

    private static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard haystack.count >= needle.count else { return 0 }
        return (0...(haystack.count - needle.count)).count { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    private static func kind(of key: OpaquePointer) -> Kind? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_ED25519:
            return .ed25519
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return nil }
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return group == SN_X9_62_prime256v1 || group == "P-256" ? .p256 : nil
        default:
            return nil
        }
    }

    /// Whether `signature` is this key's JWS signature of `message`: Ed25519's 64 bytes, or ES256's
    /// 64-byte r‖s (RFC 7518 §3.4), which OpenSSL wants DER-encoded.
    func verify(message: ArraySlice<UInt8>, signature: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        let encoded: [UInt8]
        switch kind {
        case .ed25519:
            guard signature.count == 64 else { return false }
            encoded = signature
        case .p256:
            guard let der = Self.derSignature(rawP256: signature) else { return false }
            encoded = der
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        // Ed25519 hashes internally and takes no digest; ES256 is ECDSA over SHA-256.
        let digest = kind == .p256 ? EVP_sha256() : nil
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else { return false }
        return encoded.withUnsafeBufferPointer { signature in
            message.withUnsafeBufferPointer { message in
                EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count)
                    == 1
            }
        }
    }

    private static func derSignature(rawP256 raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { raw in
            (BN_bin2bn(raw.baseAddress, 32, nil), BN_bin2bn(raw.baseAddress! + 32, 32, nil))
        }
        // ECDSA_SIG_set0 takes ownership of r and s only when it succeeds.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var next = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &next)
        }
        return written == length ? der : nil
    }
}
