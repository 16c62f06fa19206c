import Foundation
import ModalStackClient
import ModalStackTestSupport
import Testing

// Typed payloads (issue 29, finding 7): numbers that come back as they were sent, a description
// that is JSON, and payloads made from and read as the app's own Codable types.

private func decode(_ text: String) throws -> JSONValue {
    try ModalStackJSON.makeDecoder().decode(JSONValue.self, from: Data(text.utf8))
}

private func encode(_ value: some Encodable) throws -> String {
    String(decoding: try ModalStackJSON.makeEncoder().encode(value), as: UTF8.self)
}

/// Whether `lhs` and `rhs` are the same case with the same payload (`==` says `42 == 42.0`).
private func identical(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.integer(let lhs), .integer(let rhs)): lhs == rhs
    case (.number(let lhs), .number(let rhs)): lhs.bitPattern == rhs.bitPattern
    case (.array(let lhs), .array(let rhs)): lhs.count == rhs.count && zip(lhs, rhs).allSatisfy(identical)
    case (.object(let lhs), .object(let rhs)):
        lhs.count == rhs.count && lhs.allSatisfy { key, value in rhs[key].map { identical(value, $0) } ?? false }
    case (.integer, _), (.number, _), (.array, _), (.object, _): false
    default: lhs == rhs
    }
}

/// A payload with every kind of member an app's type has.
private struct Profile: Codable, Equatable {
    struct Address: Codable, Equatable {
        var city: String
        var zip: Int
    }

    var userId: Int
    var accountNumber: Int64
    var ratio: Double
    var name: String
    var since: Date
    var addresses: [Address]
    var nickname: String?
}

private let since = ModalStackJSON.Timestamp.parse("2026-12-03T07:20:21.123Z")!
private let profile = Profile(
    userId: 42, accountNumber: 9_007_199_254_740_993, ratio: 0.25, name: "Ada \"the\" first", since: since,
    addresses: [.init(city: "Paris", zip: 75001), .init(city: "Zürich", zip: 8001)], nickname: nil)

/// A presentation as the server sends it, with `payload` as the JSON text given.
private func presentationJSON(payload: String) -> String {
    """
    {"id": "BBBBBBBBBBBBBBBBBBBBBBBB", "destination": "profile", "style": "sheet", "detents": [],
     "interactiveDismissDisabled": false, "key": "profile", "state": "presented", "locked": false,
     "payload": \(payload), "path": [], "requestedAt": "2026-12-03T07:20:20.000Z",
     "presentedAt": "2026-12-03T07:20:20.000Z", "dismissedAt": null, "result": null}
    """
}

@Suite("Typed payloads")
struct TypedPayloadTests {
    // MARK: Numbers

    @Test(
        "an integral number that fits Int64 decodes as an integer, exactly; others as a double",
        arguments: [
            ("42", JSONValue.integer(42)), ("42.0", .integer(42)), ("1e3", .integer(1000)), ("0", .integer(0)),
            ("-7", .integer(-7)), ("9007199254740993", .integer(9_007_199_254_740_993)),
            ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)),
            ("-0", .number(-0.0)), ("-0.0", .number(-0.0)), ("0.5", .number(0.5)), ("1e20", .number(1e20)),
            ("9223372036854775808", .number(9_223_372_036_854_775_808)),
        ])
    func decodesNumbers(text: String, expected: JSONValue) throws {
        let value = try decode(text)
        #expect(identical(value, expected), "\(text) decoded as \(String(reflecting: value))")
    }

    @Test("a number beyond Double's range cannot be decoded")
    func refusesHugeNumbers() {
        #expect(throws: DecodingError.self) { try decode("1e400") }
    }

    @Test(
        "numbers are encoded as they were decoded: integers without .0, none rounded",
        arguments: [
            "42", "9007199254740993", "9223372036854775807", "-9223372036854775808", "0.1", "1e+20", "-0", "0",
            "1.5e-07",
        ])
    func numbersRoundTrip(text: String) throws {
        #expect(try encode(decode(text)) == text)
    }

    @Test("an object's numbers round-trip through decode and encode, to the byte")
    func objectRoundTrips() throws {
        let text = #"{"big":9007199254740993,"max":9223372036854775807,"n":[1,2.5,-3],"ratio":0.1,"zero":-0}"#
        let value = try decode(text)
        #expect(value["big"]?.intValue == 9_007_199_254_740_993)
        #expect(try encode(value) == text)
    }

    @Test("an integer literal makes an integer, a float literal a double")
    func literals() {
        let integer: JSONValue = 9_223_372_036_854_775_807
        let double: JSONValue = 42.0
        #expect(identical(integer, .integer(.max)))
        #expect(identical(double, .number(42)))
        #expect(identical(["a": [1]], .object(["a": .array([.integer(1)])])))
    }

    @Test("numbers compare by value: 42 == 42.0, 2^53+1 != 2^53; equal values hash alike")
    func numberEquality() {
        #expect(JSONValue.integer(42) == .number(42))
        #expect(JSONValue.number(42) == .integer(42))
        #expect(JSONValue.integer(0) == .number(-0.0))
        #expect(JSONValue.integer(42) != .number(42.5))
        #expect(JSONValue.integer(9_007_199_254_740_993) != .number(9_007_199_254_740_992))
        #expect(JSONValue.integer(.max) != .number(9_223_372_036_854_775_808))
        #expect(JSONValue.integer(1) != .bool(true))
        #expect(["n": 42, "list": [1, 2]] == JSONValue.object(["list": [.number(1), .number(2)], "n": .number(42)]))
        #expect(Set<JSONValue>([.integer(42), .number(42), .number(42.5), .integer(0), .number(-0.0)]).count == 3)
        #expect(JSONValue.integer(42).hashValue == JSONValue.number(42).hashValue)
        let object: JSONObject = ["n": .integer(7)]
        #expect(object.hashValue == (["n": .number(7)] as JSONObject).hashValue)
    }

    @Test("the read accessors")
    func accessors() {
        let value: JSONValue = ["id": 42, "ratio": 0.5, "name": "Hi", "on": true, "list": [1, "two"]]
        #expect(value["id"]?.intValue == 42)
        #expect(value["id"]?.doubleValue == 42)
        #expect(value["ratio"]?.doubleValue == 0.5)
        #expect(value["ratio"]?.intValue == nil)
        #expect(JSONValue.number(3).intValue == 3)
        #expect(value["name"]?.stringValue == "Hi")
        #expect(value["on"]?.boolValue == true)
        #expect(value["list"]?[1]?.stringValue == "two")
        #expect(value["list"]?[2] == nil)
        #expect(value["missing"] == nil)
        #expect(value[0] == nil)
        #expect(value["name"]?["x"] == nil)
    }

    // MARK: Description

    @Test("description is compact JSON with sorted keys")
    func description() {
        let value: JSONValue = ["title": "Hi", "id": 42, "tags": ["a", "b"], "ratio": 0.5, "none": .null, "on": false]
        #expect(value.description == #"{"id":42,"none":null,"on":false,"ratio":0.5,"tags":["a","b"],"title":"Hi"}"#)
        #expect("\(value)" == value.description)
        #expect(JSONValue.string("Hi").description == #""Hi""#)
        #expect(JSONValue.number(42).description == "42")
        #expect(JSONValue.number(1e20).description == "1e+20")
        #expect(JSONValue.number(.nan).description == "NaN")
        #expect(JSONValue.number(-.infinity).description == "-Infinity")
        #expect(JSONValue.string("a\"b\\c\n\t\u{1}/é").description == #""a\"b\\c\n\t\u0001/é""#)
        let object: JSONObject = ["title": "Hi", "id": 42]
        #expect(object.jsonDescription == #"{"id":42,"title":"Hi"}"#)
    }

    @Test("debugDescription tells a double from an integer, and is what arrays print")
    func debugDescription() {
        #expect(JSONValue.number(42).debugDescription == "42.0")
        #expect(JSONValue.integer(42).debugDescription == "42")
        #expect(String(reflecting: JSONValue.object(["n": .number(1)])) == #"{"n":1.0}"#)
        #expect(String(describing: [JSONValue.integer(1), "x"]) == #"[1, "x"]"#)
    }

    @Test("description is what the encoder sends")
    func descriptionMatchesEncoder() throws {
        let value: JSONValue = [
            "z": [1, 2.5, -0.0, 1e-7, 9_007_199_254_740_993, ["nested": .null]], "a/b": "x/y \"q\" \\ é 😀 \u{7F}",
            "B": true, "a10": 0.1, "a9": -1,
        ]
        #expect(value.description == (try encode(value)))
    }

    // MARK: Typed payloads

    @Test("a Codable struct goes into a present request, and back out of the presentation the server sends")
    func presentRequestRoundTrip() throws {
        let request = try PresentRequest(destination: "profile", payload: profile, locked: true)
        let payload = try #require(request.payload)
        #expect(identical(payload["userId"]!, .integer(42)))
        #expect(identical(payload["accountNumber"]!, .integer(9_007_199_254_740_993)))
        #expect(payload["since"] == "2026-12-03T07:20:21.123Z", "a date is written in the server's form")
        #expect(payload["nickname"] == nil, "a nil optional is left out")
        #expect(request.locked == true)

        // The body as sent, and the presentation the server answers with that payload.
        let body = try decode(encode(request))
        let sentPayload = try #require(body["payload"])
        let sentText = sentPayload.description
        #expect(sentText.contains(#""accountNumber":9007199254740993"#))
        #expect(sentText.contains(#""ratio":0.25"#))
        let presentation = try ModalStackJSON.makeDecoder().decode(
            Presentation.self, from: Data(presentationJSON(payload: sentText).utf8))
        #expect(try presentation.payload(as: Profile.self) == profile)
        #expect(try presentation.payload.decode(as: Profile.self) == profile)
        let typed: Profile = try presentation.payload()
        #expect(typed == profile)
    }

    @Test("a present's optional member comes back when set")
    func optionalMember() throws {
        var withNickname = profile
        withNickname.nickname = "ada"
        let payload = try JSONObject(encoding: withNickname)
        #expect(payload["nickname"] == "ada")
        #expect(try payload.decode(as: Profile.self) == withNickname)
    }

    @Test("a path entry's payload reads as the app's type")
    func pathEntryPayload() throws {
        struct Item: Codable, Equatable { var itemId: Int64 }
        let text = """
            {"id": "AAAAAAAAAAAAAAAAAAAAAAAA", "destination": "downloadItem", "key": "downloadItem",
             "payload": {"itemId": 9223372036854775807}, "pushedAt": "2026-12-03T07:20:21.123Z"}
            """
        let entry = try ModalStackJSON.makeDecoder().decode(PathEntry.self, from: Data(text.utf8))
        #expect(try entry.payload(as: Item.self) == Item(itemId: .max))
        #expect(throws: DecodingError.self) { try entry.payload(as: Profile.self) }
    }

    @Test("push, path entry and update requests take any Encodable payload")
    func otherRequests() throws {
        struct Item: Codable, Equatable { var itemId: Int }
        let push = try PushRequest(destination: "downloadItem", payload: Item(itemId: 7), key: "k", level: .root)
        #expect(push.payload == ["itemId": 7] && push.key == "k" && push.level == .root)
        let entry = try PathEntryRequest(destination: "downloadItem", payload: Item(itemId: 8), key: "k")
        #expect(entry.payload == ["itemId": 8] && entry.key == "k")
        let update = try UpdateRequest(payload: Item(itemId: 9), message: "m")
        #expect(update.payload == ["itemId": 9] && update.message == "m")
        #expect(try encode(push) == #"{"destination":"downloadItem","key":"k","level":"root","payload":{"itemId":7}}"#)
    }

    @Test("a JSONObject literal or value still picks the initializer that does not throw")
    func literalPayloadsDoNotThrow() {
        // These compile without `try`: the Encodable overloads yield to the JSONObject ones.
        let present = PresentRequest(destination: "x", payload: ["a": 1])
        let object: JSONObject = ["b": "c"]
        let fromValue = PresentRequest(destination: "x", payload: object)
        let optional: JSONObject? = nil
        let fromOptional = PresentRequest(destination: "x", payload: optional)
        let push = PushRequest(destination: "x", payload: ["a": 1])
        let entry = PathEntryRequest(destination: "x", payload: object)
        let update = UpdateRequest(payload: ["a": 1])
        #expect(identical(.object(present.payload!), ["a": .integer(1)]))
        #expect(fromValue.payload == object && fromOptional.payload == nil)
        #expect(push.payload == ["a": 1] && entry.payload == object && update.payload == ["a": 1])
    }

    @Test("a payload that is not an object is refused with a clear error")
    func nonObjectPayload() throws {
        do {
            _ = try PresentRequest(destination: "x", payload: [1, 2])
            Issue.record("an array payload was taken")
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.debugDescription.contains("must encode to a JSON object, not an array"))
            #expect(context.debugDescription.hasSuffix("encodes to [1,2]"))
        }
        #expect(throws: EncodingError.self) { try JSONObject(encoding: 42) }
        #expect(throws: EncodingError.self) { try PushRequest(destination: "x", payload: "text") }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: Double.nan) }
    }

    @Test("JSONValue(encoding:) and decode(as:) use the server's date form, and keep a JSONValue as it is")
    func valueCoding() throws {
        #expect(try JSONValue(encoding: since) == "2026-12-03T07:20:21.123Z")
        #expect(try JSONValue.string("2026-12-03T07:20:21.123Z").decode(as: Date.self) == since)
        #expect(throws: DecodingError.self) { try JSONValue.string("2026-12-03").decode(as: Date.self) }
        #expect(identical(try JSONValue(encoding: JSONValue.number(42)), .number(42)))
        #expect(identical(try JSONValue(encoding: 42), .integer(42)))
        #expect(identical(try JSONValue(encoding: [Int64.max]), [.integer(.max)]))
        #expect(try JSONValue.integer(.max).decode(as: Int64.self) == .max)
        #expect(try JSONValue.integer(9_007_199_254_740_993).decode(as: Int.self) == 9_007_199_254_740_993)
        #expect(identical(try JSONValue.number(42).decode(as: JSONValue.self), .number(42)))
        let result: JSONValue = ["buttonId": "ok"]
        #expect(try result.decode(as: [String: String].self) == ["buttonId": "ok"])
    }
}

// MARK: - Against the server

private func makeClient() throws -> ModalStack {
    let server = try #require(TestServer.current)
    return ModalStack(
        baseURL: URL(string: "http://\(server.host):\(server.port)")!,
        configuration: .init(retryDelay: .milliseconds(10), requestTimeout: 10))
}

@Suite(
    "Typed payloads against the real server", .enabled(if: ServerProcess.isLocal, "starts a server"),
    .server(["--log-level", "off"]))
struct TypedPayloadServerTests {
    @Test("a typed payload presented and pushed is read back typed, its integers and dates intact")
    func presentAndPush() async throws {
        let client = try makeClient()
        let id = uniqueSessionID("typed")
        let presented = try await client.present(
            PresentRequest(destination: "profile", payload: profile), in: id
        ).presentation
        #expect(try presented.payload(as: Profile.self) == profile)
        let read = try await client.presentation(presented.id, in: id)
        #expect(try read.payload(as: Profile.self) == profile)
        #expect(identical(read.payload["accountNumber"]!, .integer(9_007_199_254_740_993)))

        struct Item: Codable, Equatable { var itemId: Int64 }
        let pushed = try await client.push(PushRequest(destination: "item", payload: Item(itemId: .max)), in: id)
        #expect(try pushed.response.entry.payload(as: Item.self) == Item(itemId: .max))
        let session = try await client.session(id)
        #expect(try session.stack.last?.path.last?.payload(as: Item.self) == Item(itemId: .max))
    }
}
