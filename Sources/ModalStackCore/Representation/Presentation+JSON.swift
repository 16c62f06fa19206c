/// The JSON form of presentations and sessions: what the API returns and what the store keeps.
/// One form, so that what is stored reads back exactly as it was served.
extension Presentation {
    public var json: JSONValue {
        var object: JSONObject = [
            "id": .string(id),
            "destination": .string(destination),
            "style": .string(style.rawValue),
            "key": .string(key),
            "state": .string(state.rawValue),
            "locked": .bool(locked),
            "payload": .object(payload),
        ]
        content.write(into: &object)
        object.append("requestedAt", .string(requestedAt.rfc3339))
        object.append("presentedAt", presentedAt.map { .string($0.rfc3339) } ?? .null)
        object.append("dismissedAt", dismissedAt.map { .string($0.rfc3339) } ?? .null)
        object.append("result", result ?? .null)
        return .object(object)
    }

    /// Reads the form `json` writes (from storage); throws a validation error on anything else.
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
            throw .validation(reader.errors.isEmpty ? [.init(pointer: "", message: "incomplete presentation")] : reader.errors)
        }
        self.init(
            id: id, destination: destination, key: key, content: content, payload: payload, locked: locked,
            state: state, requestedAt: requestedAt, presentedAt: presentedAt, dismissedAt: dismissedAt, result: result)
    }
}

extension ModalContent {
    /// Adds the fields of this style to a presentation's JSON object.
    fileprivate func write(into object: inout JSONObject) {
        switch self {
        case .sheet(let options):
            object.append("detents", .array(options.detents.map { .string($0.text) }))
            object.append("interactiveDismissDisabled", .bool(options.interactiveDismissDisabled))
        case .alert(let content), .confirmationDialog(let content):
            object.append("title", .string(content.title))
            if let message = content.message { object.append("message", .string(message)) }
            object.append(
                "buttons",
                .array(content.buttons.map { ["id": .string($0.id), "label": .string($0.label), "role": .string($0.role.rawValue)] }))
        case .progress(let progress):
            if let message = progress.message { object.append("message", .string(message)) }
            object.append("total", JSONValue(progress.total))
            object.append("completed", JSONValue(progress.completed))
        case .fullScreenCover, .popover, .dialog:
            break
        }
    }
}

extension Session {
    public var json: JSONValue {
        [
            "id": .string(id),
            "version": JSONValue(version),
            "createdAt": .string(createdAt.rfc3339),
            "updatedAt": .string(updatedAt.rfc3339),
            "stack": .array(stack.map(\.json)),
            "top": top?.json ?? .null,
            "queue": .array(queue.map(\.json)),
            "ttl": JSONValue(ttlSeconds),
            "expiresAt": .string(expiresAt.rfc3339),
        ]
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
