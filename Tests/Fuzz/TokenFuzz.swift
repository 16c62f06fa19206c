import ModalStackCore
import ModalStackTestSupport

@testable import ModalStackTokens

/// Token parsing and verification. The first byte chooses how the rest is read:
/// - a token as sent (`Authorization: Bearer …`), which must never verify: the fuzzer does not
///   know the secret;
/// - a header and claims (JSON, split at NUL) signed with the secret, so the claim checks behind
///   the signature are reached: whatever verifies names a valid session and has not expired;
/// - a session id and a scope claim, minted and verified again: the same session and scopes.
enum TokenFuzz {
    private static let secret = Array("fuzzing-secret-of-at-least-32-bytes!".utf8)
    private static let time = ManualTime()
    private static let verifier = TokenVerifier(
        keys: try! TokenKeys(secrets: [secret], publicKeysPEM: []), audience: "modalstack", maxLifetimeSeconds: 86_400,
        leewaySeconds: 30, time: time)
    private static let minter = TokenMinter(
        keys: try! TokenKeys(secrets: [secret], publicKeysPEM: []), audience: "modalstack", time: time)!

    static func check(_ input: [UInt8]) {
        guard let mode = input.first else { return }
        let rest = Array(input.dropFirst())
        switch mode % 3 {
        case 0:
            if case .success = verifier.verify(String(decoding: rest, as: UTF8.self)) {
                finding("a token the fuzzer made up without the secret verifies", input: input)
            }
        case 1:
            let (header, claims) = splitAtNUL(rest)
            let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
            let signature = LibCrypto.hmacSHA256(key: secret, message: ArraySlice(signingInput.utf8))
            guard case .success(let token) = verifier.verify(signingInput + "." + Base64URL.encode(signature)) else {
                return
            }
            guard Identifiers.isValidSessionID(token.sessionID), !token.scopes.isEmpty,
                token.expiresAt.millisecondsSinceEpoch + 30_000 > time.wallMilliseconds()
            else { finding("a token verifies with \(token)", input: input) }
        default:
            let (subject, scopeClaim) = splitAtNUL(rest)
            let sessionID = String(decoding: subject, as: UTF8.self)
            guard Identifiers.isValidSessionID(sessionID),
                let scopes = TokenScope.parse(claim: String(decoding: scopeClaim, as: UTF8.self))
            else { return }
            let minted = minter.mint(sessionID: sessionID, scopes: scopes, lifetimeSeconds: 60)
            guard case .success(let token) = verifier.verify(minted.token), token.sessionID == sessionID,
                token.scopes == scopes, token.expiresAt == minted.expiresAt
            else { finding("a minted token does not verify as minted", input: input) }
        }
    }
}
