/// The body of `PUT /v1/sessions/{id}/stack`: `{"stack": [present requests, bottom first]}`.
public struct ReplaceStackRequest: Sendable, Hashable {
    public var stack: [PresentRequest]

    public init(stack: [PresentRequest]) {
        self.stack = stack
    }

    /// Decodes every entry, reporting each bad field and each key used twice.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let elements = reader.array("stack", required: true) ?? []
        reader.rejectUnknownMembers()
        var errors = reader.errors
        var stack: [PresentRequest] = []
        var firstIndexOfKey: [String: Int] = [:]
        for (index, element) in elements.enumerated() {
            let pointer = "/stack/\(index)"
            do {
                let request = try PresentRequest(json: element, at: pointer)
                if let first = firstIndexOfKey[request.key] {
                    errors.append(.init(pointer: pointer + "/key", message: "key \"\(request.key)\" is already used by /stack/\(first)"))
                } else {
                    firstIndexOfKey[request.key] = index
                }
                stack.append(request)
            } catch {
                errors += error.fieldErrors
            }
        }
        guard errors.isEmpty else { throw .validation(errors) }
        self.stack = stack
    }
}
