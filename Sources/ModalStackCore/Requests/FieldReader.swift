/// Reads the members of a request object, collecting every problem with its JSON pointer so that
/// one answer lists all of them. Members it was not asked about are reported as unknown.
struct FieldReader {
    private let object: JSONObject
    private let pointer: String
    /// Whether each member of `object`, in order, was read.
    private var consumed: [Bool]
    private(set) var errors: [ModalError.FieldError] = []

    /// Fails with a single field error when `value` is not an object.
    init(_ value: JSONValue, at pointer: String) throws(ModalError) {
        guard let object = value.objectValue else {
            throw .validation([.init(pointer: pointer, message: "expected an object, got \(value.typeName)")])
        }
        self.object = object
        self.pointer = pointer
        self.consumed = Array(repeating: false, count: object.count)
    }

    func pointer(to key: String) -> String {
        pointer + "/" + JSONPointer.escape(key)
    }

    mutating func fail(_ key: String, _ message: String) {
        errors.append(.init(pointer: pointer(to: key), message: message))
    }

    /// A problem inside a member, at `suffix` below it (`/2` for the third element of an array).
    mutating func fail(_ key: String, at suffix: String, _ message: String) {
        errors.append(.init(pointer: pointer(to: key) + suffix, message: message))
    }

    /// Takes over the errors a nested reader found.
    mutating func adopt(_ nestedErrors: [ModalError.FieldError]) {
        errors += nestedErrors
    }

    /// A problem with the object as a whole, such as two members that exclude each other.
    mutating func failObject(_ message: String) {
        errors.append(.init(pointer: pointer, message: message))
    }

    /// Whether the object has this member (without marking it read).
    func has(_ key: String) -> Bool {
        object[key] != nil
    }

    /// The raw member, marked as read.
    mutating func value(_ key: String) -> JSONValue? {
        guard let index = object.index(forKey: key) else { return nil }
        consumed[index] = true
        return object.members[index].value
    }

    mutating func string(_ key: String, required: Bool = false) -> String? {
        guard let value = value(key) else {
            if required { fail(key, "is required") }
            return nil
        }
        guard let string = value.stringValue else {
            fail(key, "expected a string, got \(value.typeName)")
            return nil
        }
        return string
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let bool = value.boolValue else {
            fail(key, "expected a boolean, got \(value.typeName)")
            return nil
        }
        return bool
    }

    mutating func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = value(key) else { return nil }
        guard let int = value.intValue else {
            fail(
                key,
                "expected an integer, got \(value.typeName == "number" ? "a fraction or a number too large" : value.typeName)"
            )
            return nil
        }
        guard range.contains(int) else {
            fail(key, "must be between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return int
    }

    /// A finite number within `range`; with `excludingLowerBound`, greater than its lower bound.
    mutating func number(
        _ key: String, required: Bool = false, in range: ClosedRange<Double>, excludingLowerBound: Bool = false
    ) -> Double? {
        guard let value = value(key) else {
            if required { fail(key, "is required") }
            return nil
        }
        guard let number = value.doubleValue, number.isFinite else {
            fail(key, "expected a number, got \(value.typeName)")
            return nil
        }
        guard range.contains(number), !excludingLowerBound || number > range.lowerBound else {
            let lower = Self.text(of: range.lowerBound)
            let upper = Self.text(of: range.upperBound)
            fail(
                key,
                excludingLowerBound
                    ? "must be greater than \(lower) and at most \(upper)" : "must be between \(lower) and \(upper)")
            return nil
        }
        return number
    }

    /// A bound as people write it: `0`, `100`, `0.5`, and a power of ten past a million as `1e15`.
    static func text(of number: Double) -> String {
        guard number == number.rounded(), abs(number) < 1e18 else { return number.description }
        let digits = String(Int64(number))
        let zeros = digits.reversed().prefix { $0 == "0" }.count
        guard zeros >= 6, digits.dropLast(zeros).drop(while: { $0 == "-" }) == "1" else { return digits }
        return digits.dropLast(zeros) + "e\(zeros)"
    }

    /// Human text: see `Identifiers.isValidText`.
    mutating func text(_ key: String, required: Bool = false, maxLength: Int, allowsLineBreaks: Bool = false) -> String?
    {
        guard let text = string(key, required: required) else { return nil }
        guard Identifiers.isValidText(text, maxLength: maxLength, allowsLineBreaks: allowsLineBreaks) else {
            fail(key, "must be 1-\(maxLength) characters without control characters")
            return nil
        }
        return text
    }

    mutating func object(_ key: String) -> JSONObject? {
        guard let value = value(key) else { return nil }
        guard let object = value.objectValue else {
            fail(key, "expected an object, got \(value.typeName)")
            return nil
        }
        return object
    }

    mutating func array(_ key: String, required: Bool = false) -> [JSONValue]? {
        guard let value = value(key) else {
            if required { fail(key, "is required") }
            return nil
        }
        guard let array = value.arrayValue else {
            fail(key, "expected an array, got \(value.typeName)")
            return nil
        }
        return array
    }

    /// Reports members nobody asked for: a typo such as `payLoad` must not pass silently.
    mutating func rejectUnknownMembers() {
        for (member, read) in zip(object.members, consumed) where !read {
            fail(member.key, "is not a known field")
        }
    }
}

/// RFC 6901 JSON pointers.
public enum JSONPointer {
    public static func escape(_ token: String) -> String {
        guard token.contains("~") || token.contains("/") else { return token }
        return token.replacing("~", with: "~0").replacing("/", with: "~1")
    }
}
