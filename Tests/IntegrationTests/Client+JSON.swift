import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// A response with its body parsed as JSON (null when the body is empty or not JSON).
struct JSONResponse {
    let status: Int
    let headers: HTTPHeaders
    let raw: [UInt8]
    let json: JSONValue

    init(_ response: HTTPClientResponse) {
        status = response.status
        headers = response.headers
        raw = response.body
        json = (try? JSONParser.parse(response.body)) ?? .null
    }

    /// The problem `type` slug (`stack-full` for `/problems/stack-full`), asserting the media type.
    var problemSlug: String? {
        #expect(headers["Content-Type"] == "application/problem+json")
        #expect(json["status"]?.intValue == status)
        #expect(json["title"]?.stringValue?.isEmpty == false)
        #expect(json["detail"]?.stringValue?.isEmpty == false)
        return json["type"]?.stringValue.map { String($0.dropFirst("/problems/".count)) }
    }

    /// The JSON pointers listed in a validation problem.
    var errorPointers: [String] {
        json["errors"]?.arrayValue?.compactMap { $0["pointer"]?.stringValue } ?? []
    }
}

extension TestClient {
    @discardableResult
    func call(_ method: String, _ path: String, json: JSONValue? = nil, headers: HTTPHeaders = [:]) throws
        -> JSONResponse
    {
        var headers = headers
        var body: [UInt8] = []
        if let json {
            body = json.serialized()
            if !headers.contains("Content-Type") { headers.set("Content-Type", "application/json") }
        }
        return JSONResponse(try send(method: method, path: path, headers: headers, body: body))
    }

    @discardableResult
    func call(_ method: String, _ path: String, rawBody: String, contentType: String? = "application/json") throws
        -> JSONResponse
    {
        var headers: HTTPHeaders = [:]
        if let contentType { headers.set("Content-Type", contentType) }
        return JSONResponse(try send(method: method, path: path, headers: headers, body: Array(rawBody.utf8)))
    }
}

/// A session id no other test uses, so that tests can share one server.
func uniqueSessionID(_ label: String = "s") -> String {
    "\(label)-\(UUID().uuidString.prefix(13).lowercased())"
}
