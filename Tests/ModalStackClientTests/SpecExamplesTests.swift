import Foundation
import ModalStackClient
import Testing

/// The examples of openapi.yaml, extracted by scripts/openapi-examples into Fixtures/openapi-examples.json.
private struct Fixture: Decodable {
    struct Example: Decodable {
        var location: String
        var schemas: [String]
        var value: JSONValue
    }

    var examples: [Example]
    var problemSlugs: [String]

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/openapi-examples.json")

    static func load() throws -> Fixture {
        try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: file))
    }
}

/// Decodes an example as one schema's type; for a round trip, returns what it re-encodes to and what it
/// should (the example, with the defaults the library always sends); nil for a value that is not re-encoded.
private typealias Check = @Sendable (JSONValue) throws -> (encoded: JSONValue, expected: JSONValue)?

private func data(_ value: JSONValue) throws -> Data { try JSONEncoder().encode(value) }

private func roundTrip<T: Codable & SendableMetatype>(
    _ type: T.Type, expect: @escaping @Sendable (T) throws -> Void = { _ in }
) -> Check {
    { value in
        let decoded = try ModalStackJSON.makeDecoder().decode(T.self, from: data(value))
        try expect(decoded)
        return (try JSONDecoder().decode(JSONValue.self, from: ModalStackJSON.makeEncoder().encode(decoded)), value)
    }
}

private struct Mismatch: Error, CustomStringConvertible {
    var description: String
}

private func expectKind(_ kind: ModalStyle.Kind) -> @Sendable (Presentation) throws -> Void {
    { if $0.style.kind != kind { throw Mismatch(description: "style \($0.style.kind), not \(kind)") } }
}

private func expectRequestKind(_ kind: ModalStyle.Kind) -> @Sendable (PresentRequest) throws -> Void {
    { if $0.style.kind != kind { throw Mismatch(description: "style \($0.style.kind), not \(kind)") } }
}

/// The problem schemas that fix a slug.
private let problemSchemaSlugs: [String: String] = [
    "ValidationProblem": "validation-failed", "StackFullProblem": "stack-full", "AlertOnTopProblem": "alert-on-top",
    "QueueNotEmptyProblem": "queue-not-empty", "QueueFullProblem": "queue-full", "LockedProblem": "locked",
    "AlreadyPresentedProblem": "already-presented", "NothingToDismissProblem": "nothing-to-dismiss",
    "PreconditionFailedProblem": "precondition-failed", "IdempotencyKeyInUseProblem": "idempotency-key-in-use",
    "IdempotencyKeyReusedProblem": "idempotency-key-reused", "AlreadyPushedProblem": "already-pushed",
    "PathFullProblem": "path-full", "NothingToPopProblem": "nothing-to-pop", "LevelNotFoundProblem": "level-not-found",
    "NoRouteProblem": "no-route", "PresentationDismissedProblem": "presentation-dismissed",
    "PresentationQueuedProblem": "presentation-queued", "SessionExistsProblem": "session-exists",
]

private func problem(slug: String?) -> Check {
    { value in
        let error = try ModalStackJSON.makeDecoder().decode(ModalStackError.self, from: data(value))
        if case .other = error { throw Mismatch(description: "slug \(error.slug) maps to .other") }
        if let slug, error.slug != slug { throw Mismatch(description: "slug \(error.slug), not \(slug)") }
        return try roundTrip(ModalStackError.Problem.self)(value)
    }
}

private func string(_ valid: @escaping @Sendable (String) -> Bool = { _ in true }) -> Check {
    { value in
        guard case .string(let text) = value, valid(text) else { throw Mismatch(description: "not a valid string") }
        return nil
    }
}

/// A request without `style` is a sheet; the library always sends `style`.
private func withStyle(_ value: JSONValue) -> JSONValue {
    guard case .object(var object) = value, object["style"] == nil else { return value }
    object["style"] = "sheet"
    return .object(object)
}

/// A stack replacement or navigation whose stack's requests have their style.
private func withStyles(_ value: JSONValue) throws -> JSONValue {
    guard case .object(var object) = value, case .array(let stack) = object["stack"] else {
        throw Mismatch(description: "not a request with a stack")
    }
    object["stack"] = .array(stack.map(withStyle))
    return .object(object)
}

private let checks: [String: Check] = {
    var checks: [String: Check] = [
        "Session": roundTrip(Session.self),
        "Presentation": roundTrip(Presentation.self),
        "SessionChange": roundTrip(SessionChange.self),
        "EventsPage": roundTrip(EventsPage.self),
        "SessionsPage": roundTrip(SessionsPage.self),
        "SessionSummary": roundTrip(SessionSummary.self),
        "SessionDeletedNotice": roundTrip(StreamNotice.self) {
            if $0.type != .sessionDeleted { throw Mismatch(description: "type \($0.type)") }
        },
        "TokenExpiredNotice": roundTrip(StreamNotice.self) {
            if $0.type != .tokenExpired { throw Mismatch(description: "type \($0.type)") }
        },
        "PresentResponse": roundTrip(PresentResponse.self),
        "QueuedResponse": roundTrip(QueuedResponse.self),
        "UpdateResponse": roundTrip(UpdateResponse.self),
        "DismissResponse": roundTrip(DismissResponse.self),
        "ReplaceStackResponse": roundTrip(ReplaceStackResponse.self),
        "TransitionStep": roundTrip(TransitionStep.self),
        "TransitionPlan": roundTrip([TransitionStep].self),
        "TransitionResponse": roundTrip(TransitionResponse.self),
        "DestinationsResponse": roundTrip(Destinations.self),
        "TokenResponse": roundTrip(TokenResponse.self),
        "TokenScope": roundTrip(TokenScope.self),
        "TokenRequest": roundTrip(TokenRequest.self),
        "CreateSessionRequest": roundTrip(CreateSessionRequest.self),
        "Health": roundTrip(Health.self),
        "UpdateRequest": roundTrip(UpdateRequest.self),
        "DismissRequest": roundTrip(DismissRequest.self),
        "PresentRequest": { try roundTrip(PresentRequest.self)(withStyle($0)) },
        "ReplaceStackRequest": { try roundTrip(ReplaceStackRequest.self)(withStyles($0)) },
        "PathEntry": roundTrip(PathEntry.self),
        "Level": roundTrip(NavigationLevel.self),
        "PushRequest": roundTrip(PushRequest.self),
        "PushResponse": roundTrip(PushResponse.self),
        "PopRequest": roundTrip(PopRequest.self),
        "PopResponse": roundTrip(PopResponse.self),
        "PathEntryResponse": roundTrip(PathEntryPlace.self),
        "NavigationRequest": { try roundTrip(NavigationRequest.self)(withStyles($0)) },
        "NavigationResponse": roundTrip(NavigationResponse.self),
        "LinkRequest": roundTrip(LinkRequest.self),
        "LinkResponse": roundTrip(LinkResponse.self),
        "ResolvedLink": { value in
            // The request a route makes, with its style where the library always sends one.
            guard case .object(var object) = value, let request = object["request"] else {
                throw Mismatch(description: "not a resolved link")
            }
            switch object["action"] {
            case "navigate": object["request"] = try withStyles(request)
            case "present": object["request"] = withStyle(request)
            default: break
            }
            return try roundTrip(LinkResolution.self)(.object(object))
        },
        "Problem": problem(slug: nil),
        "Timestamp": string { text in ModalStackJSON.Timestamp.parse(text).map(ModalStackJSON.Timestamp.format) == text
        },
        "Detent": roundTrip(ModalStyle.Detent.self),
        "ServedDetent": roundTrip(ModalStyle.Detent.self),
    ]
    for name in [
        "Destination", "Key", "Title", "Message", "ButtonId", "ButtonLabel", "PresentationIdRef", "PathEntryIdRef",
    ] {
        checks[name] = string()
    }
    for kind in ModalStyle.Kind.allCases {
        let name = kind.rawValue.prefix(1).uppercased() + kind.rawValue.dropFirst()
        checks["\(name)Presentation"] = roundTrip(Presentation.self, expect: expectKind(kind))
        checks["\(name)PresentRequest"] = {
            try roundTrip(PresentRequest.self, expect: expectRequestKind(kind))(withStyle($0))
        }
    }
    for (name, slug) in problemSchemaSlugs { checks[name] = problem(slug: slug) }
    return checks
}()

/// Examples of inline schemas (a property's own example): plain JSON values, checked only as JSON.
private let inlineExamples: Set<String> = [
    "#/components/schemas/CreateSessionRequest/properties/ttl/example",
    "#/components/schemas/DismissRequest/properties/result/examples/0",
    "#/components/schemas/TokenRequest/properties/scope/examples/0",
    "#/components/schemas/TokenRequest/properties/scope/examples/1",
    "#/components/schemas/TokenRequest/properties/ttl/example",
    "#/components/schemas/FieldError/properties/pointer/examples/0",
    "#/components/schemas/FieldError/properties/pointer/examples/1",
]

@Suite struct SpecExamplesTests {
    @Test func everyExampleDecodesAndRoundTrips() throws {
        let fixture = try Fixture.load()
        #expect(fixture.examples.count > 150)
        for example in fixture.examples {
            if example.schemas.isEmpty {
                #expect(inlineExamples.contains(example.location), "no schema to decode \(example.location) with")
                continue
            }
            let candidates = example.schemas.compactMap { name in checks[name].map { (name, $0) } }
            guard !candidates.isEmpty else {
                Issue.record("no type for \(example.schemas) at \(example.location)")
                continue
            }
            var failures: [String] = []
            for (name, check) in candidates {
                do {
                    if let (encoded, expected) = try check(example.value), encoded != expected {
                        throw Mismatch(description: "re-encodes to \(encoded), not \(expected)")
                    }
                    failures = []
                    break
                } catch {
                    failures.append("\(name): \(error)")
                }
            }
            if !failures.isEmpty {
                Issue.record("\(example.location) does not decode: \(failures.joined(separator: "; "))")
            }
        }
    }
}
