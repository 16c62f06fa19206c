import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite(
    "Storage faults over HTTP", .enabled(if: ServerProcess.isLocal, "starts servers with a database quota"),
    .enabled(if: !ServerProcess.usesPostgres, "a quota on the SQLite file"))
struct StorageFaultTests {
    @Test(
        "a full database answers writes with 507 and Retry-After, keeps reads, says why in readiness, and recovers without a restart"
    )
    func diskFull() throws {
        let server = try ServerProcess(arguments: ["--max-db-size", "262144"])
        let client = server.client()
        let filler = String(repeating: "x", count: 12_000)
        var written: [String] = []
        var full: JSONResponse?
        for index in 0..<200 {
            let id = "fill-\(index)"
            let response = try client.call(
                "POST", "/v1/sessions/\(id)/presentations",
                json: ["destination": "a", "payload": ["t": .string(filler)]])
            if response.status == 507 {
                full = response
                #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404, "nothing half-written")
                break
            }
            #expect(response.status == 201)
            written.append(id)
        }
        let refused = try #require(full, "the quota was never reached")
        #expect(refused.problemSlug == "storage-full")
        #expect(refused.headers["Retry-After"] != nil)
        let ready = try client.call("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.json["reason"]?.stringValue?.contains("full") == true)
        for id in written.prefix(3) {
            #expect(try client.call("GET", "/v1/sessions/\(id)").status == 200)
        }
        for id in written.prefix(written.count / 2) {
            #expect(try client.call("DELETE", "/v1/sessions/\(id)").status == 204)
        }
        let again = try client.call(
            "POST", "/v1/sessions/after-full/presentations",
            json: ["destination": "a", "payload": ["t": .string(filler)]])
        #expect(again.status == 201)
        #expect(try client.call("GET", "/readyz").status == 200)
    }
}
