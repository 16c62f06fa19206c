/// The body of `PUT /v1/sessions/{id}/stack`: `{"stack": [present requests, bottom first], "force"?}`.
public struct ReplaceStackRequest: Sendable, Hashable {
    public var stack: [PresentRequest]
    /// Replace locked presentations too.
    public var force: Bool

    public init(stack: [PresentRequest], force: Bool = false) {
        self.stack = stack
        self.force = force
    }

    /// Decodes every entry, reporting each bad field, each key used twice, and an alert-like
    /// entry anywhere but last.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let elements = reader.array("stack", required: true) ?? []
        let force = reader.bool("force") ?? false
        reader.rejectUnknownMembers()
        var errors = reader.errors
        var stack: [PresentRequest] = []
        var firstIndexOfKey: [String: Int] = [:]
        for (index, element) in elements.enumerated() {
            let pointer = "/stack/\(index)"
            do {
                let request = try PresentRequest(json: element, at: pointer)
                if let first = firstIndexOfKey[request.key] {
                    errors.append(
                        .init(
                            pointer: pointer + "/key",
                            message: "key \"\(request.key)\" is already used by /stack/\(first)"))
                } else {
                    firstIndexOfKey[request.key] = index
                }
                if request.style.isAlertLike, index != elements.count - 1 {
                    errors.append(
                        .init(pointer: pointer + "/style", message: "an alert-like presentation must be the last entry")
                    )
                }
                stack.append(request)
            } catch {
                errors += error.fieldErrors
            }
        }
        guard errors.isEmpty else { throw .validation(errors) }
        self.init(stack: stack, force: force)
    }
}
