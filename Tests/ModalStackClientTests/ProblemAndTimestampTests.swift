import Foundation
import ModalStackClient
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
private let fixtureFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures/openapi-examples.json")

private func run(_ arguments: [String]) throws -> (status: Int32, output: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.currentDirectoryURL = repository
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

private let pythonWithYAML = (try? run(["python3", "-c", "import yaml"]).status) == 0

@Suite struct FixtureTests {
    @Test(.enabled(if: pythonWithYAML, "needs python3 with PyYAML"))
    func fixtureMatchesOpenAPIDocument() throws {
        let (status, output) = try run(["python3", "scripts/openapi-examples", "openapi.yaml"])
        #expect(status == 0)
        #expect(
            output == (try Data(contentsOf: fixtureFile)),
            "stale: run scripts/openapi-examples > Tests/ModalStackClientTests/Fixtures/openapi-examples.json")
    }
}

@Suite struct ProblemTests {
    struct Slugs: Decodable { var problemSlugs: [String] }

    @Test func everySpecSlugHasItsCase() throws {
        let slugs = try JSONDecoder().decode(Slugs.self, from: Data(contentsOf: fixtureFile)).problemSlugs
        #expect(slugs.count == 46)
        for slug in slugs {
            let error = ModalStackError(
                ModalStackError.Problem(type: "/problems/\(slug)", title: "T", status: 409, detail: "d"))
            if case .other = error { Issue.record("\(slug) maps to .other") }
            #expect(error.slug == slug)
            #expect(error.status == 409)
            #expect(error.detail == "d")
        }
    }

    @Test func unknownSlugIsOther() {
        let error = ModalStackError(
            ModalStackError.Problem(type: "/problems/new-thing", title: "T", status: 418, detail: "d"))
        guard case .other(let slug, let status, let detail, _) = error else {
            Issue.record("not .other: \(error)")
            return
        }
        #expect(slug == "new-thing" && status == 418 && detail == "d")
    }

    @Test func extensionMembersAreTyped() throws {
        let body = Data(
            #"{"type":"/problems/precondition-failed","title":"P","status":412,"detail":"d","currentVersion":4}"#.utf8)
        let error = try ModalStackJSON.makeDecoder().decode(ModalStackError.self, from: body)
        guard case .preconditionFailed(let version, _) = error else {
            Issue.record("not .preconditionFailed: \(error)")
            return
        }
        #expect(version == 4)
        let fields = Data(
            #"{"type":"/problems/validation-failed","title":"V","status":422,"detail":"d","errors":[{"pointer":"/ttl","detail":"x"}]}"#
                .utf8)
        guard
            case .validationFailed(let errors, _) = try ModalStackJSON.makeDecoder().decode(
                ModalStackError.self, from: fields)
        else {
            Issue.record("not .validationFailed")
            return
        }
        #expect(errors == [FieldError(pointer: "/ttl", detail: "x")])
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        "2026-11-29T19:05:01.123Z", "1970-01-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z", "0001-01-01T00:00:00.001Z",
    ])
    func roundTrips(text: String) throws {
        let date = try #require(ModalStackJSON.Timestamp.parse(text))
        #expect(ModalStackJSON.Timestamp.format(date) == text)
    }

    @Test func knownInstant() {
        #expect(ModalStackJSON.Timestamp.parse("2026-11-29T19:05:01.123Z")?.timeIntervalSince1970 == 1_795_979_101.123)
    }

    @Test(arguments: [
        "2026-11-29T19:05:01Z", "2026-11-29T19:05:01.123+00:00", "2026-11-29 19:05:01.123Z", "2026-02-29T19:05:01.123Z",
        "2026-11-29T24:00:00.000Z", "2026-11-29T19:05:01.1234Z", "2026-11-29t19:05:01.123z",
    ])
    func refusesOtherForms(text: String) {
        #expect(ModalStackJSON.Timestamp.parse(text) == nil)
    }
}
