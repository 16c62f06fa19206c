import ModalStackCore
import ModalStackTestSupport
import Testing

@testable import ModalStackTokens

@Suite("Minting")
struct MintingTests {
    private let now = Fixtures.now

    private func payload(of token: String) throws -> JSONObject {
        let part = try #require(Fixtures.decode(token.split(separator: ".", omittingEmptySubsequences: false)[1]))
        return try #require(try JSONParser.parse(part).objectValue)
    }

    @Test("a minted token is a standard compact JWS: three unpadded base64url parts, the usual HS256 header")
    func format() throws {
        let minter = try #require(TokenMinter(keys: Fixtures.keys(), audience: nil, time: ManualTime()))
        let (token, _) = minter.mint(sessionID: "s1", scopes: [.read], lifetimeSeconds: 3600)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        #expect(parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(alphabet.contains) })
        #expect(parts[0] == "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9")
        #expect(Fixtures.decode(parts[0]) == Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        #expect(Fixtures.decode(parts[2])?.count == 32)
    }

    @Test("a minted token carries `sub`, `scope`, `iat` and `exp`, and `aud` only when one is set")
    func claims() throws {
        let time = ManualTime(wallMilliseconds: now * 1000 + 999)
        let minter = try #require(TokenMinter(keys: Fixtures.keys(), audience: nil, time: time))
        let (token, expiresAt) = minter.mint(sessionID: "s-1.x", scopes: [.write, .read], lifetimeSeconds: 600)
        let claims = try payload(of: token)
        #expect(claims.keys == ["sub", "scope", "iat", "exp"])
        #expect(claims["sub"] == "s-1.x")
        #expect(claims["scope"] == "read write")
        #expect(claims["iat"] == JSONValue(now))
        #expect(claims["exp"] == JSONValue(now + 600))
        #expect(expiresAt == Timestamp(millisecondsSinceEpoch: (now + 600) * 1000))

        let withAudience = try #require(TokenMinter(keys: Fixtures.keys(), audience: "modalstack", time: time))
        let audienceClaims = try payload(
            of: withAudience.mint(sessionID: "s1", scopes: [.read], lifetimeSeconds: 60).token)
        #expect(audienceClaims["aud"] == "modalstack")
        #expect(audienceClaims["scope"] == "read")
    }

    @Test("minted tokens verify, with the scopes and expiry they were minted with")
    func roundTrip() throws {
        let time = ManualTime()
        let keys = Fixtures.keys()
        let minter = try #require(TokenMinter(keys: keys, audience: "modalstack", time: time))
        let verifier = Fixtures.verifier(keys: keys, audience: "modalstack", time: time)
        for scopes: Set<TokenScope> in [[.read], [.write], [.read, .write]] {
            let (token, expiresAt) = minter.mint(sessionID: "session-7", scopes: scopes, lifetimeSeconds: 3600)
            let expected = ClientToken(sessionID: "session-7", scopes: scopes, expiresAt: expiresAt)
            #expect(verifier.verify(token) == .success(expected))
        }
        let (token, _) = minter.mint(sessionID: "session-7", scopes: [.read], lifetimeSeconds: 60)
        time.advance(by: .seconds(60 + 30))
        #expect(verifier.verify(token) == .failure(.expired))
        #expect(Fixtures.verifier(keys: keys, audience: "other").verify(token) == .failure(.wrongAudience))
    }

    @Test("what no verifier accepts stays refused: empty scopes, a bad session id, too long a lifetime")
    func refusedInputs() throws {
        let minter = try #require(TokenMinter(keys: Fixtures.keys(), audience: nil, time: ManualTime()))
        let verifier = Fixtures.verifier()
        let noScope = minter.mint(sessionID: "s1", scopes: [], lifetimeSeconds: 60).token
        #expect(verifier.verify(noScope) == .failure(.invalidClaim("scope")))
        let badID = minter.mint(sessionID: "a/b", scopes: [.read], lifetimeSeconds: 60).token
        #expect(verifier.verify(badID) == .failure(.invalidClaim("sub")))
        let long = minter.mint(sessionID: "s1", scopes: [.read], lifetimeSeconds: 86_401).token
        #expect(verifier.verify(long) == .failure(.lifetimeTooLong))
        for lifetime in [Int64.max, Int64.min, -1, 0] {
            _ = minter.mint(sessionID: "s1", scopes: [.read], lifetimeSeconds: lifetime)
        }
    }

    @Test("rotation: minting signs with the first secret")
    func mintsWithFirstSecret() throws {
        let keys = Fixtures.keys(secrets: [Fixtures.secret, Fixtures.secondSecret], pems: [])
        let minter = try #require(TokenMinter(keys: keys, audience: nil, time: ManualTime()))
        let token = minter.mint(sessionID: "s1", scopes: [.read], lifetimeSeconds: 60).token
        let first = Fixtures.verifier(keys: Fixtures.keys(secrets: [Fixtures.secret], pems: []))
        let second = Fixtures.verifier(keys: Fixtures.keys(secrets: [Fixtures.secondSecret], pems: []))
        #expect((try? first.verify(token).get()) != nil)
        #expect(second.verify(token) == .failure(.badSignature))
    }

    @Test("no minter without a secret")
    func noSecret() {
        let keys = Fixtures.keys(secrets: [], pems: [Fixtures.ed25519PEM])
        #expect(!keys.canMint)
        #expect(TokenMinter(keys: keys, audience: nil, time: ManualTime()) == nil)
        #expect(Fixtures.keys().canMint)
    }
}

@Suite("Keys")
struct KeyTests {
    private func error(secrets: [[UInt8]] = [], pems: [String]) -> String? {
        do {
            _ = try TokenKeys(secrets: secrets, publicKeysPEM: pems.map { Array($0.utf8) })
            return nil
        } catch {
            return error.description
        }
    }

    @Test("the algorithms follow the keys")
    func algorithms() {
        #expect(Fixtures.keys().algorithms == ["HS256", "EdDSA", "ES256"])
        #expect(Fixtures.keys(pems: []).algorithms == ["HS256"])
        #expect(Fixtures.keys(secrets: [], pems: [Fixtures.p256PEM]).algorithms == ["ES256"])
        #expect(Fixtures.keys(secrets: [], pems: []).algorithms.isEmpty)
    }

    @Test("keys and minters describe themselves without their secrets, however they are printed")
    func descriptions() throws {
        let keys = Fixtures.keys()
        let minter = try #require(TokenMinter(keys: keys, audience: "modalstack", time: ManualTime()))
        #expect("\(keys)" == "TokenKeys(1 secrets, 1 Ed25519 keys, 1 P-256 keys)")
        #expect("\(minter)" == #"TokenMinter(audience: "modalstack")"#)
        let secretBytes = Fixtures.secret.map(String.init).joined(separator: ", ")
        for text in [String(reflecting: keys), String(reflecting: minter), dumped(keys), dumped(minter)] {
            #expect(!text.contains(secretBytes) && !text.contains("first secret"), "\(text)")
        }
    }

    private func dumped(_ value: Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }

    @Test("empty secrets, unreadable PEM, and keys of other kinds or curves are refused, by position")
    func refusedKeys() throws {
        #expect(error(secrets: [Fixtures.secret, []], pems: []) == "token secret 2 is empty")
        let privateKey = """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g
            -----END PRIVATE KEY-----

            """
        let cases: [(String, String)] = [
            ("", "holds no PEM 'PUBLIC KEY' block"),
            ("not a key", "holds no PEM 'PUBLIC KEY' block"),
            (privateKey, "holds no PEM 'PUBLIC KEY' block"),
            ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "is not a readable PEM public key"),
            (Fixtures.ed25519PEM + "-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n", "is not a readable"),
            (Fixtures.p384PEM, "holds a key that is neither Ed25519 nor EC P-256"),
        ]
        for (pem, message) in cases {
            let description = try #require(error(pems: [Fixtures.p256PEM, pem]))
            #expect(
                description.hasPrefix("token public key file 2 ") && description.contains(message), "\(description)")
            #expect(!description.contains("BEGIN"))
        }
    }
}
