/// The JSON forms of the event log: what the API serves and what the store keeps.
extension SessionEvent {
    /// `{"type", "presentationId"?, "presentation"?, …details}`
    public var json: JSONValue {
        var object: JSONObject = ["type": .string(kind.rawValue)]
        if let presentation {
            object.append("presentationId", .string(presentation.id))
            object.append("presentation", presentation.json)
        }
        for member in details.members {
            object[member.key] = member.value
        }
        return .object(object)
    }

    /// Reads the form `json` writes.
    public init(json: JSONValue) throws(ModalError) {
        guard var object = json.objectValue, let kind = object["type"]?.stringValue.flatMap(Kind.init(rawValue:)) else {
            throw .validation([.init(pointer: "/type", message: "expected an event type")])
        }
        let presentation = try object["presentation"].map { json throws(ModalError) in try Presentation(json: json) }
        for key in ["type", "presentationId", "presentation"] { object[key] = nil }
        self.init(kind, presentation: presentation, details: object)
    }
}

extension SessionChange {
    /// `{"version", "at", "events": […], "stack": [ids]}`
    public var json: JSONValue {
        [
            "version": JSONValue(version),
            "at": .string(at.rfc3339),
            "events": .array(events.map(\.json)),
            "stack": .array(stackIDs.map { .string($0) }),
        ]
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

    /// Reads the form `json` writes, for the session `sessionID`.
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
