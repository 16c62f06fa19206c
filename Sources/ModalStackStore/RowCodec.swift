import ModalStackCore

/// How values are written into rows' columns and read back: sessions, presentations, paths,
/// changes and headers, in the core's JSON forms, compact. Every engine stores them this way, so
/// a row means the same in each.
public enum RowCodec {
    /// A session from the columns of its row, the lists in their stored form.
    public static func session(
        id: String, version: Int64, createdAt: Int64, updatedAt: Int64, path: String, stack: String, queue: String,
        ttl: Int64
    ) throws(StoreError) -> Session {
        Session(
            id: id, version: version, createdAt: Timestamp(millisecondsSinceEpoch: createdAt),
            updatedAt: Timestamp(millisecondsSinceEpoch: updatedAt), stack: try decodeList(stack),
            queue: try decodeList(queue), ttlSeconds: ttl, path: try decodePath(path))
    }

    /// Where a presentation dismissed by `version` sorts among its session's dismissed ones: by
    /// that version, then by its place (`offset`) in the change.
    public static func dismissedSequence(version: Int64, offset: Int) -> Int64 {
        version << 16 + Int64(offset)
    }

    /// A list of presentations or of path entries in its stored form.
    public static func encode(_ values: [some JSONWritable]) -> String {
        var writer = JSONWriter(capacity: 1024)
        writer.write(values)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    public static func decodePath(_ text: String) throws(StoreError) -> [PathEntry] {
        guard let elements = try parse(text).arrayValue else {
            throw StoreError(.corrupt, "a stored path is not an array")
        }
        var entries: [PathEntry] = []
        for element in elements {
            do {
                entries.append(try PathEntry(json: element))
            } catch {
                throw StoreError(.corrupt, "a stored path entry is invalid: \(error.detail)")
            }
        }
        return entries
    }

    public static func decodeList(_ text: String) throws(StoreError) -> [Presentation] {
        guard let elements = try parse(text).arrayValue else {
            throw StoreError(.corrupt, "a stored list of presentations is not an array")
        }
        var presentations: [Presentation] = []
        presentations.reserveCapacity(elements.count)
        for element in elements {
            presentations.append(try decode(element))
        }
        return presentations
    }

    public static func decodeOne(_ text: String) throws(StoreError) -> Presentation {
        try decode(try parse(text))
    }

    public static func decodeChange(_ text: String, sessionID: String) throws(StoreError) -> SessionChange {
        let json = try parse(text)
        do {
            return try SessionChange(sessionID: sessionID, json: json)
        } catch {
            throw StoreError(.corrupt, "a stored change of session \(sessionID) is invalid: \(error.detail)")
        }
    }

    public static func encodeHeaders(_ headers: [String: String]) -> String {
        JSONValue.object(JSONObject(headers.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })).jsonText
    }

    public static func decodeHeaders(_ text: String) throws(StoreError) -> [String: String] {
        guard let object = try parse(text).objectValue else {
            throw StoreError(.corrupt, "stored headers are not an object")
        }
        var headers: [String: String] = [:]
        for member in object.members {
            headers[member.key] = member.value.stringValue
        }
        return headers
    }

    private static func decode(_ json: JSONValue) throws(StoreError) -> Presentation {
        do {
            return try Presentation(json: json)
        } catch {
            throw StoreError(.corrupt, "a stored presentation is invalid: \(error.detail)")
        }
    }

    private static func parse(_ text: String) throws(StoreError) -> JSONValue {
        do {
            return try JSONParser.parse(text, limits: .written)
        } catch {
            throw StoreError(.corrupt, "a stored document is not valid JSON: \(error)")
        }
    }
}
