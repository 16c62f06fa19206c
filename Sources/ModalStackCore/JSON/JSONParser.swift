/// A strict RFC 8259 JSON parser.
///
/// The input must be exactly one JSON value, optionally surrounded by whitespace (space, tab,
/// line feed, carriage return), encoded as valid UTF-8 with no byte order mark. Everything the RFC
/// leaves out is refused: comments, trailing commas, single quotes, `NaN` and `Infinity`, leading
/// zeros, raw control characters in strings, unpaired surrogates in `\u` escapes. Numbers are kept
/// as their text (see ``JSONValue/number(_:)``).
///
/// Duplicate keys in one object are refused. Keys are compared as Swift strings, that is by
/// canonical equivalence, because that is how ``JSONObject`` looks them up: `"é"` and `"e\u0301"`
/// count as the same key.
///
/// ```swift
/// let value = try JSONParser.parse(#"{"name": "deck", "slides": [1, 2]}"#)
/// ```
public struct JSONParser {
    /// Bounds that keep a hostile document from costing unbounded stack or memory.
    public struct Limits: Sendable {
        /// The deepest nesting of arrays and objects accepted: a scalar has depth 0, `[[1]]` depth 2.
        ///
        /// The parser, the writer and the release of a value each recurse once per level, so keep
        /// this in the hundreds at most.
        public var maxDepth: Int
        /// The longest string accepted, value or key, in UTF-8 bytes after unescaping.
        public var maxStringBytes: Int
        /// The longest number accepted, in characters of its JSON text.
        public var maxNumberLength: Int

        public init(maxDepth: Int = 64, maxStringBytes: Int = 1 << 20, maxNumberLength: Int = 64) {
            self.maxDepth = maxDepth
            self.maxStringBytes = maxStringBytes
            self.maxNumberLength = maxNumberLength
        }

        /// Depth 64, strings up to 1 MiB, numbers up to 64 characters.
        public static let `default` = Limits()

        /// For text this process wrote itself (stored rows, ``JSONWritable/json``): what a client
        /// sent got through `default` already, and nesting it in a stack, a session or a change
        /// adds a few levels.
        public static let written = Limits(
            maxDepth: Limits.default.maxDepth + 16, maxStringBytes: .max, maxNumberLength: .max)
    }

    /// Parses one JSON document from UTF-8 bytes, such as a request body. Inlinable, so that each
    /// caller gets a copy specialized to its collection instead of looking up generic types per call.
    @inlinable
    public static func parse(
        _ bytes: some Collection<UInt8>, limits: Limits = .default
    ) throws(JSONParseError) -> JSONValue {
        let result =
            bytes.withContiguousStorageIfAvailable { buffer in
                Result { () throws(JSONParseError) in try parse(buffer: buffer, limits: limits) }
            }
            ?? Array(bytes).withUnsafeBufferPointer { buffer in
                Result { () throws(JSONParseError) in try parse(buffer: buffer, limits: limits) }
            }
        return try result.get()
    }

    /// Parses one JSON document from its text.
    public static func parse(_ text: String, limits: Limits = .default) throws(JSONParseError) -> JSONValue {
        try parse(text.utf8, limits: limits)
    }

    @usableFromInline
    static func parse(
        buffer: UnsafeBufferPointer<UInt8>, limits: Limits
    ) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(input: buffer, limits: limits)
        return try parser.parseDocument()
    }

    private let input: UnsafeBufferPointer<UInt8>
    private let limits: Limits
    /// The byte being looked at.
    private var offset = 0
    /// The unescaped bytes of the string being read, reused so that escaped strings cost one
    /// allocation per document rather than one each.
    private var scratch: [UInt8] = []

    private init(input: UnsafeBufferPointer<UInt8>, limits: Limits) {
        self.input = input
        self.limits = limits
    }

    private mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard offset < input.count else { throw JSONParseError(offset: offset, reason: .emptyInput) }
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard offset == input.count else { throw JSONParseError(offset: offset, reason: .trailingData) }
        return value
    }

    /// Reads the value starting at `offset`, which is not whitespace; `depth` counts the enclosing
    /// arrays and objects.
    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        switch try currentByte() {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "t"): return try parseLiteral("true", as: .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", as: .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", as: .null)
        default: throw unexpectedByteError()
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= limits.maxDepth else {
            throw JSONParseError(offset: offset, reason: .tooDeep(limit: limits.maxDepth))
        }
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try currentByte() == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try currentByte() {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                offset += 1
                return .array(elements)
            default:
                throw unexpectedByteError()
            }
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= limits.maxDepth else {
            throw JSONParseError(offset: offset, reason: .tooDeep(limit: limits.maxDepth))
        }
        offset += 1
        var object = JSONObject()
        // Small objects are checked for duplicate keys by a linear scan; past this size a set of
        // the keys keeps a hostile object with many members from costing quadratic time.
        let linearScanLimit = 16
        var keySet = Set<String>()
        skipWhitespace()
        if try currentByte() == UInt8(ascii: "}") {
            offset += 1
            return .object(object)
        }
        while true {
            let keyOffset = offset
            guard try currentByte() == UInt8(ascii: "\"") else { throw unexpectedByteError() }
            let key = try parseString()
            let isDuplicate: Bool
            if object.count < linearScanLimit {
                isDuplicate = object.index(forKey: key) != nil
            } else {
                if keySet.isEmpty {
                    keySet = Set(object.keys)
                }
                isDuplicate = !keySet.insert(key).inserted
            }
            guard !isDuplicate else { throw JSONParseError(offset: keyOffset, reason: .duplicateKey(key)) }

            skipWhitespace()
            guard try currentByte() == UInt8(ascii: ":") else { throw unexpectedByteError() }
            offset += 1
            skipWhitespace()
            object.append(key, try parseValue(depth: depth))

            skipWhitespace()
            switch try currentByte() {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                offset += 1
                return .object(object)
            default:
                throw unexpectedByteError()
            }
        }
    }

    /// Reads `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; every fault is reported at
    /// the number's first byte.
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = offset
        let invalid = JSONParseError(offset: start, reason: .invalidNumber)
        if input[offset] == UInt8(ascii: "-") {
            offset += 1
        }
        guard isDigit(at: offset) else { throw invalid }
        if input[offset] == UInt8(ascii: "0") {
            offset += 1
            guard !isDigit(at: offset) else { throw invalid }
        } else {
            skipDigits()
        }
        if offset < input.count, input[offset] == UInt8(ascii: ".") {
            offset += 1
            guard isDigit(at: offset) else { throw invalid }
            skipDigits()
        }
        if offset < input.count, input[offset] == UInt8(ascii: "e") || input[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < input.count, input[offset] == UInt8(ascii: "+") || input[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard isDigit(at: offset) else { throw invalid }
            skipDigits()
        }
        guard offset - start <= limits.maxNumberLength else {
            throw JSONParseError(offset: start, reason: .numberTooLong(limit: limits.maxNumberLength))
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: input[start..<offset]), as: UTF8.self))
    }

    private func isDigit(at index: Int) -> Bool {
        index < input.count && input[index] &- UInt8(ascii: "0") < 10
    }

    private mutating func skipDigits() {
        while isDigit(at: offset) {
            offset += 1
        }
    }

    private mutating func parseLiteral(_ literal: StaticString, as value: JSONValue) throws(JSONParseError) -> JSONValue
    {
        for expected in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard try currentByte() == expected else { throw unexpectedByteError() }
            offset += 1
        }
        return value
    }

    /// Reads the string whose opening quote is at `offset`, leaving `offset` after its closing quote.
    private mutating func parseString() throws(JSONParseError) -> String {
        let quoteOffset = offset
        offset += 1
        let contentStart = offset
        // Most strings have no escapes: validate them in place and decode them in one step.
        while offset < input.count {
            if offset + 8 <= input.count, !JSONStringBytes.needsEscapeOrIsNonASCII(word(at: offset)) {
                offset += 8
                continue
            }
            switch input[offset] {
            case UInt8(ascii: "\""):
                guard offset - contentStart <= limits.maxStringBytes else {
                    throw JSONParseError(offset: quoteOffset, reason: .stringTooLong(limit: limits.maxStringBytes))
                }
                offset += 1
                return String(
                    decoding: UnsafeBufferPointer(rebasing: input[contentStart..<offset - 1]), as: UTF8.self)
            case UInt8(ascii: "\\"):
                return try parseEscapedString(quoteOffset: quoteOffset, contentStart: contentStart)
            case 0..<0x20:
                throw JSONParseError(offset: offset, reason: .controlCharacterInString)
            case 0x20..<0x80:
                offset += 1
            default:
                offset += try utf8SequenceLength()
            }
        }
        throw JSONParseError(offset: offset, reason: .unexpectedEnd)
    }

    /// Continues `parseString` from its first backslash, unescaping into `scratch`.
    private mutating func parseEscapedString(quoteOffset: Int, contentStart: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = contentStart
        while offset < input.count {
            if offset + 8 <= input.count, !JSONStringBytes.needsEscapeOrIsNonASCII(word(at: offset)) {
                offset += 8
                continue
            }
            switch input[offset] {
            case UInt8(ascii: "\""):
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<offset]))
                guard scratch.count <= limits.maxStringBytes else {
                    throw JSONParseError(offset: quoteOffset, reason: .stringTooLong(limit: limits.maxStringBytes))
                }
                offset += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<offset]))
                try appendEscape()
                runStart = offset
            case 0..<0x20:
                throw JSONParseError(offset: offset, reason: .controlCharacterInString)
            case 0x20..<0x80:
                offset += 1
            default:
                offset += try utf8SequenceLength()
            }
        }
        throw JSONParseError(offset: offset, reason: .unexpectedEnd)
    }

    /// Appends to `scratch` the character of the escape sequence starting at `offset`.
    private mutating func appendEscape() throws(JSONParseError) {
        let escapeOffset = offset
        guard offset + 1 < input.count else { throw JSONParseError(offset: input.count, reason: .unexpectedEnd) }
        let code = input[offset + 1]
        offset += 2
        switch code {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(code)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try readHexQuad(escapeOffset: escapeOffset)
            let unpaired = JSONParseError(offset: escapeOffset, reason: .unpairedSurrogate)
            switch unit {
            case 0xD800...0xDBFF:
                guard offset + 1 < input.count, input[offset] == UInt8(ascii: "\\"),
                    input[offset + 1] == UInt8(ascii: "u")
                else { throw unpaired }
                let lowEscapeOffset = offset
                offset += 2
                let low = try readHexQuad(escapeOffset: lowEscapeOffset)
                guard (0xDC00...0xDFFF).contains(low) else { throw unpaired }
                appendUTF8(of: 0x10000 + ((unit - 0xD800) << 10 | (low - 0xDC00)))
            case 0xDC00...0xDFFF:
                throw unpaired
            default:
                appendUTF8(of: unit)
            }
        default:
            throw JSONParseError(offset: escapeOffset, reason: .invalidEscape)
        }
    }

    /// Reads the four hex digits of a `\u` escape starting at `offset`.
    private mutating func readHexQuad(escapeOffset: Int) throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = try currentByte()
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(offset: escapeOffset, reason: .invalidEscape)
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    /// Appends the UTF-8 encoding of a scalar value (never a surrogate) to `scratch`.
    private mutating func appendUTF8(of scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// The length of the well-formed UTF-8 sequence for the non-ASCII character at `offset`,
    /// following table 3-7 of the Unicode standard: no overlong forms, no encoded surrogates,
    /// nothing above U+10FFFF, no truncation.
    private func utf8SequenceLength() throws(JSONParseError) -> Int {
        let length: Int
        var secondByteRange: ClosedRange<UInt8> = 0x80...0xBF
        switch input[offset] {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondByteRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondByteRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondByteRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondByteRange = 0x80...0x8F
        default: throw JSONParseError(offset: offset, reason: .invalidUTF8)
        }
        guard offset + length <= input.count, secondByteRange.contains(input[offset + 1]) else {
            throw JSONParseError(offset: offset, reason: .invalidUTF8)
        }
        for index in offset + 2..<offset + length where input[index] & 0xC0 != 0x80 {
            throw JSONParseError(offset: offset, reason: .invalidUTF8)
        }
        return length
    }

    /// The eight bytes from `index` on, which must all be in the input.
    private func word(at index: Int) -> UInt64 {
        UnsafeRawPointer(input.baseAddress! + index).loadUnaligned(as: UInt64.self)
    }

    private mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): offset += 1
            default: return
            }
        }
    }

    /// The byte at `offset`, or an `unexpectedEnd` error when the input ends there.
    private func currentByte() throws(JSONParseError) -> UInt8 {
        guard offset < input.count else { throw JSONParseError(offset: offset, reason: .unexpectedEnd) }
        return input[offset]
    }

    /// The error for the byte at `offset`, which cannot come where it is.
    private func unexpectedByteError() -> JSONParseError {
        guard offset < input.count else { return JSONParseError(offset: offset, reason: .unexpectedEnd) }
        let byte = input[offset]
        if byte >= 0x80, (try? utf8SequenceLength()) == nil {
            return JSONParseError(offset: offset, reason: .invalidUTF8)
        }
        return JSONParseError(offset: offset, reason: .unexpectedByte(byte))
    }
}

/// Why a document is not acceptable JSON, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// The input is empty or only whitespace.
        case emptyInput
        /// The input ends inside a value.
        case unexpectedEnd
        /// A byte that cannot come where it is (the byte itself is the payload).
        case unexpectedByte(UInt8)
        /// A byte sequence that is not well-formed UTF-8.
        case invalidUTF8
        /// A backslash in a string not followed by one of `"\/bfnrt` or by `u` and four hex digits.
        case invalidEscape
        /// A `\u` escape of a UTF-16 surrogate that is not part of a high-low pair.
        case unpairedSurrogate
        /// A number that does not follow the JSON grammar (leading zero, missing digits, ...).
        case invalidNumber
        /// A second member with the same key in one object.
        case duplicateKey(String)
        /// Arrays and objects nested deeper than the limit.
        case tooDeep(limit: Int)
        /// A string longer than the limit, in UTF-8 bytes after unescaping.
        case stringTooLong(limit: Int)
        /// A number whose text is longer than the limit.
        case numberTooLong(limit: Int)
        /// Something other than whitespace after the document's value.
        case trailingData
        /// A byte below 0x20 written as is inside a string, where it must be escaped.
        case controlCharacterInString
    }

    /// The offset in the input, in bytes, of the fault (for a string or number too long, a
    /// duplicate key and an invalid number: of its first byte; for an escape: of its backslash).
    public let offset: Int
    public let reason: Reason

    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    /// A sentence for API error details, such as `duplicate key "a" at byte 17`.
    public var description: String {
        let position = " at byte \(offset)"
        switch reason {
        case .emptyInput:
            return "the document is empty"
        case .unexpectedEnd:
            return "unexpected end of input" + position
        case .unexpectedByte(let byte) where (0x21..<0x7F).contains(byte):
            return "unexpected character '\(Character(Unicode.Scalar(byte)))'" + position
        case .unexpectedByte(let byte):
            let hex = String(byte, radix: 16, uppercase: true)
            return "unexpected byte 0x\(byte < 0x10 ? "0" : "")\(hex)" + position
        case .invalidUTF8:
            return "invalid UTF-8" + position
        case .invalidEscape:
            return "invalid escape sequence" + position
        case .unpairedSurrogate:
            return "unpaired UTF-16 surrogate in \\u escape" + position
        case .invalidNumber:
            return "invalid number" + position
        case .duplicateKey(let key):
            let shown = key.count > 64 ? String(key.prefix(64)) + "…" : key
            return "duplicate key \(JSONValue.string(shown).jsonText)" + position
        case .tooDeep(let limit):
            return "arrays and objects nested deeper than \(limit) levels" + position
        case .stringTooLong(let limit):
            return "string longer than \(limit) bytes" + position
        case .numberTooLong(let limit):
            return "number longer than \(limit) characters" + position
        case .trailingData:
            return "unexpected data after the JSON value" + position
        case .controlCharacterInString:
            return "unescaped control character in string" + position
        }
    }
}
