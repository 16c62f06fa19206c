import ModalStackCore

/// How a session's stack is written into its row: a compact JSON array of presentations, with
/// times as epoch milliseconds. This format is the store's own, not the API's.
enum StoredSession {
    static func encodeStack(_ stack: [Presentation]) -> String {
        JSONValue.array(stack.map(encode)).jsonText
    }

    static func decodeStack(_ text: String) throws(StoreError) -> [Presentation] {
        let json: JSONValue
        do {
            json = try JSONParser.parse(Array(text.utf8))
        } catch {
            throw StoreError(.corrupt, "a stored stack is not valid JSON: \(error)")
        }
        guard let elements = json.arrayValue else { throw StoreError(.corrupt, "a stored stack is not an array") }
        var stack: [Presentation] = []
        stack.reserveCapacity(elements.count)
        for element in elements {
            guard let object = element.objectValue,
                let id = object["id"]?.stringValue,
                let destination = object["destination"]?.stringValue,
                let style = object["style"]?.stringValue.flatMap(ModalStyle.init(rawValue:)),
                let key = object["key"]?.stringValue,
                let payload = object["payload"]?.objectValue,
                let presentedAt = object["presentedAt"]?.intValue
            else { throw StoreError(.corrupt, "a stored presentation is missing fields") }
            stack.append(
                Presentation(
                    id: id, destination: destination, style: style, key: key, payload: payload,
                    presentedAt: Timestamp(millisecondsSinceEpoch: Int64(presentedAt))))
        }
        return stack
    }

    private static func encode(_ presentation: Presentation) -> JSONValue {
        [
            "id": .string(presentation.id),
            "destination": .string(presentation.destination),
            "style": .string(presentation.style.rawValue),
            "key": .string(presentation.key),
            "payload": .object(presentation.payload),
            "presentedAt": JSONValue(presentation.presentedAt.millisecondsSinceEpoch),
        ]
    }
}
