import ModalStackCore
import Testing

/// The JSON that presentations, sessions and changes write for themselves: the form the API
/// serves and the store keeps.
@Suite("JSON forms")
struct RepresentationTests {
    private let fixture = FixedContext()

    /// A session with two presentations on its stack (an alert on a sheet) and a third queued
    /// behind the locked alert, with strings that need escaping.
    private func busySession() throws -> Session {
        try fixture.apply([
            present("profile", payload: ["note": "a \"quoted\"\nline\u{1}", "n": 12.50, "deep": [[["x"]]]]),
            present("confirm", content: alert("Delete \"this\"?"), locked: true),
            present("later", content: .progress(ProgressContent(message: "Sync", total: 3, completed: 1.5))),
        ])
    }

    @Test("the written text is what the generic writer writes for its tree: one canonical form")
    func writtenTextIsCanonical() throws {
        let session = try busySession()
        #expect(session.queue.count == 1, "the third presentation waits behind the locked alert")
        #expect(session.json.serialized() == session.serialized())
        for presentation in session.stack + session.queue {
            #expect(presentation.json.serialized() == presentation.serialized())
        }
        let change = try #require(try session.applying(dismiss(force: true), in: fixture.context).change)
        #expect(change.json.serialized() == change.serialized())
        for event in change.events {
            #expect(event.json.serialized() == event.serialized())
        }
        for flat in change.flatEvents {
            #expect(flat.json.serialized() == flat.serialized())
            #expect(Array(try #require(flat.json.objectValue).keys.prefix(3)) == ["version", "at", "type"])
            #expect(
                try #require(flat.json.objectValue).members.dropFirst(2).map(\.key) == flat.event.json.objectValue?.keys
            )
        }
    }

    @Test("a session's members, in order; top is the last of the stack, written once and copied")
    func sessionMembers() throws {
        let session = try busySession()
        let object = try #require(session.json.objectValue)
        #expect(
            object.keys == [
                "id", "version", "createdAt", "updatedAt", "path", "stack", "top", "queue", "ttl", "expiresAt",
            ])
        #expect(object["top"] == session.stack.last?.json)
        #expect(object["stack"]?.arrayValue?.count == 2)
        #expect(object["queue"] == .array(session.queue.map(\.json)))
        #expect(object["version"] == JSONValue(session.version))
        #expect(object["ttl"] == JSONValue(session.ttlSeconds))
        #expect(object["expiresAt"] == .string(session.expiresAt.rfc3339))
        #expect(try Presentation(json: try #require(object["top"])) == session.stack.last)

        let empty = Session.unwritten(id: "e", at: fixture.now)
        #expect(empty.json["top"] == .null)
        #expect(empty.json["stack"] == [])
    }

    @Test("a session document is the session's JSON, and its lists are the lists' own JSON")
    func sessionDocument() throws {
        for session in [try busySession(), Session.unwritten(id: "e", at: fixture.now)] {
            let document = SessionDocument(session)
            #expect(document.bytes == session.serialized())
            var stack = JSONWriter()
            stack.write(session.stack)
            var queue = JSONWriter()
            queue.write(session.queue)
            #expect(Array(document.stackText.utf8) == stack.bytes)
            #expect(Array(document.queueText.utf8) == queue.bytes)
        }
    }

    @Test("a presentation's members, in order, per style")
    func presentationMembers() throws {
        let session = try busySession()
        let sheet = try #require(session.stack.first?.json.objectValue)
        #expect(
            sheet.keys == [
                "id", "destination", "style", "key", "state", "locked", "payload", "path", "detents",
                "interactiveDismissDisabled",
                "requestedAt", "presentedAt", "dismissedAt", "result",
            ])
        #expect(sheet["payload"]?["note"] == "a \"quoted\"\nline\u{1}")
        #expect(sheet["payload"]?["n"] == 12.5)
        #expect(sheet["dismissedAt"] == .null)
        let alert = try #require(session.stack.last?.json.objectValue)
        #expect(alert["locked"] == true)
        #expect(alert["path"] == nil, "alert-like presentations have no path")
        #expect(alert["title"] == "Delete \"this\"?")
        #expect(alert["buttons"]?.arrayValue?.first == ["id": "delete", "label": "Delete", "role": "destructive"])
        let progress = try #require(session.queue.first?.json.objectValue)
        #expect(progress["state"] == "queued")
        #expect(progress["presentedAt"] == .null)
        #expect(progress["total"] == 3)
        #expect(progress["completed"] == .number("1.5"))
    }
}
