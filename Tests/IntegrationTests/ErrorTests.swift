import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite("Errors over HTTP")
struct ErrorTests {
    @Test(
        "malformed JSON is a 400 problem and changes nothing",
        arguments: [
            "{", #"{"destination":"a",}"#, #"{"destination":"a","destination":"b"}"#, "nul",
            "{\"destination\":\"\u{1}\"}",
            String(repeating: "[", count: 60_000),
        ])
    func malformedJSON(body: String) throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let response = try client.call("POST", "/v1/sessions/\(id)/presentations", rawBody: body)
        #expect(response.status == 400)
        #expect(response.problemSlug == "malformed-json")
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404)
    }

    @Test("a number beyond a double's range is a 400 naming it; a big integer is kept as sent")
    func numberRange() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let infinite = try client.call(
            "POST", "\(base)/presentations", rawBody: #"{"destination":"a","payload":{"list":[1,-1E999]}}"#)
        #expect(infinite.status == 400)
        #expect(infinite.problemSlug == "malformed-json")
        #expect(infinite.json["detail"]?.stringValue?.contains("-1E999 at /payload/list/1") == true)
        #expect(try client.call("GET", base).status == 404)

        let exact = try client.call(
            "POST", "\(base)/presentations",
            rawBody: #"{"destination":"a","payload":{"id":123456789012345678901234567890,"tiny":1e-999}}"#)
        #expect(exact.status == 201)
        let read = try client.send(method: "GET", path: base).text
        #expect(read.contains(#""payload":{"id":123456789012345678901234567890,"tiny":1e-999}"#))
    }

    @Test("invalid UTF-8 in the body is a 400")
    func invalidUTF8() throws {
        let server = try endpointServer()
        let client = server.client()
        let body: [UInt8] = Array(#"{"destination":""#.utf8) + [0xC0, 0x80] + Array(#""}"#.utf8)
        let response = JSONResponse(
            try client.send(
                method: "POST", path: "/v1/sessions/x/presentations", headers: ["Content-Type": "application/json"],
                body: body))
        #expect(response.status == 400)
    }

    @Test("wrong types and missing fields are a 422 listing each pointer")
    func validation() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let response = try client.call(
            "POST", "/v1/sessions/\(id)/presentations",
            json: ["destination": 5, "style": "bubble", "payload": "text", "extra": true])
        #expect(response.status == 422)
        #expect(response.problemSlug == "validation-failed")
        #expect(response.errorPointers == ["/destination", "/style", "/payload", "/extra"])
        let missing = try client.call("POST", "/v1/sessions/\(id)/presentations", json: [:])
        #expect(missing.errorPointers == ["/destination"])
        let dismiss = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["count": -1])
        #expect(dismiss.status == 422)
        #expect(dismiss.errorPointers == ["/count"])
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404)
    }

    @Test("a payload over 16 KiB is a 422 on /payload")
    func payloadTooLarge() throws {
        let server = try endpointServer()
        let client = server.client()
        let big = String(repeating: "x", count: 17 * 1024)
        let response = try client.call(
            "POST", "/v1/sessions/\(uniqueSessionID())/presentations",
            json: ["destination": "a", "payload": ["t": .string(big)]])
        #expect(response.status == 422)
        #expect(response.errorPointers == ["/payload"])
    }

    @Test(
        "a body that is not JSON by its Content-Type is a 415",
        arguments: ["text/plain", "application/x-www-form-urlencoded", nil] as [String?])
    func unsupportedMediaType(contentType: String?) throws {
        let server = try endpointServer()
        let client = server.client()
        let response = try client.call(
            "POST", "/v1/sessions/\(uniqueSessionID())/presentations", rawBody: #"{"destination":"a"}"#,
            contentType: contentType)
        #expect(response.status == 415)
        #expect(response.problemSlug == "unsupported-media-type")
        let charset = try client.call(
            "POST", "/v1/sessions/\(uniqueSessionID())/presentations", rawBody: #"{"destination":"a"}"#,
            contentType: "application/json; charset=utf-8")
        #expect(charset.status == 201)
    }

    @Test("an unknown path is a 404 problem; a wrong method is a 405 with Allow")
    func routing() throws {
        let server = try endpointServer()
        let client = server.client()
        let unknown = try client.call("GET", "/v2/nothing")
        #expect(unknown.status == 404)
        #expect(unknown.problemSlug == "not-found")
        let wrongMethod = try client.call("PATCH", "/v1/sessions/abc")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.problemSlug == "method-not-allowed")
        #expect(wrongMethod.headers["Allow"] == "DELETE, GET, HEAD, PUT, OPTIONS")
        let trailingSlash = try client.call("GET", "/v1/sessions/abc/")
        #expect(trailingSlash.status == 404)
    }

    @Test("a body over 64 KiB is a 413, and the server keeps serving")
    func bodyTooLarge() throws {
        let server = try ServerProcess()
        let client = server.client()
        let body = #"{"destination":"a","payload":{"t":""# + String(repeating: "x", count: 70 * 1024) + #""}}"#
        let response = try client.call("POST", "/v1/sessions/\(uniqueSessionID())/presentations", rawBody: body)
        #expect(response.status == 413)
        #expect(response.problemSlug == "body-too-large")
        #expect(try server.client().call("GET", "/livez").status == 200)
    }
}
