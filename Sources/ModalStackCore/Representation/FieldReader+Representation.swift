/// Reads the representation's own values: times and path entries.
extension FieldReader {
    /// An RFC 3339 time as `Timestamp.rfc3339` writes it; `null` reads as absent.
    mutating func timestamp(_ key: String) -> Timestamp? {
        guard let value = value(key), !value.isNull else { return nil }
        guard let time = value.stringValue.flatMap(Timestamp.init(rfc3339:)) else {
            fail(key, "expected an RFC 3339 time")
            return nil
        }
        return time
    }

    /// An array of path entries; absent (as in what servers stored before paths) reads as empty.
    mutating func pathEntries(_ key: String) -> [PathEntry] {
        guard let elements = array(key) else { return [] }
        var entries: [PathEntry] = []
        for (index, element) in elements.enumerated() {
            do {
                entries.append(try PathEntry(json: element, at: pointer(to: key) + "/\(index)"))
            } catch {
                adopt(error.fieldErrors)
            }
        }
        return entries
    }
}
