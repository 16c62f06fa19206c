/// The JSON form of presentations: what the API returns and what the store keeps. One form, so
/// that what is stored reads back exactly as it was served.
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
