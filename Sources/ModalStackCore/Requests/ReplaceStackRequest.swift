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
        var listReader = ModalListReader()
        let stack = elements.enumerated().compactMap { index, element in
            listReader.read(element, index: index, count: elements.count, errors: &errors)
        }
        guard errors.isEmpty else { throw .validation(errors) }
        self.init(stack: stack, force: force)
    }

    /// The same change as a navigation that keeps every path it can: the root's, and those of
    /// the modals it keeps.
    public var navigation: NavigationRequest {
        NavigationRequest(path: nil, stack: stack.map { NavigationRequest.Modal($0) }, force: force)
    }
}
