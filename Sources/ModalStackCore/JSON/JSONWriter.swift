/// Writes JSON values as compact RFC 8259 text in UTF-8: no whitespace, object members in their
/// stored order, numbers as their stored text.
///
/// Strings escape only what JSON requires: `"`, `\` and the control characters below U+0020
/// (as `\b \f \n \r \t`, or `\u00xx` with lowercase hex). `/` and non-ASCII characters are
/// written as they are.
///
/// ```swift
/// var writer = JSONWriter(capacity: 4096)
/// writer.write(["id": 7, "tags": ["a", "b"]])
/// // writer.bytes holds {"id":7,"tags":["a","b"]}
/// ```
///
/// A document of a known shape is written through ``object(_:)`` and ``array(_:)``, which place
/// the braces, brackets, commas and colons.
public struct JSONWriter {
    /// The UTF-8 text written so far.
    public var bytes: [UInt8]

    /// Starts with room for `capacity` bytes, so that a document about that size grows no buffer.
    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable
    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Appends the text of `value`. A `.number` is written as its text, which must be valid JSON.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null:
            append("null")
        case .bool(let bool):
            append(bool ? "true" : "false")
        case .number(let text):
            var text = text
            text.withUTF8 { bytes.append(contentsOf: $0) }
        case .string(let string):
            write(string: string)
        case .array(let elements):
            array { array in
                for element in elements {
                    array.element { $0.write(element) }
                }
            }
        case .object(let members):
            object { $0.write(membersOf: members) }
        }
    }

    /// Appends `string` as a JSON string, quoted and escaped.
    public mutating func write(string: String) {
        var string = string
        string.withUTF8 { utf8 in
            // Most strings need no escape: the quotes and the text go in one append.
            if !JSONStringBytes.needsEscape(utf8) {
                appendBytes(maximumCount: utf8.count + 2) { start in
                    start.initialize(to: UInt8(ascii: "\""))
                    if let text = utf8.baseAddress {
                        (start + 1).initialize(from: text, count: utf8.count)
                    }
                    (start + 1 + utf8.count).initialize(to: UInt8(ascii: "\""))
                    return utf8.count + 2
                }
                return
            }
            bytes.append(UInt8(ascii: "\""))
            // Copy the runs between characters that need escaping in one go, finding them eight
            // bytes at a time.
            var runStart = 0
            var index = 0
            while index < utf8.count {
                if index + 8 <= utf8.count,
                    !JSONStringBytes.needsEscape(
                        UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self))
                {
                    index += 8
                    continue
                }
                for byteIndex in index..<min(index + 8, utf8.count) {
                    let byte = utf8[byteIndex]
                    guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<byteIndex]))
                    appendEscape(of: byte)
                    runStart = byteIndex + 1
                }
                index = min(index + 8, utf8.count)
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }

    private mutating func appendEscape(of byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): append("\\\"")
        case UInt8(ascii: "\\"): append("\\\\")
        case 0x08: append("\\b")
        case 0x0C: append("\\f")
        case 0x0A: append("\\n")
        case 0x0D: append("\\r")
        case 0x09: append("\\t")
        default:
            let hexDigits: StaticString = "0123456789abcdef"
            append("\\u00")
            bytes.append(hexDigits.utf8Start[Int(byte >> 4)])
            bytes.append(hexDigits.utf8Start[Int(byte & 0x0F)])
        }
    }

    /// Appends a value that writes itself.
    public mutating func write(_ value: some JSONWritable) {
        value.write(to: &self)
    }

    /// Appends an array of values that write themselves. Inlinable, so that each caller gets a copy
    /// specialized to its element type instead of looking up generic types per element.
    @inlinable
    public mutating func write(_ values: [some JSONWritable]) {
        array { array in
            for value in values {
                array.element { value.write(to: &$0) }
            }
        }
    }

    /// Appends an array of strings.
    public mutating func write(strings: [String]) {
        array { array in
            for string in strings {
                array.element { $0.write(string: string) }
            }
        }
    }

    /// Appends an integer in decimal, as `JSONValue(integer)` would be written, without making its
    /// text a `String` first.
    public mutating func write(integer: Int64) {
        // A sign and 19 digits at most (Int64.min).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = integer.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if integer < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Appends a time as its RFC 3339 string, or `null`.
    public mutating func write(_ time: Timestamp?) {
        guard let time else { return append("null") }
        bytes.append(UInt8(ascii: "\""))
        time.appendRFC3339(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends at most `maximumCount` bytes with one capacity check: `initialize` writes them from
    /// the address it is given and returns how many it wrote.
    @inlinable
    mutating func appendBytes(maximumCount: Int, _ initialize: (UnsafeMutablePointer<UInt8>) -> Int) {
        bytes.append(addingCapacity: maximumCount) { span in
            span.withUnsafeMutableBufferPointer { buffer, initializedCount in
                initializedCount = initialize(buffer.baseAddress!)
            }
        }
    }

    private mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}

/// A value that writes its own JSON text into a ``JSONWriter``, without building a ``JSONValue``
/// tree first: the presentations and sessions that every change renders several times.
///
/// The text is the one definition of the form; ``json`` reads the tree back from it.
public protocol JSONWritable {
    func write(to writer: inout JSONWriter)
}

extension JSONWritable {
    /// The compact JSON text in UTF-8.
    public func serialized() -> [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }

    /// The compact JSON text.
    public var jsonText: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// The JSON as a tree, parsed from ``serialized()``; for reading fields, not for output.
    public var json: JSONValue {
        do {
            return try JSONParser.parse(serialized(), limits: .written)
        } catch {
            preconditionFailure("\(Self.self) wrote invalid JSON: \(error)")
        }
    }
}

extension JSONValue {
    /// The compact JSON text of this value in UTF-8, as written by ``JSONWriter``.
    public func serialized() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }

    /// The compact JSON text of this value, as written by ``JSONWriter``.
    public var jsonText: String {
        String(decoding: serialized(), as: UTF8.self)
    }
}

/// Word-at-a-time tests on eight bytes of a string's UTF-8, for skipping ahead over the common
/// case of bytes that need no attention.
enum JSONStringBytes {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether any of the eight bytes is a quote, a backslash or a control character: the bytes a
    /// JSON string must escape.
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        // Classic bit tricks, exact as yes/no answers: (w - ones) & ~w & highBits is nonzero when
        // some byte of w is zero, and (w - n * ones) & ~w & highBits when some byte is below n.
        let controls = (word &- 0x20 &* ones) & ~word
        let quotes = ((word ^ (0x22 &* ones)) &- ones) & ~(word ^ (0x22 &* ones))
        let backslashes = ((word ^ (0x5C &* ones)) &- ones) & ~(word ^ (0x5C &* ones))
        return (controls | quotes | backslashes) & highBits != 0
    }

    /// Whether any byte of `utf8` is one a JSON string must escape.
    static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = utf8.baseAddress else { return false }
        guard utf8.count >= 8 else {
            return utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        }
        var index = 0
        while index + 8 < utf8.count {
            if needsEscape(UnsafeRawPointer(start + index).loadUnaligned(as: UInt64.self)) { return true }
            index += 8
        }
        // The last eight bytes, overlapping the word before if the count is not a multiple of 8.
        return needsEscape(UnsafeRawPointer(start + utf8.count - 8).loadUnaligned(as: UInt64.self))
    }

    /// Whether any of the eight bytes needs escaping or is not ASCII.
    @inline(__always)
    static func needsEscapeOrIsNonASCII(_ word: UInt64) -> Bool {
        word & highBits != 0 || needsEscape(word)
    }
}
