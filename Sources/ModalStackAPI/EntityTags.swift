import ModalStackHTTP

/// Versions as HTTP entity tags (RFC 9110 §8.8.3): a session at version 7 has the strong ETag `"7"`.
enum EntityTag {
    static func of(version: Int64) -> String {
        "\"\(version)\""
    }

    /// What an `If-Match` or `If-None-Match` header lists.
    enum Condition: Equatable {
        /// `*`: any current version.
        case any
        /// These versions; weak tags (`W/"7"`) count for If-None-Match only (weak comparison).
        case versions(strong: Set<Int64>, weak: Set<Int64>)

        /// Whether a session at `version` (nil: it does not exist) matches, comparing strongly
        /// (If-Match) or weakly (If-None-Match).
        func matches(_ version: Int64?, weakly: Bool) -> Bool {
            guard let version else { return false }
            switch self {
            case .any: return true
            case .versions(let strong, let weak): return strong.contains(version) || (weakly && weak.contains(version))
            }
        }
    }

    /// Parses a header value; throws a 400 problem when it is not a list of entity tags.
    static func condition(_ header: String, name: String) throws -> Condition {
        let trimmed = header.trimmingSpaces
        if trimmed == "*" { return .any }
        var strong: Set<Int64> = []
        var weak: Set<Int64> = []
        for item in trimmed.split(separator: ",") {
            var tag = Substring(String(item).trimmingSpaces)
            let isWeak = tag.hasPrefix("W/")
            if isWeak { tag = tag.dropFirst(2) }
            guard tag.count >= 2, tag.first == "\"", tag.last == "\"" else {
                throw Problem.invalidHeader(name, "must be * or a list of entity tags such as \"3\"")
            }
            // A tag this server never made (not a version number) can simply never match.
            guard let version = Int64(tag.dropFirst().dropLast()) else { continue }
            if isWeak { weak.insert(version) } else { strong.insert(version) }
        }
        return .versions(strong: strong, weak: weak)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isSpace: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return first == startIndex && utf8.index(after: last) == endIndex ? self : String(self[first...last])
    }
}

extension HTTPRequest {
    /// The request's `If-Match`, if any.
    func ifMatch() throws -> EntityTag.Condition? {
        try headers["If-Match"].map { try EntityTag.condition($0, name: "If-Match") }
    }

    /// The request's `If-None-Match`, if any.
    func ifNoneMatch() throws -> EntityTag.Condition? {
        try headers["If-None-Match"].map { try EntityTag.condition($0, name: "If-None-Match") }
    }
}
