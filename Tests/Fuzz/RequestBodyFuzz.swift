import ModalStackCore
import ModalStackStore

@testable import ModalStackAPI

/// Every request body's decoding, and what the rules make of the bodies they accept: the input is
/// a sequence of bodies, each a kind byte then JSON, separated by NUL, applied in turn to one
/// session. After every accepted change: replaying its change record onto the session before
/// gives the session after (what clients, the inspector and recovery rely on); the change and the
/// session read back from their stored forms as they were; a change that changed nothing kept
/// the version.
enum RequestBodyFuzz {
    private enum Kind: UInt8, CaseIterable {
        case create, present, update, dismiss, replaceStack, push, pop, navigate, token, link
    }

    static func check(_ input: [UInt8]) {
        var session = Session.unwritten(id: "fuzz", at: Timestamp(millisecondsSinceEpoch: 1_796_083_200_000))
        var nextID = 0
        let rules = SessionRules(maxDepth: 4, queueSize: 3, maxPathDepth: 4)
        for (step, body) in input.split(separator: 0, omittingEmptySubsequences: false).prefix(16).enumerated() {
            guard let first = body.first, let kind = Kind(rawValue: first % UInt8(Kind.allCases.count)),
                let json = try? JSONParser.parse(body.dropFirst())
            else { continue }
            guard let command = command(kind, json, in: session) else { continue }
            let context = CommandContext(
                now: Timestamp(millisecondsSinceEpoch: session.updatedAt.millisecondsSinceEpoch + Int64(step) * 1000),
                rules: rules
            ) {
                nextID += 1
                return "p\(nextID)"
            }
            guard let outcome = try? session.applying(command, in: context) else { continue }
            checkOutcome(outcome, before: session, input: input)
            session = outcome.session
        }
    }

    /// The command a body decodes to, or nil when it is refused (or, for tokens and links, when
    /// decoding is all there is to it).
    private static func command(_ kind: Kind, _ json: JSONValue, in session: Session) -> Command? {
        do {
            switch kind {
            case .create: return .create(try SessionOptions(json: json))
            case .present: return .present(try PresentRequest(json: json))
            case .update:
                let target = session.stack.last?.id ?? session.queue.first?.id ?? "none"
                return .update(presentationID: target, try UpdateRequest(json: json))
            case .dismiss: return .dismiss(try DismissRequest(json: json))
            case .replaceStack: return .replaceStack(try ReplaceStackRequest(json: json))
            case .push: return .push(try PushRequest(json: json))
            case .pop: return .pop(try PopRequest(json: json))
            case .navigate: return .navigate(try NavigationRequest(json: json))
            case .token:
                _ = try Endpoints.tokenRequest(json, maxLifetimeSeconds: 86_400)
                return nil
            case .link:
                _ = try LinkRequest(json: json)
                return nil
            }
        } catch {
            return nil
        }
    }

    private static func checkOutcome(_ outcome: CommandOutcome, before: Session, input: [UInt8]) {
        let after = outcome.session
        guard let change = outcome.change else {
            guard after.version == before.version else {
                finding("a change that changed nothing moved the version", input: input)
            }
            return
        }
        guard after.version == before.version + 1, change.version == after.version else {
            finding("versions \(before.version) → \(after.version), change \(change.version)", input: input)
        }
        switch Result(catching: { () throws(ChangeMismatch) in try before.applying(change) }) {
        case .success(let replayed) where replayed == after:
            break
        case .success(let replayed):
            finding("replaying the change gives \(replayed), not \(after)", input: input)
        case .failure(let mismatch):
            finding("the change does not replay onto the session before it: \(mismatch)", input: input)
        }
        let storedChange = Result { () throws(StoreError) in
            try RowCodec.decodeChange(change.jsonText, sessionID: change.sessionID)
        }
        guard case .success(let readChange) = storedChange, readChange == change else {
            finding("the change does not read back from its stored form: \(storedChange)", input: input)
        }
        let storedSession = Result { () throws(StoreError) in
            try RowCodec.session(
                id: after.id, version: after.version, createdAt: after.createdAt.millisecondsSinceEpoch,
                updatedAt: after.updatedAt.millisecondsSinceEpoch, path: RowCodec.encode(after.path),
                stack: RowCodec.encode(after.stack), queue: RowCodec.encode(after.queue),
                ttl: after.ttlSeconds)
        }
        guard case .success(let readSession) = storedSession, readSession == after else {
            finding("the session does not read back from its stored form: \(storedSession)", input: input)
        }
    }
}
