/// The JSON forms of the event log: what the API serves and what the store keeps.
extension SessionEvent: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { writeMembers(to: &$0) }
    }

    /// The members a change's event has besides its details, which never hold these keys
    /// (`init(json:)` takes them out).
    private static let ownMembers = ["type", "presentationId", "presentation", "entryId", "entry", "level"]

    /// `"type", "presentationId"?, "presentation"?, "entryId"?, "entry"?, "level"?, …details`
    fileprivate func writeMembers(to object: inout JSONObjectWriter) {
        object.write("type", string: kind.rawValue)
        if let presentation {
            object.write("presentationId", string: presentation.id)
            object.write("presentation", presentation)
        }
        if let entry {
            object.write("entryId", string: entry.id)
            object.write("entry", entry)
        }
        if let level {
            object.write("level", string: level.name)
        }
        object.write(membersOf: details)
    }

    /// Reads the form `write(to:)` writes.
    public init(json: JSONValue) throws(ModalError) {
        guard var object = json.objectValue, let kind = object["type"]?.stringValue.flatMap(Kind.init(rawValue:)) else {
            throw .validation([.init(pointer: "/type", message: "expected an event type")])
        }
        let presentation = try object["presentation"].map { json throws(ModalError) in try Presentation(json: json) }
        let entry = try object["entry"].map { json throws(ModalError) in try PathEntry(json: json, at: "/entry") }
        let level = object["level"]?.stringValue.map(NavigationLevel.init(name:))
        for key in Self.ownMembers { object[key] = nil }
        self.init(kind, presentation: presentation, entry: entry, level: level, details: object)
    }
}

extension NavigationShape {
    /// `"stack": [ids], "path": [ids], "paths": {containerId: [ids]}` inside a change's object.
    fileprivate func writeMembers(to object: inout JSONObjectWriter) {
        object.write("stack", strings: stackIDs)
        object.write("path", strings: path)
        object.object("paths") { paths in
            for level in stack {
                if let path = level.path {
                    paths.member(escaping: level.presentationID) { $0.write(strings: path) }
                }
            }
        }
    }

    /// Reads the members `writeMembers` writes; records from before paths have only `stack`.
    fileprivate init(json: JSONObject) throws(ModalError) {
        guard let stack = json["stack"]?.arrayValue?.compactMap(\.stringValue) else {
            throw .validation([.init(pointer: "/stack", message: "expected the stack's ids")])
        }
        // One presentation is on a stack once; `paths` could not name two.
        guard Set(stack).count == stack.count else {
            throw .validation([.init(pointer: "/stack", message: "names a presentation twice")])
        }
        let paths = json["paths"]?.objectValue
        self.init(
            path: json["path"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            stack: stack.map { id in
                Level(presentationID: id, path: paths.map { $0[id]?.arrayValue?.compactMap(\.stringValue) } ?? [])
            })
    }
}

extension SessionChange: JSONWritable {
    /// `{"version", "at", "events": […], "stack": [ids], "path": [ids], "paths": {id: [ids]}}`
    public func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.write("version", integer: version)
            object.write("at", at)
            object.write("events", events)
            shape.writeMembers(to: &object)
        }
    }

    /// The log's flat form: each event with the version and time of its change.
    public var flatEvents: [FlatEvent] {
        events.map { FlatEvent(version: version, at: at, event: $0) }
    }

    /// The change without its events: `{"version", "at", "stack", "path", "paths"}`.
    public var summary: ChangeSummary { ChangeSummary(change: self) }

    /// Reads the form `write(to:)` writes, for the session `sessionID`.
    public init(sessionID: String, json: JSONValue) throws(ModalError) {
        guard let object = json.objectValue, let version = json["version"]?.intValue,
            let at = json["at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let events = json["events"]?.arrayValue
        else { throw .validation([.init(pointer: "", message: "expected a change record")]) }
        var decoded: [SessionEvent] = []
        for event in events {
            decoded.append(try SessionEvent(json: event))
        }
        self.init(
            sessionID: sessionID, version: Int64(version), at: at, events: decoded,
            shape: try NavigationShape(json: object))
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

/// A change of an event page without its events, which the page lists flat.
public struct ChangeSummary: Sendable, JSONWritable {
    public var change: SessionChange

    public func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.write("version", integer: change.version)
            object.write("at", change.at)
            change.shape.writeMembers(to: &object)
        }
    }
}
