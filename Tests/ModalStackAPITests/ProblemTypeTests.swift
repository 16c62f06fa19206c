import ModalStackCore
import Testing

@testable import ModalStackAPI

/// The problem catalogue against itself, the rules' kinds and the OpenAPI document.
@Suite("Problem types")
struct ProblemTypeTests {
    @Test("every type has its own slug, and an error status")
    func slugsAreDistinct() {
        let slugs = ProblemType.allCases.map(\.slug)
        #expect(Set(slugs).count == slugs.count)
        for type in ProblemType.allCases {
            #expect((400...599).contains(type.status), "\(type.slug)")
            #expect(!type.title.isEmpty, "\(type.slug)")
        }
    }

    @Test("every kind of refusal has a type of its own")
    func everyKindHasItsType() {
        let types = ModalError.Kind.allCases.map(ProblemType.init)
        #expect(Set(types).count == ModalError.Kind.allCases.count)
    }

    @Test("openapi.yaml's Problem schema lists exactly the catalogue's slugs")
    func documentListsEverySlug() {
        let listed = Self.problemSchemaSlugs()
        #expect(listed.count == Set(listed).count, "a slug is listed twice")
        let catalogued = Set(ProblemType.allCases.map(\.slug))
        #expect(catalogued.subtracting(listed).sorted() == [], "in the catalogue, not in openapi.yaml")
        #expect(Set(listed).subtracting(catalogued).sorted() == [], "in openapi.yaml, not in the catalogue")
    }

    @Test("every problem type openapi.yaml names anywhere is in the catalogue")
    func documentNamesNoOtherSlug() {
        let known = Set(ProblemType.allCases.map(\.slug))
        var named: [String] = []
        var rest = Self.document[...]
        while let found = rest.firstRange(of: Problem.typePrefix) {
            rest = rest[found.upperBound...]
            let slug = rest.prefix { $0.isLetter || $0 == "-" }
            if !slug.isEmpty { named.append(String(slug)) }  // not the prose's `/problems/<slug>`
        }
        #expect(!named.isEmpty)
        #expect(Set(named).subtracting(known).sorted() == [], "named in openapi.yaml, not in the catalogue")
    }

    private static let document = String(decoding: OpenAPIDocument.bytes, as: UTF8.self)

    /// The `type` enum of `components.schemas.Problem`: the lines `- /problems/<slug>` that follow
    /// its `enum:`.
    private static func problemSchemaSlugs() -> [String] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let schema = lines.firstIndex(of: "    Problem:"),
            let list = lines[schema...].firstIndex(where: { $0.trimmingSpaces == "enum:" })
        else {
            Issue.record("no Problem schema with an enum in openapi.yaml")
            return []
        }
        let entry = "- " + Problem.typePrefix
        return lines[(list + 1)...]
            .prefix { $0.trimmingSpaces.hasPrefix(entry) }
            .map { String($0.trimmingSpaces.dropFirst(entry.count)) }
    }
}
