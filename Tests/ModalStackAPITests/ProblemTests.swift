import ModalStackCore
import ModalStackHTTP
import ModalStackStore
import Testing

@testable import ModalStackAPI

@Suite("Problems and ids")
struct ProblemTests {
    @Test("a refused command becomes problem+json with type, status, detail and its context")
    func modalErrorProblem() throws {
        let error = ModalError(.alreadyPresented, "key taken", context: ["position": 0])
        let response = Problem(error).response
        #expect(response.status == 409)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        let body = try JSONParser.parse(response.body)
        #expect(body["type"] == "/problems/already-presented")
        #expect(body["status"] == 409)
        #expect(body["detail"] == "key taken")
        #expect(body["position"] == 0)
    }

    @Test("validation problems list each pointer")
    func validationProblem() throws {
        let error = ModalError.validation([.init(pointer: "/destination", message: "is required")])
        let response = Problem(error).response
        #expect(response.status == 422)
        let body = try JSONParser.parse(response.body)
        #expect(body["errors"] == [["pointer": "/destination", "detail": "is required"]])
    }

    @Test("storage failures say what to do: 507 or 503 with Retry-After")
    func storageProblems() {
        let full = Problem(StoreError(.full, "disk")).response
        #expect(full.status == 507)
        #expect(full.headers["Retry-After"] != nil)
        let unavailable = Problem(StoreError(.unavailable, "locked")).response
        #expect(unavailable.status == 503)
        #expect(unavailable.headers["Retry-After"] != nil)
    }

    @Test("generated ids are 24 URL-safe characters and do not repeat")
    func randomIDs() {
        let ids = (0..<1000).map { _ in RandomID.make() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.utf8.count == 24)
            #expect(Identifiers.isValidSessionID(id))
        }
        // Every character carries 6 random bits: over 1000 ids each position takes (nearly) all 64
        // characters; a position fed by constant or too few bits would take far fewer.
        for position in 0..<24 {
            let characters = Set(ids.map { Array($0.utf8)[position] })
            #expect(characters.count >= 48, "position \(position) took \(characters.count) characters")
        }
    }
}
