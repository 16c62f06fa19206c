/// Any JSON value: a presentation's payload members, a dismiss's result, a payload schema.
///
/// ## Numbers
///
/// A number is an ``integer(_:)`` when it is integral and fits `Int64`, else a ``number(_:)``, so
/// integers come back as they were sent, beyond 2^53 too. Decoding follows what Foundation's
/// `JSONDecoder` reads: `42`, `42.0`, `1e3` and `9007199254740993` are integers (the last one
/// exactly); `0.5`, `1e20` and `9223372036854775808` (past `Int64.max`) are doubles, the last two
/// rounded to the nearest `Double`; `-0` is `.number(-0.0)`, so its sign survives. A number beyond
/// `Double`'s range (`1e400`) cannot be decoded. Encoding writes an integer as its digits, and a
/// double as its shortest decimal, without a trailing `.0`.
///
/// ## Equality
///
/// Values compare as JSON does: objects regardless of member order, and numbers by value, so
/// `.integer(42) == .number(42)`. (The wire cannot tell them apart: `.number(42)` is sent as `42`
/// and comes back `.integer(42)`.) An integer equals a double only when the double is exactly that
/// integer: `.integer(9007199254740993) != .number(9007199254740992)`. Hashing agrees with `==`.
///
/// ## Description
///
/// ``description`` is compact JSON with sorted keys, `{"id":42,"title":"Hi"}`; ``debugDescription``
/// writes a double with its `.0` (`42.0`) so the two kinds of number can be told apart. A
/// ``JSONObject`` is a `Dictionary`, whose description Swift owns: print
/// ``JSONValue/object(_:)`` of it, or its `jsonDescription`, for JSON.
public enum JSONValue: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integral number that fits `Int64`, kept exactly.
    case integer(Int64)
    /// Any other number (or an integral one made as a `Double`); JSON cannot carry NaN or infinities.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; its members have no order.
    case object([String: JSONValue])
}

/// A JSON object, such as a presentation's `payload`.
///
/// Being a `Dictionary`, it prints as one (`["id": 42]`, members in no order); its
/// `jsonDescription` is compact JSON with sorted keys.
public typealias JSONObject = [String: JSONValue]

// MARK: - Equality

extension JSONValue: Hashable {
    /// Whether `lhs` and `rhs` are the same JSON value: numbers compare by value across
    /// ``integer(_:)`` and ``number(_:)``, objects regardless of member order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let lhs), .bool(let rhs)): lhs == rhs
        case (.integer(let lhs), .integer(let rhs)): lhs == rhs
        case (.number(let lhs), .number(let rhs)): lhs == rhs
        case (.integer(let integer), .number(let double)), (.number(let double), .integer(let integer)):
            Int64(exactly: double) == integer
        case (.string(let lhs), .string(let rhs)): lhs == rhs
        case (.array(let lhs), .array(let rhs)): lhs == rhs
        case (.object(let lhs), .object(let rhs)): lhs == rhs
        default: false
        }
    }

    /// Hashes the value so that equal values (`.integer(42)` and `.number(42)`) hash alike.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .integer(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .number(let value):
            hasher.combine(2 as UInt8)
            if let integer = Int64(exactly: value) { hasher.combine(integer) } else { hasher.combine(value) }
        case .string(let value):
            hasher.combine(3 as UInt8)
            hasher.combine(value)
        case .array(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .object(let value):
            hasher.combine(5 as UInt8)
            hasher.combine(value)
        }
    }
}

// MARK: - Coding

extension JSONValue: Codable {
    /// Decodes any JSON value; see the type's notes for which numbers become ``integer(_:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            // Foundation reads `-0` (and an underflowing `1e-400`) as the integer 0: keep a zero's sign.
            if value == 0, let double = try? container.decode(Double.self), double.sign == .minus {
                self = .number(double)
            } else {
                self = .integer(value)
            }
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode(JSONObject.self))
        }
    }

    /// Encodes the value; an integer as its digits. Throws `EncodingError` for a NaN or infinite double.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

// Not ExpressibleByNilLiteral: with `JSONValue?` members, `nil` would mean `.null` in some places.
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `.bool(value)`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `.integer(value)`: `42` is an integer, up to `Int64.max`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// `.number(value)`: `42.0` is a double (equal to the integer `42`).
    public init(floatLiteral value: Double) { self = .number(value) }
    /// `.string(value)`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `.array(elements)`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// `.object` of the members; of a key given twice, the last one wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Reading

extension JSONValue {
    /// The number as an `Int` when it is one exactly (`42` or `42.0`), else `nil`.
    public var intValue: Int? {
        switch self {
        case .integer(let value): Int(exactly: value)
        case .number(let value): Int(exactly: value)
        default: nil
        }
    }

    /// The number as a `Double` (an integer beyond 2^53 rounded to the nearest one), else `nil`.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// The string, else `nil`.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The boolean, else `nil`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The member `key` of an object; `nil` when there is none or this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { object[key] } else { nil }
    }

    /// The element at `index` of an array; `nil` when out of bounds or this is not an array.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let array) = self, array.indices.contains(index) { array[index] } else { nil }
    }
}

// MARK: - Description

extension JSONValue: CustomStringConvertible, CustomDebugStringConvertible {
    /// Compact JSON with sorted keys, as it is sent: `{"id":42,"ratio":0.5,"title":"Hi"}`.
    ///
    /// A NaN or infinite double, which JSON cannot carry, is written `NaN`, `Infinity` or `-Infinity`.
    public var description: String {
        var text = ""
        write(to: &text, keepingPointZero: false)
        return text
    }

    /// Like ``description``, but a double keeps its `.0` (`.number(42)` is `42.0`, `.integer(42)` is `42`).
    public var debugDescription: String {
        var text = ""
        write(to: &text, keepingPointZero: true)
        return text
    }

    /// The kind of value, for messages: `null`, `a boolean`, `a number`, `a string`, `an array`, `an object`.
    var kindPhrase: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    private func write(to text: inout String, keepingPointZero: Bool) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .integer(let value): text += String(value)
        case .number(let value): text += Self.numberText(value, keepingPointZero: keepingPointZero)
        case .string(let value): Self.writeString(value, to: &text)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                element.write(to: &text, keepingPointZero: keepingPointZero)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { text += "," }
                Self.writeString(member.key, to: &text)
                text += ":"
                member.value.write(to: &text, keepingPointZero: keepingPointZero)
            }
            text += "}"
        }
    }

    /// Swift's shortest round-tripping form (`0.1`, `1e+20`), which is what `JSONEncoder` writes,
    /// less a trailing `.0` unless asked to keep it.
    private static func numberText(_ value: Double, keepingPointZero: Bool) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        let text = value.description
        return !keepingPointZero && text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    private static func writeString(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{8}": text += "\\b"
            case "\u{C}": text += "\\f"
            case "\u{0}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16, uppercase: false)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The object as compact JSON with sorted keys, like ``JSONValue/description``:
    /// `{"id":42,"title":"Hi"}`. (A `Dictionary`'s own `description` cannot be replaced.)
    public var jsonDescription: String { JSONValue.object(self).description }
}
