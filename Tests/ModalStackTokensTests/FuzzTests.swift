import ModalStackCore
import ModalStackTestSupport
import Testing

@testable import ModalStackTokens

/// Random and mutated tokens: nothing crashes, and no change to a valid token verifies.
/// A failure names its seed; `MODALSTACK_SEED=<seed>` replays it.
@Suite("Fuzzing")
struct FuzzTests {
    private static let characters = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \u{0}é".utf8)

    private let verifier = Fixtures.verifier(audience: "modalstack")

    private var validTokens: [String] {
        [
            Fixtures.edDSAToken, Fixtures.es256Token,
            Fixtures.hs256(claims: Fixtures.claims(["aud": "modalstack", "scope": "read write"])),
        ]
    }

    @Test("random bytes and random strings of token characters are refused, never crash")
    func randomTokens() {
        let seed = SeededGenerator.seed()
        var random = SeededGenerator(seed: seed)
        for _ in 0..<3000 {
            let count = Int.random(in: 0...400, using: &random)
            let bytes: [UInt8] =
                Bool.random(using: &random)
                ? (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
                : (0..<count).map { _ in Self.characters.randomElement(using: &random)! }
            let result = verifier.verify(String(decoding: bytes, as: UTF8.self))
            #expect((try? result.get()) == nil, "seed \(seed)")
        }
    }

    @Test("mutated valid tokens are refused unless the mutation changed nothing")
    func mutatedTokens() {
        let seed = SeededGenerator.seed()
        var random = SeededGenerator(seed: seed)
        let tokens = validTokens
        for token in tokens {
            #expect((try? verifier.verify(token).get()) != nil)
        }
        for _ in 0..<3000 {
            let original = tokens.randomElement(using: &random)!
            var bytes = Array(original.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                mutate(&bytes, using: &random)
            }
            let mutated = String(decoding: bytes, as: UTF8.self)
            if (try? verifier.verify(mutated).get()) != nil {
                #expect(mutated == original, "seed \(seed): \(mutated)")
            }
        }
    }

    @Test("signed random headers and claims are judged, never crash")
    func signedRandomDocuments() {
        let seed = SeededGenerator.seed()
        var random = SeededGenerator(seed: seed)
        let values: [JSONValue] = [
            .null, true, 0, -1, .number("1e400"), .number("-0.0"), .number("1796083200.5"), JSONValue(Fixtures.now),
            JSONValue(Fixtures.now + 3600), "", "s1", "read", "write", "read write", "modalstack", "none", "HS256",
            "JWT", ["modalstack"], [1, "x"], [:], ["a": ["b": []]],
        ]
        let headerKeys = ["alg", "typ", "crit", "kid", "b64"]
        let claimKeys = ["sub", "exp", "iat", "nbf", "aud", "scope", "jti"]
        for _ in 0..<2000 {
            var header: JSONObject = Bool.random(using: &random) ? ["alg": "HS256"] : [:]
            for key in headerKeys where Int.random(in: 0..<4, using: &random) == 0 {
                header[key] = values.randomElement(using: &random)!
            }
            var claims = Fixtures.claims()
            for key in claimKeys where Int.random(in: 0..<3, using: &random) == 0 {
                claims[key] = Bool.random(using: &random) ? nil : values.randomElement(using: &random)!
            }
            let token = Fixtures.hs256(header: JSONValue.object(header).jsonText, claims: claims)
            if case .success(let client) = verifier.verify(token) {
                #expect(Identifiers.isValidSessionID(client.sessionID) && !client.scopes.isEmpty, "seed \(seed)")
            }
        }
    }

    private func mutate(_ bytes: inout [UInt8], using random: inout SeededGenerator) {
        guard !bytes.isEmpty else { return bytes.append(Self.characters.randomElement(using: &random)!) }
        let index = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0: bytes[index] = Self.characters.randomElement(using: &random)!
        case 1: bytes[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
        case 2: bytes.remove(at: index)
        case 3: bytes.insert(Self.characters.randomElement(using: &random)!, at: index)
        case 4: bytes.removeSubrange(index...)
        default:
            let end = Int.random(in: index...bytes.count, using: &random)
            bytes.insert(contentsOf: bytes[index..<end], at: Int.random(in: 0...bytes.count, using: &random))
        }
    }
}
