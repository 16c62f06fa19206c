import ModalStackCore

/// The API's JSON forms of the core's values. These are the shapes openapi.yaml describes.
extension Presentation {
    var json: JSONValue {
        [
            "id": .string(id),
            "destination": .string(destination),
            "style": .string(style.rawValue),
            "key": .string(key),
            "payload": .object(payload),
            "presentedAt": .string(presentedAt.rfc3339),
        ]
    }
}

extension Session {
    var json: JSONValue {
        [
            "id": .string(id),
            "version": JSONValue(version),
            "createdAt": .string(createdAt.rfc3339),
            "updatedAt": .string(updatedAt.rfc3339),
            "stack": .array(stack.map(\.json)),
            "top": top?.json ?? .null,
        ]
    }
}
