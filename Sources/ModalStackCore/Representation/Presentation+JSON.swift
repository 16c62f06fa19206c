/// The JSON form of presentations and sessions: what the API returns and what the store keeps.
/// One form, so that what is stored reads back exactly as it was served.
extension Presentation: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.write("id", string: id)
            object.write("destination", string: destination)
            object.write("style", string: style.rawValue)
            object.write("key", string: key)
            object.write("state", string: state.rawValue)
            object.write("locked", .bool(locked))
            object.write("payload", .object(payload))
            if !style.isAlertLike {
                object.write("path", path)
            }
            content.write(to: &object)
            object.write("requestedAt", requestedAt)
            object.write("presentedAt", presentedAt)
            object.write("dismissedAt", dismissedAt)
            object.write("result", result ?? .null)
        }
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
        let path = reader.pathEntries("path")
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
            state: state, requestedAt: requestedAt, presentedAt: presentedAt, dismissedAt: dismissedAt, result: result,
            path: path)
    }
}

extension PathEntry: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.write("id", string: id)
            object.write("destination", string: destination)
            object.write("key", string: key)
            object.write("payload", .object(payload))
            object.write("pushedAt", pushedAt)
        }
    }

    /// Reads the form `write(to:)` writes; throws a validation error on anything else.
    public init(json: JSONValue, at pointer: String = "") throws(ModalError) {
        var reader = try FieldReader(json, at: pointer)
        let id = reader.string("id", required: true)
        let destination = reader.string("destination", required: true)
        let key = reader.string("key", required: true)
        let payload = reader.object("payload") ?? [:]
        let pushedAt = reader.timestamp("pushedAt")
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let id, let destination, let key, let pushedAt else {
            throw .validation(
                reader.errors.isEmpty ? [.init(pointer: pointer, message: "incomplete path entry")] : reader.errors)
        }
        self.init(id: id, destination: destination, key: key, payload: payload, pushedAt: pushedAt)
    }
}

extension ModalContent {
    /// Writes the members of this style inside a presentation's object.
    fileprivate func write(to object: inout JSONObjectWriter) {
        switch self {
        case .sheet(let options):
            object.write("detents", strings: options.detents.map(\.text))
            object.write("interactiveDismissDisabled", .bool(options.interactiveDismissDisabled))
        case .alert(let content), .confirmationDialog(let content):
            object.write("title", string: content.title)
            if let message = content.message {
                object.write("message", string: message)
            }
            object.array("buttons") { buttons in
                for button in content.buttons {
                    buttons.object { object in
                        object.write("id", string: button.id)
                        object.write("label", string: button.label)
                        object.write("role", string: button.role.rawValue)
                    }
                }
            }
        case .progress(let progress):
            if let message = progress.message {
                object.write("message", string: message)
            }
            object.write("total", JSONValue(progress.total))
            object.write("completed", JSONValue(progress.completed))
        case .fullScreenCover, .popover, .dialog:
            break
        }
    }
}

extension Session: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        _ = writeLocatingLists(to: &writer)
    }

    /// Writes the session and returns where, in `writer.bytes`, its path, stack and queue arrays are.
    fileprivate func writeLocatingLists(to writer: inout JSONWriter) -> SessionDocument.Lists {
        var lists = SessionDocument.Lists()
        writer.object { object in
            object.write("id", string: id)
            object.write("version", integer: version)
            object.write("createdAt", createdAt)
            object.write("updatedAt", updatedAt)
            object.member("path") { writer in
                let start = writer.bytes.count
                writer.write(path)
                lists.path = start..<writer.bytes.count
            }
            // The top is the last of the stack: its text is copied rather than written again.
            var top: Range<Int>?
            object.member("stack") { writer in
                let start = writer.bytes.count
                writer.array { array in
                    for presentation in stack {
                        array.element { writer in
                            let start = writer.bytes.count
                            presentation.write(to: &writer)
                            top = start..<writer.bytes.count
                        }
                    }
                }
                lists.stack = start..<writer.bytes.count
            }
            object.member("top") { writer in
                if let top {
                    writer.bytes.append(contentsOf: Array(writer.bytes[top]))
                } else {
                    writer.write(.null)
                }
            }
            object.member("queue") { writer in
                let start = writer.bytes.count
                writer.write(queue)
                lists.queue = start..<writer.bytes.count
            }
            object.write("ttl", integer: ttlSeconds)
            object.write("expiresAt", expiresAt)
        }
        return lists
    }
}

/// A session's JSON as the API serves it, and where its path, stack and queue arrays lie in it.
/// Those arrays are also the lists' stored form, so one rendering per change serves both the
/// answer and the store.
public struct SessionDocument: Sendable, Hashable {
    fileprivate struct Lists: Hashable {
        var path = 0..<0
        var stack = 0..<0
        var queue = 0..<0
    }

    public let bytes: [UInt8]
    private let lists: Lists

    public init(_ session: Session) {
        var writer = JSONWriter()
        lists = session.writeLocatingLists(to: &writer)
        bytes = writer.bytes
    }

    /// The root path as JSON text: what `JSONWriter.write(session.path)` writes.
    public var pathText: String { String(decoding: bytes[lists.path], as: UTF8.self) }

    /// The stack as JSON text: what `JSONWriter.write(session.stack)` writes.
    public var stackText: String { String(decoding: bytes[lists.stack], as: UTF8.self) }
    /// The queue as JSON text: what `JSONWriter.write(session.queue)` writes.
    public var queueText: String { String(decoding: bytes[lists.queue], as: UTF8.self) }
}

extension FieldReader {
    /// An RFC 3339 time as `Timestamp.rfc3339` writes it; `null` reads as absent.
    mutating func timestamp(_ key: String) -> Timestamp? {
        guard let value = value(key), !value.isNull else { return nil }
        guard let time = value.stringValue.flatMap(Timestamp.init(rfc3339:)) else {
            fail(key, "expected an RFC 3339 time")
            return nil
        }
        return time
    }

    /// An array of path entries; absent (as in what servers stored before paths) reads as empty.
    mutating func pathEntries(_ key: String) -> [PathEntry] {
        guard let elements = array(key) else { return [] }
        var entries: [PathEntry] = []
        for (index, element) in elements.enumerated() {
            do {
                entries.append(try PathEntry(json: element, at: pointer(to: key) + "/\(index)"))
            } catch {
                adopt(error.fieldErrors)
            }
        }
        return entries
    }
}
