/// The JSON form of presentations and sessions: what the API returns and what the store keeps.
/// One form, so that what is stored reads back exactly as it was served.
extension Presentation: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim(#"{"id":"#)
        writer.write(string: id)
        writer.writeVerbatim(#","destination":"#)
        writer.write(string: destination)
        writer.writeVerbatim(#","style":"#)
        writer.write(string: style.rawValue)
        writer.writeVerbatim(#","key":"#)
        writer.write(string: key)
        writer.writeVerbatim(#","state":"#)
        writer.write(string: state.rawValue)
        writer.writeVerbatim(#","locked":"#)
        writer.write(.bool(locked))
        writer.writeVerbatim(#","payload":"#)
        writer.write(.object(payload))
        content.write(to: &writer)
        writer.writeVerbatim(#","requestedAt":"#)
        writer.write(requestedAt)
        writer.writeVerbatim(#","presentedAt":"#)
        writer.write(presentedAt)
        writer.writeVerbatim(#","dismissedAt":"#)
        writer.write(dismissedAt)
        writer.writeVerbatim(#","result":"#)
        writer.write(result ?? .null)
        writer.writeVerbatim("}")
    }

    /// Reads the form `write(to:)` writes (from storage); throws a validation error on anything else.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let id = reader.string("id", required: true)
        let destination = reader.string("destination", required: true)
        let key = reader.string("key", required: true)
        let style = reader.string("style", required: true).flatMap(ModalStyle.init(rawValue:))
        let state = reader.string("state", required: true).flatMap(State.init(rawValue:))
        let locked = reader.bool("locked") ?? false
        let payload = reader.object("payload") ?? [:]
        let content = style.flatMap { ModalContent.decode(style: $0, from: &reader) }
        let requestedAt = reader.timestamp("requestedAt")
        let presentedAt = reader.timestamp("presentedAt")
        let dismissedAt = reader.timestamp("dismissedAt")
        var result = reader.value("result")
        if result?.isNull == true { result = nil }
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let id, let destination, let key, let content, let state, let requestedAt else {
            throw .validation(
                reader.errors.isEmpty ? [.init(pointer: "", message: "incomplete presentation")] : reader.errors)
        }
        self.init(
            id: id, destination: destination, key: key, content: content, payload: payload, locked: locked,
            state: state, requestedAt: requestedAt, presentedAt: presentedAt, dismissedAt: dismissedAt, result: result)
    }
}

extension ModalContent {
    /// Writes the members of this style, each after a comma, inside a presentation's object.
    fileprivate func write(to writer: inout JSONWriter) {
        switch self {
        case .sheet(let options):
            writer.writeVerbatim(#","detents":"#)
            writer.write(strings: options.detents.map(\.text))
            writer.writeVerbatim(#","interactiveDismissDisabled":"#)
            writer.write(.bool(options.interactiveDismissDisabled))
        case .alert(let content), .confirmationDialog(let content):
            writer.writeVerbatim(#","title":"#)
            writer.write(string: content.title)
            if let message = content.message {
                writer.writeVerbatim(#","message":"#)
                writer.write(string: message)
            }
            writer.writeVerbatim(#","buttons":["#)
            for (index, button) in content.buttons.enumerated() {
                writer.writeVerbatim(index > 0 ? #",{"id":"# : #"{"id":"#)
                writer.write(string: button.id)
                writer.writeVerbatim(#","label":"#)
                writer.write(string: button.label)
                writer.writeVerbatim(#","role":"#)
                writer.write(string: button.role.rawValue)
                writer.writeVerbatim("}")
            }
            writer.writeVerbatim("]")
        case .progress(let progress):
            if let message = progress.message {
                writer.writeVerbatim(#","message":"#)
                writer.write(string: message)
            }
            writer.writeVerbatim(#","total":"#)
            writer.write(JSONValue(progress.total))
            writer.writeVerbatim(#","completed":"#)
            writer.write(JSONValue(progress.completed))
        case .fullScreenCover, .popover, .dialog:
            break
        }
    }
}

extension Session: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.writeVerbatim(#"{"id":"#)
        writer.write(string: id)
        writer.writeVerbatim(#","version":"#)
        writer.write(integer: version)
        writer.writeVerbatim(#","createdAt":"#)
        writer.write(createdAt)
        writer.writeVerbatim(#","updatedAt":"#)
        writer.write(updatedAt)
        writer.writeVerbatim(#","stack":["#)
        // The top is the last of the stack: its text is copied rather than written again.
        var top: Range<Int>?
        for (index, presentation) in stack.enumerated() {
            if index > 0 { writer.writeVerbatim(",") }
            let start = writer.bytes.count
            presentation.write(to: &writer)
            top = start..<writer.bytes.count
        }
        writer.writeVerbatim(#"],"top":"#)
        if let top {
            writer.bytes.append(contentsOf: Array(writer.bytes[top]))
        } else {
            writer.writeVerbatim("null")
        }
        writer.writeVerbatim(#","queue":"#)
        writer.write(queue)
        writer.writeVerbatim(#","ttl":"#)
        writer.write(integer: ttlSeconds)
        writer.writeVerbatim(#","expiresAt":"#)
        writer.write(expiresAt)
        writer.writeVerbatim("}")
    }
}

extension FieldReader {
    /// An RFC 3339 time as `Timestamp.rfc3339` writes it; `null` reads as absent.
    fileprivate mutating func timestamp(_ key: String) -> Timestamp? {
        guard let value = value(key), !value.isNull else { return nil }
        guard let time = value.stringValue.flatMap(Timestamp.init(rfc3339:)) else {
            fail(key, "expected an RFC 3339 time")
            return nil
        }
        return time
    }
}
