import ModalStackCore
import ModalStackHTTP
import ModalStackStore
import Testing

@testable import ModalStackAPI

@Suite("Problems")
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
}
