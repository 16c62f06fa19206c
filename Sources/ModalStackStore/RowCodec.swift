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

    /// A checkpoint: the session after a change, whole but its id and version (its row's), in
    /// one text. `document` is the session's.
    public static func encodeCheckpoint(_ session: Session, document: SessionDocument) -> String {
        """
        {"createdAt":\(session.createdAt.millisecondsSinceEpoch),"updatedAt":\(session.updatedAt.millisecondsSinceEpoch),\
        "ttl":\(session.ttlSeconds),"path":\(document.pathText),"stack":\(document.stackText),"queue":\(document.queueText)}
        """
    }

    public static func decodeCheckpoint(_ text: String, sessionID: String, version: Int64) throws(StoreError) -> Session
    {
        let members = try parse(text).objectValue
        func integer(_ name: String) throws(StoreError) -> Int64 {
            guard let value = members?[name]?.intValue else {
                throw StoreError(.corrupt, "a checkpoint of session \(sessionID) has no \(name)")
            }
            return Int64(value)
        }
        func list(_ name: String) throws(StoreError) -> [JSONValue] {
            guard let elements = members?[name]?.arrayValue else {
                throw StoreError(.corrupt, "a checkpoint of session \(sessionID) has no \(name)")
            }
            return elements
        }
        return Session(
            id: sessionID, version: version, createdAt: Timestamp(millisecondsSinceEpoch: try integer("createdAt")),
            updatedAt: Timestamp(millisecondsSinceEpoch: try integer("updatedAt")),
            stack: try list("stack").map { element throws(StoreError) in try decode(element) },
            queue: try list("queue").map { element throws(StoreError) in try decode(element) },
            ttlSeconds: try integer("ttl"), path: try decodePath(list("path")))
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
        return try decodePath(elements)
    }

    private static func decodePath(_ elements: [JSONValue]) throws(StoreError) -> [PathEntry] {
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

    /// Whole changes from `records` (oldest first) until they hold `eventLimit` events: a page
    /// of the event log.
    public static func decodeChanges(_ records: [String], sessionID: String, eventLimit: Int) throws(StoreError)
        -> [SessionChange]
    {
        var changes: [SessionChange] = []
        var eventCount = 0
        for record in records where eventCount < eventLimit {
            let change = try decodeChange(record, sessionID: sessionID)
            changes.append(change)
            eventCount += change.events.count
        }
        return changes
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
