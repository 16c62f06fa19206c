import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// The edges of a request a new user meets first: its method, target, query, headers and body.
@Suite("Request edges over HTTP")
struct RequestEdgeTests {
    private func rawRequest(_ head: String, body: [UInt8] = []) -> [UInt8] {
        Array(head.utf8) + body
    }

    @Test("a raw NUL in the target is a 400 problem, and nothing acts on the target cut at the NUL")
    func nulInTarget() throws {
        let server = try ServerProcess()
        let id = uniqueSessionID("nul")
        #expect(try server.client().call("PUT", "/v1/sessions/\(id)").status == 201)
        for line in [
            "DELETE /v1/sessions/\(id)\u{0}b", "DELETE /v1/sessions/\(id)\u{0}?force=true",
            "DEL\u{0}ETE /v1/sessions/\(id)",
        ] {
            let client = server.client()
            try client.sendRaw(rawRequest("\(line) HTTP/1.1\r\nHost: t\r\n\r\n"))
            let response = JSONResponse(try client.readResponse())
            #expect(response.status == 400, "\(line.debugDescription)")
            #expect(response.problemSlug == "invalid-request-line")
            #expect(response.headers["Content-Type"] == "application/problem+json")
        }
        #expect(try server.client().call("GET", "/v1/sessions/\(id)").status == 200)
        // A query mark or spaces where libmicrohttpd also writes a NUL are no NUL of the request.
        let client = server.client()
        try client.sendRaw(rawRequest("GET  /v1/sessions/\(id)? HTTP/1.1\r\nHost: t\r\n\r\n"))
        #expect(try client.readResponse().status == 200)
    }

    @Test("a chunked body far over --max-body is answered 413 once it is in, not cut off")
    func chunkedBodyOverTheLimit() throws {
        let server = try ServerProcess()
        let client = HTTPClient(host: server.host, port: server.port, timeoutSeconds: 30)
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
        var body: [UInt8] = []
        let chunkHead = Array((String(chunk.count, radix: 16) + "\r\n").utf8)
        for _ in 0..<160 { body += chunkHead + chunk + Array("\r\n".utf8) }  // 10 MiB
        body += Array("0\r\n\r\n".utf8)
        try client.sendRaw(
            rawRequest(
                "POST /v1/sessions/\(uniqueSessionID())/presentations HTTP/1.1\r\nHost: t\r\n"
                    + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", body: body))
        let response = JSONResponse(try client.readResponse())
        #expect(response.status == 413)
        #expect(response.problemSlug == "body-too-large")
    }

    @Test(
        "session ids . and .. are invalid: no client could reach them through a URL", arguments: [".", "..", "%2E%2e"])
    func dotSegmentIDs(id: String) throws {
        let server = try ServerProcess()
        let response = try server.client().call("PUT", "/v1/sessions/\(id)")
        #expect(response.status == 400)
        #expect(response.problemSlug == "invalid-session-id")
        #expect(response.json["detail"]?.stringValue?.contains(". or ..") == true)
        #expect([200, 201].contains(try server.client().call("PUT", "/v1/sessions/...").status))
    }

    @Test("a query parameter given twice is a 400, whichever the endpoint")
    func repeatedQueryParameter() throws {
        let server = try ServerProcess()
        let client = server.client()
        let id = uniqueSessionID()
        #expect(try client.call("PUT", "/v1/sessions/\(id)").status == 201)
        for target in [
            "/v1/sessions/\(id)/events?limit=1&limit=2", "/v1/sessions?limit=5&limit=5",
            "/v1/sessions/\(id)/transition?from=0&from=1", "/v1/sessions/\(id)?wait=0&wait=0",
        ] {
            let response = try client.call("GET", target)
            #expect(response.status == 400, "\(target)")
            #expect(response.problemSlug == "invalid-parameter", "\(target)")
        }
        #expect(try client.call("GET", "/v1/sessions/\(id)/events?limit=1").status == 200)
    }

    @Test("Prefer: wait that is not a whole number is a 400, as ?wait is; other preferences are ignored")
    func malformedWaitPreference() throws {
        let server = try ServerProcess()
        let client = server.client()
        let id = uniqueSessionID()
        let created = try client.call("PUT", "/v1/sessions/\(id)")
        let tag = try #require(created.headers["ETag"])
        for prefer in ["wait=abc", "wait=-1", "wait=", "wait=1.5"] {
            let response = try client.call(
                "GET", "/v1/sessions/\(id)", headers: ["If-None-Match": tag, "Prefer": prefer])
            #expect(response.status == 400, "\(prefer)")
            #expect(response.problemSlug == "invalid-header", "\(prefer)")
        }
        let query = try client.call("GET", "/v1/sessions/\(id)?wait=abc", headers: ["If-None-Match": tag])
        #expect(query.status == 400)
        for prefer in ["wait=0", "wait=\"0\"", "wait=0; x=1", "handling=lenient, wait=0", "respond-async"] {
            let response = try client.call(
                "GET", "/v1/sessions/\(id)", headers: ["If-None-Match": tag, "Prefer": prefer])
            #expect(response.status == 304, "\(prefer)")
        }
    }

    @Test(
        "a body not declared JSON in UTF-8, or declared a patch format, is a 415",
        arguments: [
            "application/json; charset=latin1", "application/json;charset=iso-8859-1", "application/merge-patch+json",
            "application/json-patch+json", "text/plain", "application/json; charset",
        ])
    func unsupportedMediaType(contentType: String) throws {
        let server = try ServerProcess()
        let client = server.client()
        let id = uniqueSessionID()
        let response = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", rawBody: #"{"destination": "a"}"#, contentType: contentType)
        #expect(response.status == 415)
        #expect(response.problemSlug == "unsupported-media-type")
        #expect(try client.call("GET", "/v1/sessions/\(id)").status == 404)
    }

    @Test(
        "JSON in UTF-8 is taken under any of its names",
        arguments: [
            "application/json", "application/json; charset=utf-8", "Application/JSON; Charset=\"UTF-8\"",
            "application/vnd.modalstack+json",
        ])
    func jsonMediaType(contentType: String) throws {
        let server = try ServerProcess()
        let response = try server.client().call(
            "POST", "/v1/sessions/\(uniqueSessionID())/presentations", rawBody: #"{"destination": "a"}"#,
            contentType: contentType)
        #expect(response.status == 201)
    }

    @Test("OPTIONS is in a 405's Allow; OPTIONS answers any id, and an unknown path is 404")
    func optionsAndAllow() throws {
        let server = try ServerProcess()
        let client = server.client()
        let wrongMethod = try client.call("PATCH", "/v1/sessions/abc")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["Allow"] == "DELETE, GET, HEAD, PUT, OPTIONS")
        let options = try client.call("OPTIONS", "/v1/sessions/abc")
        #expect(options.status == 204)
        #expect(options.headers["Allow"] == wrongMethod.headers["Allow"])
        let longID = "/v1/sessions/" + String(repeating: "z", count: 129)
        #expect(try client.call("GET", longID).status == 400)
        #expect(try client.call("OPTIONS", longID).status == 204)
        #expect(try client.call("OPTIONS", "/v2/nothing").status == 404)
    }
}

/// Unknown methods against a server of its own, whose metrics no other test moves.
@Suite("Unknown methods", .enabled(if: ServerProcess.isLocal, "reads the metrics of its own server"))
struct UnknownMethodTests {
    @Test("any method may be sent, and is counted under method=\"other\" when the server has no such method")
    func unknownMethods() throws {
        let server = try ServerProcess()
        let client = server.client()
        let long = String(repeating: "M", count: 2000)
        for (method, path, status) in [
            ("RANDOMA1", "/v1/sessions/x", 405), ("RANDOMA2", "/nowhere", 404), (long, "/livez", 405),
        ] {
            let response = try client.call(method, path)
            #expect(response.status == status)
            #expect(response.json["detail"]?.stringValue?.contains(method) == false)
            if status == 405 { #expect(response.headers["Allow"]?.hasSuffix("OPTIONS") == true) }
        }
        let metrics = String(decoding: try client.call("GET", "/metrics").raw, as: UTF8.self)
        #expect(!metrics.contains("RANDOMA"))
        #expect(!metrics.contains(long))
        // A 405 names no route either: its path matched none with that method.
        #expect(metric(metrics, #"modalstack_http_requests_total{method="other",route="unmatched",status="4xx"}"#) == 3)
    }
}
