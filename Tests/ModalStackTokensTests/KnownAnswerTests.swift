import ModalStackCore
import ModalStackTestSupport
import Testing

@testable import ModalStackTokens

@Suite("Known-answer vectors")
struct KnownAnswerTests {
    @Test("RFC 7515 A.1: the HS256 signature verifies under the JWK's key, and a changed byte does not")
    func rfc7515Signature() throws {
        let key = try #require(Fixtures.decode(Fixtures.rfc7515Key))
        let keys = try TokenKeys(secrets: [key], publicKeysPEM: [])
        let parts = Fixtures.rfc7515Token.split(separator: ".")
        let signingInput = ArraySlice((parts[0] + "." + parts[1]).utf8)
        let signature = try #require(Fixtures.decode(parts[2]))
        #expect(LibCrypto.hmacSHA256(key: key, message: signingInput) == signature)
        #expect(keys.verify(.hs256, signingInput: signingInput, signature: signature))
        var changed = signature
        changed[31] ^= 1
        #expect(!keys.verify(.hs256, signingInput: signingInput, signature: changed))
    }

    @Test("RFC 7515 A.1 through the verifier: the signature passes, then the claims lack `sub`")
    func rfc7515Token() throws {
        let key = try #require(Fixtures.decode(Fixtures.rfc7515Key))
        let time = ManualTime(wallMilliseconds: Fixtures.rfc7515Expiry - 60_000)
        let verifier = Fixtures.verifier(
            keys: try TokenKeys(secrets: [key], publicKeysPEM: []), maxLifetime: 1 << 40, time: time)
        #expect(verifier.verify(Fixtures.rfc7515Token) == .failure(.missingClaim("sub")))
        let otherKeys = try TokenKeys(secrets: [Fixtures.secret], publicKeysPEM: [])
        let otherVerifier = Fixtures.verifier(keys: otherKeys, maxLifetime: 1 << 40, time: time)
        #expect(otherVerifier.verify(Fixtures.rfc7515Token) == .failure(.badSignature))
    }

    @Test("RFC 8037 A.4: the Ed25519 signature verifies with the public key of A.2")
    func rfc8037Signature() throws {
        let keys = Fixtures.keys(secrets: [], pems: [Fixtures.ed25519PEM])
        let parts = Fixtures.rfc8037Token.split(separator: ".")
        let signingInput = ArraySlice((parts[0] + "." + parts[1]).utf8)
        let signature = try #require(Fixtures.decode(parts[2]))
        #expect(keys.verify(.edDSA, signingInput: signingInput, signature: signature))
        #expect(!keys.verify(.edDSA, signingInput: signingInput.dropLast(), signature: signature))
        // Its payload is not a claims set: the verifier gets past the signature, then refuses the payload.
        #expect(Fixtures.verifier(keys: keys).verify(Fixtures.rfc8037Token) == .failure(.malformed))
        let bad = Fixtures.rfc8037Token.dropLast() + (Fixtures.rfc8037Token.last == "g" ? "w" : "g")
        #expect(Fixtures.verifier(keys: keys).verify(String(bad)) == .failure(.badSignature))
    }

    @Test("an EdDSA token made with Python's cryptography verifies, with its claims")
    func edDSAToken() {
        let expected = ClientToken(
            sessionID: "session-42", scopes: [.read],
            expiresAt: Timestamp(millisecondsSinceEpoch: Fixtures.fixtureExpiry))
        let verifier = Fixtures.verifier(keys: Fixtures.keys(secrets: [], pems: [Fixtures.ed25519PEM]))
        #expect(verifier.verify(Fixtures.edDSAToken) == .success(expected))
    }

    @Test("an ES256 token made with Python's cryptography verifies, with its claims")
    func es256Token() {
        let expected = ClientToken(
            sessionID: "session-42", scopes: [.read],
            expiresAt: Timestamp(millisecondsSinceEpoch: Fixtures.fixtureExpiry))
        let verifier = Fixtures.verifier(
            keys: Fixtures.keys(secrets: [], pems: [Fixtures.p256PEM]), audience: "modalstack")
        #expect(verifier.verify(Fixtures.es256Token) == .success(expected))
        // Every byte of r and of s counts.
        for index in [0, 31, 32, 63] {
            var signature = Fixtures.decode(Fixtures.es256Token.split(separator: ".")[2])!
            signature[index] ^= 0x80
            let parts = Fixtures.es256Token.split(separator: ".")
            let token = parts[0] + "." + parts[1] + "." + Base64URL.encode(signature)
            #expect(verifier.verify(token) == .failure(.badSignature))
        }
    }

    @Test("one PEM file may hold several keys, each used for its own algorithm")
    func severalKeysInOneFile() throws {
        let keys = try TokenKeys(secrets: [], publicKeysPEM: [Array((Fixtures.p256PEM + Fixtures.ed25519PEM).utf8)])
        #expect(keys.algorithms == ["EdDSA", "ES256"])
        let verifier = Fixtures.verifier(keys: keys)
        #expect((try? verifier.verify(Fixtures.edDSAToken).get()) != nil)
        #expect((try? verifier.verify(Fixtures.es256Token).get()) != nil)
    }

    @Test("base64url: round trips, and only the canonical unpadded form decodes")
    func base64URL() {
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(Array(text.utf8)) == bytes)
        }
        #expect(Base64URL.encode(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        for invalid in ["YW55IGNhcm5hbCBwbGVhcw==", "YQ=", "Y", "YW55+", "YW5/", "YR", "YWF", "YW 5", "Y.W5"] {
            #expect(Base64URL.decode(Array(invalid.utf8)) == nil, "\(invalid)")
        }
        #expect(Base64URL.decode(Array("YQ".utf8)) == Array("a".utf8))
        #expect(Base64URL.decode(Array("YWE".utf8)) == Array("aa".utf8))
        #expect(Base64URL.decode([]) == [])
    }
}
