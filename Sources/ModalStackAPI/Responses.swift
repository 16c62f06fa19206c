import ModalStackCore
import ModalStackHTTP
import ModalStackStore

/// Helpers shared by every endpoint: JSON in, JSON out, and errors as problems.
enum Responses {
    static func json(_ status: Int, _ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        json(status, serialized: value.serialized(), headers: headers)
    }

    static func json(_ status: Int, _ value: some JSONWritable, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        json(status, serialized: value.serialized(), headers: headers)
    }

    private static func json(_ status: Int, serialized body: [UInt8], headers: HTTPHeaders) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// The session's state, tagged with its version.
    static func session(_ status: Int, _ session: Session, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        sessionBody(status, session.serialized(), session, headers: headers)
    }

    /// The session's state already rendered (from the session cache), tagged with its version.
    static func sessionBody(_ status: Int, _ body: [UInt8], _ session: Session, headers: HTTPHeaders = HTTPHeaders())
        -> HTTPResponse
    {
        json(status, serialized: body, headers: tagged(headers, session))
    }

    /// A read of the session (one of its presentations or path entries, a page of its events, a
    /// transition): `304` without a body when `If-None-Match` names the session's version, else
    /// `200` with `body`. Checked last, as RFC 9110 §13.2.1 asks: a request that fails without the
    /// header fails the same with it.
    static func read(_ body: [UInt8], of session: Session, for request: HTTPRequest) throws -> HTTPResponse {
        if let condition = try request.ifNoneMatch(), condition.matches(session.version, weakly: true) {
            return notModified(session.version)
        }
        return sessionBody(200, body, session)
    }

    /// `304 Not Modified`, without a body, tagged with the session's version.
    static func notModified(_ version: Int64, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("ETag", EntityTag.of(version: version))
        return HTTPResponse(status: 304, headers: headers, body: [])
    }

    private static func tagged(_ headers: HTTPHeaders, _ session: Session) -> HTTPHeaders {
        var headers = headers
        headers.set("ETag", EntityTag.of(version: session.version))
        return headers
    }

    /// What a change answer says first, before what every change answer has.
    enum ChangeSubject {
        /// `"presentation"`, and for a queued one its `"position"` in the queue.
        case presentation(Presentation, position: Int? = nil)
        /// `"dismissed"`: the presentations that left the session.
        case dismissed([Presentation])
        /// `"entry"` and `"level"`: a push.
        case entry(PathEntry, level: NavigationLevel)
        /// `"popped"` (top-most first) and `"level"`.
        case popped([PathEntry], level: NavigationLevel)
        /// `"route"` and `"action"` of a deep link, then `"dismissed"`: what left the session.
        case link(ResolvedLink)

        /// Whether the change can move the stack, so that the answer lists what was promoted.
        var movesStack: Bool {
            switch self {
            case .presentation, .dismissed, .link: true
            case .entry, .popped: false
            }
        }
    }

    /// The answer to a change: its subject, then what was promoted from the queue, the transition
    /// plan from the navigation before to the navigation after, and the session (`document`, its
    /// JSON). Written straight from the values: every change renders it. Under
    /// `Prefer: return=minimal`, the version and the transition only.
    static func change(
        _ status: Int, _ subject: ChangeSubject, _ outcome: CommandOutcome, _ document: SessionDocument,
        to request: HTTPRequest, headers: HTTPHeaders = HTTPHeaders()
    ) -> HTTPResponse {
        if request.prefersMinimalReturn { return minimalChange(status, outcome, headers: headers) }
        var writer = JSONWriter(capacity: 4096)
        writer.object { object in
            switch subject {
            case .presentation(let presentation, let position):
                object.write("presentation", presentation)
                if let position {
                    object.write("position", integer: Int64(position))
                }
            case .dismissed(let presentations):
                object.write("dismissed", presentations)
            case .entry(let entry, let level):
                object.write("entry", entry)
                object.write("level", string: level.name)
            case .popped(let entries, let level):
                object.write("popped", entries)
                object.write("level", string: level.name)
            case .link(let link):
                object.write("route", link.route.json)
                object.write("action", string: link.action.name)
                object.write("dismissed", outcome.dismissed)
            }
            if subject.movesStack {
                object.write("promoted", outcome.promoted)
            }
            object.write("transition", outcome.transition.json)
            object.member("session") { $0.bytes.append(contentsOf: document.bytes) }
        }
        return sessionBody(status, writer.bytes, outcome.session, headers: headers)
    }

    /// The answer to a session's creation (`PUT`, `POST /v1/sessions`): the session, or under
    /// `Prefer: return=minimal` the version and the transition only, as for every change.
    static func sessionWritten(
        _ status: Int, _ outcome: CommandOutcome, _ document: SessionDocument, to request: HTTPRequest,
        headers: HTTPHeaders = HTTPHeaders()
    ) -> HTTPResponse {
        if request.prefersMinimalReturn { return minimalChange(status, outcome, headers: headers) }
        return sessionBody(status, document.bytes, outcome.session, headers: headers)
    }

    private static func minimalChange(_ status: Int, _ outcome: CommandOutcome, headers: HTTPHeaders) -> HTTPResponse {
        var headers = headers
        headers.set("Preference-Applied", "return=minimal")
        var writer = JSONWriter(capacity: 256)
        writer.object { object in
            object.write("version", integer: outcome.session.version)
            object.write("transition", outcome.transition.json)
        }
        return sessionBody(status, writer.bytes, outcome.session, headers: headers)
    }

    static func noContent() -> HTTPResponse {
        HTTPResponse(status: 204, headers: HTTPHeaders(), body: [])
    }

    /// Runs an endpoint, turning whatever it throws into a problem response.
    static func guarded(_ endpoint: (HTTPRequest) throws -> HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        do {
            return try endpoint(request)
        } catch {
            return problem(for: error)
        }
    }

    static func problem(for error: any Error) -> HTTPResponse {
        switch error {
        case let problem as Problem: problem.response
        case let error as ModalError: Problem(error).response
        case let error as StoreError: Problem(error).response
        default: Problem.internalError().response
        }
    }
}

/// Reading a request: path parameters and JSON bodies.
extension HTTPRequest {
    /// The `{sessionId}` path parameter, validated.
    func sessionID() throws -> String {
        let id = pathParameters["sessionId"] ?? ""
        guard Identifiers.isValidSessionID(id) else { throw Problem.invalidSessionID(id) }
        return id
    }

    /// The `{version}` path parameter: a whole number from 1, in decimal digits without a sign or
    /// leading zeros, so that each version has one URL.
    func versionParameter() throws -> Int64 {
        let text = pathParameters["version"] ?? ""
        let digits = text.utf8
        guard let first = digits.first, first != UInt8(ascii: "0"),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let version = Int64(text)
        else {
            throw Problem(
                .invalidParameter,
                detail:
                    "the version in the path must be a whole number from 1 to \(Int64.max), without a sign or leading zeros"
            )
        }
        return version
    }

    /// The value of the query parameter `name`; nil when absent. Given twice, it is refused: which
    /// one was meant cannot be known.
    func queryParameter(_ name: String) throws -> String? {
        let values = queryValues(name)
        guard values.count <= 1 else { throw Problem.invalidParameter(name, "is given more than once") }
        return values.first
    }

    /// A whole-number query parameter within `range`; nil when absent.
    func integerQuery(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try queryParameter(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw Problem.invalidParameter(
                name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A `true`/`false` query parameter; absent is false.
    func booleanQuery(_ name: String) throws -> Bool {
        switch try queryParameter(name) {
        case nil, "false": return false
        case "true": return true
        case let other?:
            throw Problem.invalidParameter(name, "must be true or false, not \"\(other)\"")
        }
    }

    /// The value of one `Prefer` preference (RFC 7240: `Prefer: return=minimal, wait=10`),
    /// lowercased name matched, without its quotes and its `;` parameters; nil when the request does
    /// not state it.
    func preference(_ name: String) -> String? {
        guard let prefer = headers["Prefer"] else { return nil }
        for preference in prefer.split(separator: ",") {
            let withoutParameters = preference.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let parts = withoutParameters.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map { String($0).trimmingSpaces }
            guard parts.count == 2, parts[0].lowercased() == name else { continue }
            let value = parts[1]
            let isQuoted = value.utf8.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"")
            return isQuoted ? String(value.dropFirst().dropLast()) : value
        }
        return nil
    }

    /// Whether the request says `Prefer: return=minimal`.
    var prefersMinimalReturn: Bool { preference("return") == "minimal" }

    /// The body as JSON. An empty body is `emptyBody` when the endpoint allows one, else malformed.
    /// A non-empty body must be declared JSON in UTF-8 (see ``isJSONMediaType(_:)``).
    func jsonBody(emptyBody: JSONValue? = nil) throws -> JSONValue {
        if body.isEmpty {
            guard let emptyBody else { throw Problem.malformedJSON("the body is empty") }
            return emptyBody
        }
        let contentType = headers["Content-Type"]
        guard let contentType, Self.isJSONMediaType(contentType) else {
            throw Problem.unsupportedMediaType(contentType)
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw Problem.malformedJSON("\(error)")
        }
        if let (pointer, text) = Self.numberBeyondDouble(in: value) {
            throw Problem.malformedJSON(
                "the number \(text) at \(pointer.isEmpty ? "the top" : pointer) is beyond a double's range (about ±1.8e308)"
            )
        }
        return value
    }

    /// The first number (pointer and text) that a double cannot hold: most JSON parsers would read
    /// it as infinity, so it is refused rather than kept and served back. Numbers are at most 64
    /// characters, so only an exponent takes one that far.
    private static func numberBeyondDouble(in value: JSONValue) -> (pointer: String, text: String)? {
        switch value {
        case .number(let text):
            guard text.utf8.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
                Double(text)?.isFinite == false
            else { return nil }
            return ("", text)
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let found = numberBeyondDouble(in: element) { return ("/\(index)" + found.pointer, found.text) }
            }
            return nil
        case .object(let object):
            for member in object.members {
                if let found = numberBeyondDouble(in: member.value) {
                    return ("/" + JSONPointer.escape(member.key) + found.pointer, found.text)
                }
            }
            return nil
        case .null, .bool, .string:
            return nil
        }
    }

    /// `application/json` or another `application/*+json` type (RFC 6839: its syntax is JSON), with
    /// no `charset` or `charset=utf-8` (RFC 8259 §8.1: JSON is UTF-8). Not the patch formats
    /// (`merge-patch+json`, RFC 7396; `json-patch+json`, RFC 6902): their bodies mean changes
    /// this server does not apply that way (a PATCH replaces `payload` whole, where a merge patch
    /// would merge into it).
    static func isJSONMediaType(_ contentType: String) -> Bool {
        if contentType == "application/json" { return true }
        let parts = contentType.split(separator: ";", omittingEmptySubsequences: false)
        let mediaType = String(parts[0]).trimmingSpaces.lowercased()
        let isJSON =
            mediaType == "application/json"
            || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")
                && !patchMediaTypes.contains(mediaType))
        return isJSON
            && parts.dropFirst().allSatisfy { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces.lowercased() }
                return pair.first != "charset" || (pair.count == 2 && ["utf-8", "\"utf-8\""].contains(pair[1]))
            }
    }

    private static let patchMediaTypes: Set = ["application/merge-patch+json", "application/json-patch+json"]
}
