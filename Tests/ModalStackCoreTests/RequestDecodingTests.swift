import ModalStackCore
import Testing

@Suite("Request decoding")
struct RequestDecodingTests {
    private func json(_ text: String) throws -> JSONValue {
        try JSONParser.parse(text)
    }

    private func pointers(_ body: () throws -> Void) -> [String] {
        do {
            try body()
            return []
        } catch let error as ModalError {
            #expect(error.kind == .validationFailed)
            return error.fieldErrors.map(\.pointer)
        } catch {
            Issue.record("unexpected error \(error)")
            return []
        }
    }

    @Test("a minimal present defaults style to sheet, key to the destination, payload to {}")
    func presentDefaults() throws {
        let request = try PresentRequest(json: try json(#"{"destination":"settings"}"#))
        #expect(
            request
                == PresentRequest(
                    destination: "settings", content: .sheet(SheetOptions()), payload: [:], key: "settings"))
    }

    @Test("a full present keeps every field")
    func presentFull() throws {
        let request = try PresentRequest(
            json: try json(#"{"destination":"help","style":"fullScreenCover","payload":{"text":"Hi"},"key":"help:1"}"#))
        #expect(request.style == .fullScreenCover)
        #expect(request.payload["text"] == "Hi")
        #expect(request.key == "help:1")
    }

    @Test("every bad field is reported with its pointer")
    func presentErrors() throws {
        let body = try json(#"{"destination":"9bad","style":"bubble","payload":[],"key":"","extra":1}"#)
        #expect(
            pointers { _ = try PresentRequest(json: body) } == ["/destination", "/style", "/payload", "/key", "/extra"])
        #expect(pointers { _ = try PresentRequest(json: try json("{}")) } == ["/destination"])
        #expect(pointers { _ = try PresentRequest(json: try json(#"{"destination":7}"#)) } == ["/destination"])
        #expect(pointers { _ = try PresentRequest(json: try json("[]")) } == [""])
    }

    @Test("destination names follow ^[A-Za-z][A-Za-z0-9._-]*$ and 64 characters")
    func destinationNames() {
        #expect(Identifiers.isValidDestination("settings"))
        #expect(Identifiers.isValidDestination("a.b_c-D9"))
        #expect(Identifiers.isValidDestination(String(repeating: "a", count: 64)))
        #expect(!Identifiers.isValidDestination(String(repeating: "a", count: 65)))
        #expect(!Identifiers.isValidDestination(""))
        #expect(!Identifiers.isValidDestination("_x"))
        #expect(!Identifiers.isValidDestination("a b"))
        #expect(!Identifiers.isValidDestination("é"))
    }

    @Test("session ids are 1-128 unreserved characters")
    func sessionIDs() {
        #expect(Identifiers.isValidSessionID("user-42.session_~x"))
        #expect(Identifiers.isValidSessionID(String(repeating: "z", count: 128)))
        #expect(!Identifiers.isValidSessionID(String(repeating: "z", count: 129)))
        #expect(!Identifiers.isValidSessionID(""))
        #expect(!Identifiers.isValidSessionID("a/b"))
        #expect(!Identifiers.isValidSessionID("a%20b"))
        #expect(!Identifiers.isValidSessionID("'; DROP TABLE sessions;--"))
        #expect(!Identifiers.isValidSessionID("."))
        #expect(!Identifiers.isValidSessionID(".."))
        #expect(Identifiers.isValidSessionID("..."))
        #expect(Identifiers.isValidSessionID(".a"))
    }

    @Test("a payload over 16 KiB is refused, one at the limit accepted")
    func payloadLimit() throws {
        // {"t":"…"} is 8 bytes of framing around the string.
        let atLimit = String(repeating: "x", count: PresentRequest.maxPayloadBytes - 8)
        _ = try PresentRequest(json: ["destination": "a", "payload": ["t": .string(atLimit)]])
        let over = ["destination": "a", "payload": ["t": .string(atLimit + "x")]] as JSONValue
        #expect(pointers { _ = try PresentRequest(json: over) } == ["/payload"])
    }

    @Test("dismiss bodies: {}, count, to, all, and at most one of them")
    func dismissBodies() throws {
        #expect(try DismissRequest(json: try json("{}")).target == .top)
        #expect(try DismissRequest(json: try json(#"{"count":2}"#)).target == .count(2))
        #expect(try DismissRequest(json: try json(#"{"to":"p1"}"#)).target == .above(presentationID: "p1"))
        #expect(try DismissRequest(json: try json(#"{"all":true}"#)).target == .all)
        #expect(pointers { _ = try DismissRequest(json: try json(#"{"count":0}"#)) } == ["/count"])
        #expect(pointers { _ = try DismissRequest(json: try json(#"{"count":1.5}"#)) } == ["/count"])
        #expect(pointers { _ = try DismissRequest(json: try json(#"{"all":false}"#)) } == ["/all"])
        #expect(pointers { _ = try DismissRequest(json: try json(#"{"count":1,"all":true}"#)) } == [""])
        #expect(pointers { _ = try DismissRequest(json: try json(#"{"forced":true}"#)) } == ["/forced"])
    }

    @Test("a replacement lists every bad entry and every duplicated key")
    func replaceBodies() throws {
        let request = try ReplaceStackRequest(
            json: try json(#"{"stack":[{"destination":"a"},{"destination":"b","key":"k"}]}"#))
        #expect(request.stack.map(\.key) == ["a", "k"])
        let bad = try json(#"{"stack":[{"destination":"a"},{"destination":"a"},{"destination":""}]}"#)
        #expect(pointers { _ = try ReplaceStackRequest(json: bad) } == ["/stack/1/key", "/stack/2/destination"])
        #expect(pointers { _ = try ReplaceStackRequest(json: try json("{}")) } == ["/stack"])
    }

    @Test("JSON pointers escape ~ and /")
    func pointerEscaping() {
        #expect(JSONPointer.escape("a/b~c") == "a~1b~0c")
        #expect(JSONPointer.escape("plain") == "plain")
    }
}
