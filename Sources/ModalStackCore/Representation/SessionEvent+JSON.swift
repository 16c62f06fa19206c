/// The JSON forms of the event log: what the API serves and what the store keeps.
extension SessionEvent: JSONWritable {
    /// `{"type", "presentationId"?, "presentation"?, …details}`; the details never hold those three
    /// keys (`init(json:)` takes them out).
    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim(#"{"type":"#)
        writer.write(string: kind.rawValue)
        if let presentation {
            writer.writeVerbatim(#","presentationId":"#)
            writer.write(string: presentation.id)
            writer.writeVerbatim(#","presentation":"#)
            writer.write(presentation)
        }
        for member in details.members {
            writer.writeVerbatim(",")
            writer.write(string: member.key)
            writer.writeVerbatim(":")
            writer.write(member.value)
        }
        writer.writeVerbatim("}")
    }

    /// Reads the form `write(to:)` writes.
    public init(json: JSONValue) throws(ModalError) {
        guard var object = json.objectValue, let kind = object["type"]?.stringValue.flatMap(Kind.init(rawValue:)) else {
            throw .validation([.init(pointer: "/type", message: "expected an event type")])
        }
        let presentation = try object["presentation"].map { json throws(ModalError) in try Presentation(json: json) }
        for key in ["type", "presentationId", "presentation"] { object[key] = nil }
        self.init(kind, presentation: presentation, details: object)
    }
}

extension SessionChange: JSONWritable {
    /// `{"version", "at", "events": […], "stack": [ids]}`
    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim(#"{"version":"#)
        writer.write(JSONValue(version))
        writer.writeVerbatim(#","at":"#)
        writer.write(at)
        writer.writeVerbatim(#","events":"#)
        writer.write(events)
        writer.writeVerbatim(#","stack":["#)
        for (index, id) in stackIDs.enumerated() {
            if index > 0 { writer.writeVerbatim(",") }
            writer.write(string: id)
        }
        writer.writeVerbatim("]}")
    }

    /// The log's flat form: each event with the version and time of its change.
    public var flatEvents: [JSONValue] {
        events.map { event in
            var object: JSONObject = ["version": JSONValue(version), "at": .string(at.rfc3339)]
            for member in event.json.objectValue?.members ?? [] {
                object.append(member.key, member.value)
            }
            return .object(object)
        }
    }

    /// Reads the form `write(to:)` writes, for the session `sessionID`.
    public init(sessionID: String, json: JSONValue) throws(ModalError) {
        guard let version = json["version"]?.intValue, let at = json["at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let events = json["events"]?.arrayValue, let stack = json["stack"]?.arrayValue
        else { throw .validation([.init(pointer: "", message: "expected a change record")]) }
        var decoded: [SessionEvent] = []
        for event in events {
            decoded.append(try SessionEvent(json: event))
        }
        self.init(
            sessionID: sessionID, version: Int64(version), at: at, events: decoded, stackIDs: stack.compactMap(\.stringValue))
    }
}
