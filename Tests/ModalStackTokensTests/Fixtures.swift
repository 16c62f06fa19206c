import Foundation
import ModalStackCore
import ModalStackTestSupport

@testable import ModalStackTokens

/// Known-answer vectors and keys.
///
/// The EdDSA and ES256 tokens were made once with Python's `cryptography` 48.0 (in a throwaway venv):
/// the EdDSA one signed with RFC 8037 Appendix A's private key `d`, the ES256 one with a P-256 key from
/// `ec.generate_private_key(ec.SECP256R1())`, whose private half was then thrown away; both over the
/// compact JSON header `{"alg":…,"typ":"JWT"}` and the claims in ``fixtureClaims``, the ES256 signature
/// turned from DER into r‖s with `decode_dss_signature`. The PEMs are `public_bytes(Encoding.PEM,
/// PublicFormat.SubjectPublicKeyInfo)` of those keys (for Ed25519, RFC 8037's `x`).
enum Fixtures {
    /// RFC 7515 Appendix A.1: HS256 over a header and claims with CR LF inside; its `exp` is in 2011.
    static let rfc7515Token =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    /// The JWK `k` of RFC 7515 Appendix A.1, base64url.
    static let rfc7515Key = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"
    /// 1300819380, the `exp` of RFC 7515 Appendix A.1, in milliseconds.
    static let rfc7515Expiry: Int64 = 1_300_819_380_000

    /// RFC 8037 Appendix A.4: Ed25519 over the payload "Example of Ed25519 signing" (not JWT claims).
    static let rfc8037Token =
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
        + ".hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    /// RFC 8037 Appendix A.2's public key `x` as a PEM.
    static let ed25519PEM = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=
        -----END PUBLIC KEY-----

        """

    /// The claims of ``edDSAToken`` and ``es256Token``: issued at ``ManualTime``'s default start.
    static let fixtureClaims =
        #"{"sub":"session-42","scope":"read","iat":1796083200,"exp":1796086800,"aud":"modalstack"}"#
    static let fixtureExpiry: Int64 = 1_796_086_800_000

    static let edDSAToken =
        "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9"
        + ".eyJzdWIiOiJzZXNzaW9uLTQyIiwic2NvcGUiOiJyZWFkIiwiaWF0IjoxNzk2MDgzMjAwLCJleHAiOjE3OTYw"
        + "ODY4MDAsImF1ZCI6Im1vZGFsc3RhY2sifQ"
        + ".vDtWRC2UA4fivHgPFtgDwfWhS8jeAS2YVDL4CLe-I7AIdHdM5Ho-A-TDmnDN-qDEn-XrYE1YfRCRWB5ZpGfbCg"

    static let es256Token =
        "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9"
        + ".eyJzdWIiOiJzZXNzaW9uLTQyIiwic2NvcGUiOiJyZWFkIiwiaWF0IjoxNzk2MDgzMjAwLCJleHAiOjE3OTYw"
        + "ODY4MDAsImF1ZCI6Im1vZGFsc3RhY2sifQ"
        + ".xE5UbpeUVns7VrLsHxIe5Uio3xNd9lATc34phFh99zZeVhn3NR7Y_iNc63U-8oiUNTab6g2QZLK9x7fxxkeuTw"
    static let p256PEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEt1ifaoQdRr7x7C/LBQgC2AqzsGyE
        +QoUwps0tCN+7NrFBYVgpGLyIaFoIPLi3E5j4dh79DbsCptwPCPutGc7rA==
        -----END PUBLIC KEY-----

        """

    /// An EC P-384 key: a valid public key of a curve ES256 does not use.
    static let p384PEM = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEKdISpTfOPVRIfHaLtEafx0o7xQJ4YGrx
        ZWMbrAq2njyS6nbSNAD9EVmokTxKmljY3xYXK30Bbhmp4wsPHV1PceZsHUNytYTG
        SCoSKr2SfxjVP/li2g+JTO0P8ZBq2iIu
        -----END PUBLIC KEY-----

        """

    static let secret = Array("the first secret, 32 bytes long!".utf8)
    static let secondSecret = Array("the second secret, for rotation.".utf8)

    /// ``ManualTime``'s default start, 2026-12-01T00:00:00Z, in seconds.
    static let now: Int64 = 1_796_083_200

    static func keys(secrets: [[UInt8]] = [secret], pems: [String] = [ed25519PEM, p256PEM]) -> TokenKeys {
        try! TokenKeys(secrets: secrets, publicKeysPEM: pems.map { Array($0.utf8) })
    }

    static func verifier(
        keys: TokenKeys = keys(), audience: String? = nil, maxLifetime: Int64 = 86_400, leeway: Int64 = 30,
        time: ManualTime = ManualTime()
    ) -> TokenVerifier {
        TokenVerifier(
            keys: keys, audience: audience, maxLifetimeSeconds: maxLifetime, leewaySeconds: leeway, time: time)
    }

    /// Valid claims for ``now``: session `s1`, an hour long.
    static func claims(_ changes: [String: JSONValue?] = [:]) -> JSONObject {
        var claims: JSONObject = ["sub": "s1", "iat": JSONValue(now), "exp": JSONValue(now + 3600)]
        for (key, value) in changes {
            claims[key] = value
        }
        return claims
    }

    /// A compact JWS of `header` and `payload` (JSON text, or anything) with an HS256 signature under `secret`.
    static func hs256(header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String, secret: [UInt8] = secret)
        -> String
    {
        let signingInput = encode(header) + "." + encode(payload)
        return signingInput + "."
            + Base64URL.encode(LibCrypto.hmacSHA256(key: secret, message: ArraySlice(signingInput.utf8)))
    }

    static func hs256(header: String = #"{"alg":"HS256","typ":"JWT"}"#, claims: JSONObject, secret: [UInt8] = secret)
        -> String
    {
        hs256(header: header, payload: JSONValue.object(claims).jsonText, secret: secret)
    }

    static func encode(_ text: String) -> String {
        Base64URL.encode(Array(text.utf8))
    }

    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64URL.decode(Array(text.utf8))
    }

    /// The DER (SubjectPublicKeyInfo) inside a PEM.
    static func der(_ pem: String) -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(Data(base64Encoded: body)!)
    }
}
