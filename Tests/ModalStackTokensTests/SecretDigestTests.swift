import ModalStackTokens
import Testing

@Suite("Secret digests")
struct SecretDigestTests {
    @Test("a secret matches itself only: not a prefix, an extension, one changed byte or nothing")
    func matchesOnlyTheSameSecret() {
        let key = SecretDigest(Array("key-one".utf8))
        #expect(key.matches(SecretDigest(Array("key-one".utf8))))
        for other in ["key-on", "key-one ", "key-onf", "KEY-ONE", ""] {
            #expect(!key.matches(SecretDigest(Array(other.utf8))), "\(other)")
        }
    }
}
