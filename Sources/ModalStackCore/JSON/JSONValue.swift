/// A JSON document, as parsed from a request or built for a response.
///
/// Numbers keep their original text so that a payload round-trips exactly (a 20-digit id stays
/// 20 digits). Objects keep their members in order; the parser refuses duplicate keys, so a key
/// names at most one member.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as its JSON text (validated by the parser, or produced by `init(_: Int)` and friends).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// An ordered JSON object. Lookups are linear: the objects ModalStack handles are small.
public struct JSONObject: Sendable, Hashable {
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var members: [Member]

    public init() {
        members = []
    }

    public init(_ pairs: [(String, JSONValue)]) {
        members = []
        members.reserveCapacity(pairs.count)
        for (key, value) in pairs {
            self[key] = value
        }
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// The position of the member named `key` in ``members``.
    public func index(forKey key: String) -> Int? {
        members.firstIndex { $0.key == key }
    }

    /// Reads a member; setting `nil` removes it, setting a value replaces it in place or appends it.
    public subscript(key: String) -> JSONValue? {
        get {
            index(forKey: key).map { members[$0].value }
        }
        set {
            switch (index(forKey: key), newValue) {
            case (let index?, let value?): members[index].value = value
            case (let index?, nil): members.remove(at: index)
            case (nil, let value?): members.append(Member(key: key, value: value))
            case (nil, nil): break
            }
        }
    }

    /// Appends without looking for an existing key; for builders that know their keys are distinct.
    public mutating func append(_ key: String, _ value: JSONValue) {
        members.append(Member(key: key, value: value))
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// The keys of a literal are distinct (as in a `Dictionary` literal), so members are appended
    /// without the search `init(_:)` makes for each.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init()
        members = elements.map { Member(key: $0.0, value: $0.1) }
        assert(Set(members.map(\.key)).count == members.count, "a JSONObject literal repeats a key")
    }
}

extension JSONValue {
    public init(_ value: Int) { self = .number(String(value)) }
    public init(_ value: Int64) { self = .number(String(value)) }

    /// A finite double as JSON text; non-finite values have no JSON form and become `null`.
    public init(_ value: Double) {
        guard value.isFinite else {
            self = .null
            return
        }
        if value == value.rounded(), abs(value) < 1e15 {
            self = .number(String(Int64(value)))
        } else {
            self = .number(String(value))
        }
    }

    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The number as a Double, when it is a number (huge exponents give ±infinity).
    public var doubleValue: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    /// The number as an Int, when it is an integer that fits (`3`, `3.0` and `3e0` all give 3).
    public var intValue: Int? {
        guard case .number(let text) = self else { return nil }
        if let int = Int(text) { return int }
        guard let double = Double(text), double == double.rounded(),
            double >= -9.007_199_254_740_992e15, double <= 9.007_199_254_740_992e15
        else { return nil }
        return Int(double)
    }

    /// The JSON name of this value's type, for error messages ("expected a string, got an array").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

/// No `ExpressibleByNilLiteral`: `nil` must always mean a missing value, never JSON null.
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self.init(value) }
    public init(floatLiteral value: Double) { self.init(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}
