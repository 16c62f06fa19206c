import ModalStackCore
import ModalStackTestSupport
import Testing

@testable import ModalStackTokens

@Suite("Refusals")
struct RefusalTests {
    private let now = Fixtures.now

    private func verify(
        _ claims: JSONObject, header: String = #"{"alg":"HS256","typ":"JWT"}"#, audience: String? = nil
    ) -> Result<ClientToken, TokenRefusal> {
        Fixtures.verifier(audience: audience).verify(Fixtures.hs256(header: header, claims: claims))
    }

    @Test("a valid HS256 token verifies, with both scopes when `scope` is absent")
    func valid() {
        let expected = ClientToken(
            sessionID: "s1", scopes: [.read, .write], expiresAt: Timestamp(millisecondsSinceEpoch: (now + 3600) * 1000))
        #expect(verify(Fixtures.claims()) == .success(expected))
        #expect(verify(Fixtures.claims(), header: #"{"alg":"HS256"}"#) == .success(expected))
        #expect(verify(Fixtures.claims(), header: #"{"typ":"jwt","alg":"HS256","kid":"k1"}"#) == .success(expected))
    }

    // MARK: - Malformed

    @Test("tokens that are not three base64url parts of JSON objects are malformed")
    func malformed() {
        let valid = Fixtures.hs256(claims: Fixtures.claims())
        let parts = valid.split(separator: ".").map(String.init)
        let candidates = [
            "", ".", "..", "...", "a.b", parts[0] + "." + parts[1], valid + ".", valid + "." + parts[2],
            "." + parts[1] + "." + parts[2], parts[0] + "=." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "=",
            parts[0] + "." + parts[1] + "." + parts[2].dropLast() + "*", " " + valid, valid + "\n",
            Fixtures.encode("not json") + "." + parts[1] + "." + parts[2],
            Fixtures.encode(#"["HS256"]"#) + "." + parts[1] + "." + parts[2],
            Fixtures.encode(#""HS256""#) + "." + parts[1] + "." + parts[2],
        ]
        for token in candidates {
            #expect(Fixtures.verifier().verify(token) == .failure(.malformed), "\(token)")
        }
    }

    @Test("headers without a string `alg`, with a `typ` other than JWT, or with `crit` are malformed")
    func malformedHeaders() {
        let headers = [
            #"{}"#, #"{"typ":"JWT"}"#, #"{"alg":null}"#, #"{"alg":256}"#, #"{"alg":["HS256"]}"#,
            #"{"alg":"HS256","typ":"JOSE"}"#, #"{"alg":"HS256","typ":"at+jwt"}"#, #"{"alg":"HS256","typ":1}"#,
            #"{"alg":"HS256","crit":["exp"],"exp":1}"#, #"{"alg":"HS256","b64":false,"crit":["b64"]}"#,
            #"{"alg":"HS256","alg":"HS256"}"#, #"{"alg":"HS256"} "# + "x",
        ]
        for header in headers {
            #expect(verify(Fixtures.claims(), header: header) == .failure(.malformed), "\(header)")
        }
    }

    @Test("a signed payload that is not a JSON object is malformed")
    func malformedPayload() {
        for payload in ["", "null", "[]", #""s1""#, "{", #"{"sub":"s1","sub":"s2"}"#, "\u{FEFF}{}"] {
            let token = Fixtures.hs256(payload: payload)
            #expect(Fixtures.verifier().verify(token) == .failure(.malformed), "\(payload)")
        }
    }

    @Test("a token longer than 8 KiB is malformed, however valid it is")
    func tooLong() {
        func token(paddedTo length: Int) -> String {
            let bare = Fixtures.hs256(claims: Fixtures.claims(["pad": ""]))
            // Each 3 bytes of the claim add 4 characters to the token.
            let padding = String(repeating: "x", count: (length - bare.count) / 4 * 3)
            return Fixtures.hs256(claims: Fixtures.claims(["pad": .string(padding)]))
        }
        let longest = token(paddedTo: TokenVerifier.maxTokenLength)
        #expect(longest.utf8.count <= TokenVerifier.maxTokenLength && longest.utf8.count > 8180)
        #expect((try? Fixtures.verifier().verify(longest).get()) != nil)
        let tooLong = token(paddedTo: TokenVerifier.maxTokenLength + 4)
        #expect(tooLong.utf8.count > TokenVerifier.maxTokenLength)
        #expect(Fixtures.verifier().verify(tooLong) == .failure(.malformed))
        #expect(Fixtures.verifier().verify(String(repeating: "A", count: 1 << 20)) == .failure(.malformed))
    }

    // MARK: - Algorithms and signatures

    @Test("`none` and every algorithm without a configured key are unsupported")
    func unsupportedAlgorithms() {
        let payload = Fixtures.encode(JSONValue.object(Fixtures.claims()).jsonText)
        for alg in [
            "none", "None", "NONE", "hs256", "HS384", "HS512", "RS256", "PS256", "ES384", "ES256K", "Ed25519", "",
        ] {
            let header = Fixtures.encode(#"{"alg":"\#(alg)","typ":"JWT"}"#)
            #expect(Fixtures.verifier().verify(header + "." + payload + ".") == .failure(.unsupportedAlgorithm))
            let signed = Fixtures.hs256(header: #"{"alg":"\#(alg)"}"#, claims: Fixtures.claims())
            #expect(Fixtures.verifier().verify(signed) == .failure(.unsupportedAlgorithm), "\(alg)")
        }
        let secretsOnly = Fixtures.verifier(keys: Fixtures.keys(pems: []))
        #expect(secretsOnly.verify(Fixtures.edDSAToken) == .failure(.unsupportedAlgorithm))
        #expect(secretsOnly.verify(Fixtures.es256Token) == .failure(.unsupportedAlgorithm))
        let edOnly = Fixtures.verifier(keys: Fixtures.keys(secrets: [], pems: [Fixtures.ed25519PEM]))
        #expect(edOnly.verify(Fixtures.es256Token) == .failure(.unsupportedAlgorithm))
        #expect(edOnly.verify(Fixtures.hs256(claims: Fixtures.claims())) == .failure(.unsupportedAlgorithm))
        let noKeys = Fixtures.verifier(keys: Fixtures.keys(secrets: [], pems: []))
        #expect(noKeys.verify(Fixtures.hs256(claims: Fixtures.claims())) == .failure(.unsupportedAlgorithm))
    }

    @Test("a signature by another key, of other content, or of the wrong length does not verify")
    func badSignatures() {
        let other = Fixtures.hs256(claims: Fixtures.claims(), secret: Array("another secret".utf8))
        #expect(Fixtures.verifier().verify(other) == .failure(.badSignature))
        let parts = Fixtures.hs256(claims: Fixtures.claims()).split(separator: ".").map(String.init)
        let changedClaims = Fixtures.encode(JSONValue.object(Fixtures.claims(["sub": "s2"])).jsonText)
        let signature = Fixtures.decode(parts[2])!
        for token in [
            parts[0] + "." + changedClaims + "." + parts[2],
            parts[0] + "." + parts[1] + ".",
            parts[0] + "." + parts[1] + "." + Base64URL.encode(signature.dropLast()),
            parts[0] + "." + parts[1] + "." + Base64URL.encode(signature + [0]),
            parts[0] + "." + parts[1] + "." + Base64URL.encode(signature + signature),
        ] {
            #expect(Fixtures.verifier().verify(token) == .failure(.badSignature), "\(token)")
        }
        // An EdDSA header on the ES256 token's content and signature, and the other way round.
        let es = Fixtures.es256Token.split(separator: ".")
        let ed = Fixtures.edDSAToken.split(separator: ".")
        #expect(Fixtures.verifier().verify(ed[0] + "." + es[1] + "." + es[2]) == .failure(.badSignature))
        #expect(Fixtures.verifier().verify(es[0] + "." + ed[1] + "." + ed[2]) == .failure(.badSignature))
        #expect(Fixtures.verifier().verify(es[0] + "." + es[1] + ".") == .failure(.badSignature))
    }

    @Test("no algorithm confusion: HS256 keyed with a public key's PEM or DER bytes never verifies")
    func algorithmConfusion() {
        for pem in [Fixtures.ed25519PEM, Fixtures.p256PEM] {
            let publicOnly = Fixtures.verifier(keys: Fixtures.keys(secrets: [], pems: [pem]))
            let withSecret = Fixtures.verifier(keys: Fixtures.keys(secrets: [Fixtures.secret], pems: [pem]))
            for keyBytes in [Array(pem.utf8), Array(pem.utf8.dropLast()), Fixtures.der(pem)] {
                let token = Fixtures.hs256(claims: Fixtures.claims(), secret: keyBytes)
                #expect(publicOnly.verify(token) == .failure(.unsupportedAlgorithm))
                #expect(withSecret.verify(token) == .failure(.badSignature))
            }
        }
    }

    @Test("rotation: a token signed with any configured secret verifies")
    func rotation() {
        let keys = Fixtures.keys(secrets: [Fixtures.secret, Fixtures.secondSecret], pems: [])
        for secret in [Fixtures.secret, Fixtures.secondSecret] {
            let token = Fixtures.hs256(claims: Fixtures.claims(), secret: secret)
            #expect((try? Fixtures.verifier(keys: keys).verify(token).get())?.sessionID == "s1")
        }
        let retired = Fixtures.verifier(keys: Fixtures.keys(secrets: [Fixtures.secondSecret], pems: []))
        #expect(retired.verify(Fixtures.hs256(claims: Fixtures.claims())) == .failure(.badSignature))
    }

    // MARK: - Time

    @Test("expired beyond the leeway is refused; within it, accepted")
    func expiry() {
        #expect(verify(Fixtures.claims(["exp": JSONValue(now - 31)])) == .failure(.expired))
        #expect(verify(Fixtures.claims(["exp": JSONValue(now - 30)])) == .failure(.expired))
        #expect((try? verify(Fixtures.claims(["exp": JSONValue(now - 29)])).get()) != nil)
        #expect((try? verify(Fixtures.claims(["exp": 1_796_083_170.5])).get()) != nil)

        let time = ManualTime()
        let token = Fixtures.hs256(claims: Fixtures.claims())
        let verifier = Fixtures.verifier(time: time)
        #expect((try? verifier.verify(token).get()) != nil)
        time.advance(by: .seconds(3600 + 29))
        #expect((try? verifier.verify(token).get()) != nil)
        time.advance(by: .seconds(1))
        #expect(verifier.verify(token) == .failure(.expired))
        let strict = Fixtures.verifier(leeway: 0, time: ManualTime(wallMilliseconds: (now + 3600) * 1000 - 1))
        #expect((try? strict.verify(token).get()) != nil)
    }

    @Test("`nbf` in the future beyond the leeway is refused")
    func notBefore() {
        #expect(verify(Fixtures.claims(["nbf": JSONValue(now + 31)])) == .failure(.notYetValid))
        #expect((try? verify(Fixtures.claims(["nbf": JSONValue(now + 30)])).get()) != nil)
        #expect((try? verify(Fixtures.claims(["nbf": JSONValue(now - 100)])).get()) != nil)

        let time = ManualTime()
        let token = Fixtures.hs256(claims: Fixtures.claims(["nbf": JSONValue(now + 60)]))
        let verifier = Fixtures.verifier(time: time)
        #expect(verifier.verify(token) == .failure(.notYetValid))
        time.advance(by: .seconds(30))
        #expect((try? verifier.verify(token).get()) != nil)
    }

    @Test("a token living longer than the maximum is refused, an `iat` in the future included")
    func lifetime() {
        let day: Int64 = 86_400
        #expect((try? verify(Fixtures.claims(["exp": JSONValue(now + day)])).get()) != nil)
        #expect(verify(Fixtures.claims(["exp": JSONValue(now + day + 1)])) == .failure(.lifetimeTooLong))
        let withoutIAT = Fixtures.claims(["iat": nil, "exp": JSONValue(now + day + 1)])
        #expect(verify(withoutIAT) == .failure(.lifetimeTooLong))
        #expect((try? verify(Fixtures.claims(["iat": nil, "exp": JSONValue(now + day)])).get()) != nil)
        let old = Fixtures.claims(["iat": JSONValue(now - day), "exp": JSONValue(now + 10)])
        #expect(verify(old) == .failure(.lifetimeTooLong))
        let future = Fixtures.claims(["iat": JSONValue(now + 10 * day), "exp": JSONValue(now + 10 * day + 60)])
        #expect(verify(future) == .failure(.lifetimeTooLong))
    }

    // MARK: - Audience

    @Test("`aud` must name the configured audience; without one configured, any `aud` is fine")
    func audience() {
        let audience = "modalstack"
        #expect((try? verify(Fixtures.claims(["aud": "modalstack"]), audience: audience).get()) != nil)
        #expect((try? verify(Fixtures.claims(["aud": ["other", "modalstack"]]), audience: audience).get()) != nil)
        #expect(verify(Fixtures.claims(["aud": "other"]), audience: audience) == .failure(.wrongAudience))
        #expect(verify(Fixtures.claims(["aud": "Modalstack"]), audience: audience) == .failure(.wrongAudience))
        #expect(verify(Fixtures.claims(["aud": ["a", "b"]]), audience: audience) == .failure(.wrongAudience))
        #expect(verify(Fixtures.claims(["aud": []]), audience: audience) == .failure(.wrongAudience))
        #expect(verify(Fixtures.claims(), audience: audience) == .failure(.wrongAudience))
        #expect((try? verify(Fixtures.claims(["aud": "anything"])).get()) != nil)
        #expect((try? verify(Fixtures.claims(["aud": ["x", "y"]])).get()) != nil)
        #expect(Fixtures.verifier(audience: "elsewhere").verify(Fixtures.es256Token) == .failure(.wrongAudience))
    }

    // MARK: - Claims

    @Test("`sub` and `exp` are required")
    func missingClaims() {
        #expect(verify(Fixtures.claims(["sub": nil])) == .failure(.missingClaim("sub")))
        #expect(verify(Fixtures.claims(["exp": nil])) == .failure(.missingClaim("exp")))
        #expect(verify([:]) == .failure(.missingClaim("sub")))
    }

    @Test("claims of the wrong type or shape are invalid, each named")
    func invalidClaims() {
        let cases: [(String, JSONValue)] = [
            ("sub", 42), ("sub", ""), ("sub", "a/b"), ("sub", "s 1"), ("sub", .null), ("sub", ["s1"]),
            ("sub", .string(String(repeating: "s", count: Identifiers.sessionIDMaxLength + 1))),
            ("exp", "1796086800"), ("exp", .null), ("exp", true), ("exp", .number("1e300")), ("exp", .number("-1e14")),
            ("iat", "now"), ("iat", [1]), ("nbf", false), ("nbf", .number("1e20")),
            ("aud", 5), ("aud", [1]), ("aud", ["ok", .null]), ("aud", ["x": "y"]),
            ("scope", ""), ("scope", " "), ("scope", "read  write"), ("scope", " read"), ("scope", "read "),
            ("scope", "admin"), ("scope", "read,write"), ("scope", "READ"), ("scope", 3), ("scope", ["read"]),
            ("scope", .null), ("scope", "read\twrite"),
        ]
        for (name, value) in cases {
            #expect(verify(Fixtures.claims([name: value])) == .failure(.invalidClaim(name)), "\(name): \(value)")
        }
    }

    @Test("`scope` grants what it lists")
    func scopes() {
        let cases: [(String, Set<TokenScope>)] = [
            ("read", [.read]), ("write", [.write]), ("read write", [.read, .write]), ("write read", [.read, .write]),
            ("read read", [.read]),
        ]
        for (claim, scopes) in cases {
            #expect((try? verify(Fixtures.claims(["scope": .string(claim)])).get())?.scopes == scopes, "\(claim)")
        }
        #expect((try? verify(Fixtures.claims(["scope": nil])).get())?.scopes == [.read, .write])
    }

    @Test("each refusal has its label, and a detail that does not repeat the token")
    func labels() {
        let labels: [(TokenRefusal, String)] = [
            (.malformed, "malformed"), (.unsupportedAlgorithm, "algorithm"), (.badSignature, "signature"),
            (.expired, "expired"), (.notYetValid, "not_yet_valid"), (.wrongAudience, "audience"),
            (.lifetimeTooLong, "lifetime"), (.missingClaim("sub"), "claims"), (.invalidClaim("scope"), "claims"),
        ]
        for (refusal, label) in labels {
            #expect(refusal.reason == label)
            #expect(!refusal.detail.isEmpty && !refusal.detail.contains("eyJ"))
        }
        #expect(TokenRefusal.invalidClaim("scope").detail.contains("scope"))
    }
}
