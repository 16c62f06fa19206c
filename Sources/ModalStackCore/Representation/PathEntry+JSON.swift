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
