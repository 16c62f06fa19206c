/// The JSON forms of the event log: what the API serves and what the store keeps.
extension SessionEvent: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim("{")
        writeMembers(to: &writer)
        writer.writeVerbatim("}")
    }

    /// `"type", "presentationId"?, "presentation"?, …details`, without the braces; the details
    /// never hold those three keys (`init(json:)` takes them out).
    fileprivate func writeMembers(to writer: inout JSONWriter) {
        writer.writeVerbatim(#""type":"#)
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
        writer.write(integer: version)
        writer.writeVerbatim(#","at":"#)
        writer.write(at)
        writer.writeVerbatim(#","events":"#)
        writer.write(events)
        writer.writeVerbatim(#","stack":"#)
        writer.write(strings: stackIDs)
        writer.writeVerbatim("}")
    }

    /// The log's flat form: each event with the version and time of its change.
    public var flatEvents: [FlatEvent] {
        events.map { FlatEvent(version: version, at: at, event: $0) }
    }

    /// Reads the form `write(to:)` writes, for the session `sessionID`.
    public init(sessionID: String, json: JSONValue) throws(ModalError) {
        guard let version = json["version"]?.intValue,
            let at = json["at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let events = json["events"]?.arrayValue, let stack = json["stack"]?.arrayValue
        else { throw .validation([.init(pointer: "", message: "expected a change record")]) }
        var decoded: [SessionEvent] = []
        for event in events {
            decoded.append(try SessionEvent(json: event))
        }
        self.init(
            sessionID: sessionID, version: Int64(version), at: at, events: decoded,
            stackIDs: stack.compactMap(\.stringValue))
    }
}

/// An event in the log's flat form: `{"version", "at", "type", …}`.
public struct FlatEvent: Sendable, JSONWritable {
    public var version: Int64
    public var at: Timestamp
    public var event: SessionEvent

    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim(#"{"version":"#)
        writer.write(integer: version)
        writer.writeVerbatim(#","at":"#)
        writer.write(at)
        writer.writeVerbatim(",")
        event.writeMembers(to: &writer)
        writer.writeVerbatim("}")
    }
}
