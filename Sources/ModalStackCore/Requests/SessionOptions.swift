/// The body of `PUT /v1/sessions/{id}` and `POST /v1/sessions`: an object with no fields yet
/// (or no body at all). Checked so that a field a later version adds is not silently ignored here.
public struct SessionOptions: Sendable, Hashable {
    @discardableResult
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
    }
}
