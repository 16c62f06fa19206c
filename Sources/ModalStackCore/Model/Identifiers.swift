/// The shapes of the names clients choose. Each rule is written once, here.
public enum Identifiers {
    /// Session ids: 1–128 characters of `[A-Za-z0-9._~-]` (RFC 3986 unreserved, so never escaped in a URL),
    /// other than `.` and `..`: as path segments, clients collapse those (RFC 3986 §5.2.4).
    public static let sessionIDMaxLength = 128
    /// Destination names: 1–64 characters, `^[A-Za-z][A-Za-z0-9._-]*$`.
    public static let destinationMaxLength = 64
    /// Keys: 1–128 characters, any Unicode except control characters.
    public static let keyMaxLength = 128

    public static func isValidSessionID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= sessionIDMaxLength, !isDotSegment(id) else { return false }
        return bytes.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "~")
                || $0 == UInt8(ascii: "-")
        }
    }

    /// `.` or `..`: a path segment that URL resolution removes, so no client can send it as an id.
    public static func isDotSegment(_ segment: String) -> Bool {
        segment == "." || segment == ".."
    }

    public static func isValidDestination(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= destinationMaxLength, isLetter(first) else { return false }
        return bytes.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    /// Human text (keys, titles, labels, messages): 1…`maxLength` Unicode scalars and no control
    /// characters, except line breaks and tabs where `allowsLineBreaks` (messages).
    public static func isValidText(_ text: String, maxLength: Int, allowsLineBreaks: Bool = false) -> Bool {
        let count = text.unicodeScalars.count
        guard count >= 1, count <= maxLength else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar.properties.generalCategory != .control || (allowsLineBreaks && (scalar == "\n" || scalar == "\t"))
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }
}
