/// The JSON forms of the event log: what the API serves and what the store keeps.
extension SessionEvent: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { writeMembers(to: &$0) }
    }

    /// `"type", "presentationId"?, "presentation"?, …details`; the details never hold those three
    /// keys (`init(json:)` takes them out).
    fileprivate func writeMembers(to object: inout JSONObjectWriter) {
        object.write("type", string: kind.rawValue)
        if let presentation {
            object.write("presentationId", string: presentation.id)
            object.write("presentation", presentation)
        }
        object.write(membersOf: details)
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
        writer.object { object in
            object.write("version", integer: version)
            object.write("at", at)
            object.write("events", events)
            object.write("stack", strings: stackIDs)
        }
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
        writer.object { object in
            object.write("version", integer: version)
            object.write("at", at)
            event.writeMembers(to: &object)
        }
    }
}
