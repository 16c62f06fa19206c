/// The declared shape of a destination's payload (its enum case's associated values): a small
/// subset of JSON Schema (draft 2020-12).
///
/// Keywords:
/// - `type`: one of `object`, `array`, `string`, `number`, `integer`, `boolean`, `null`, or a
///   non-empty array of them. `number` matches every number; `integer` matches numbers whose value
///   is whole (`1`, `1.0`, `1e2`).
/// - `properties`: a schema for each named member of an object.
/// - `required`: the names of members an object must have.
/// - `additionalProperties`: for members not in `properties`: `true` (the default) allows them,
///   `false` refuses them, a schema validates them.
/// - `enum`: a non-empty array of the allowed values, compared structurally: objects regardless of
///   member order, numbers by value (`1` equals `1.0`), strings code point for code point.
/// - `minLength`, `maxLength`: a string's length in Unicode scalars (JSON Schema's code points).
/// - `minimum`, `maximum`: inclusive bounds on a number, compared exactly, not as `Double`.
/// - `items`: a schema for every element of an array.
/// - `maxItems`: the most elements an array may have.
/// - `description`: a string for people; validation ignores it, ``json`` keeps it.
///
/// Loading is strict, because a schema that silently allows everything is worse than none: any
/// other keyword is an error (a typo such as `requird`), and so are contradictions — a keyword
/// that cannot apply to the declared `type` (`maxLength` with `"type": "integer"`), `minimum`
/// above `maximum`, `minLength` above `maxLength`, and a `required` member that
/// `additionalProperties: false` refuses.
///
/// ``validate(_:at:)`` reports every violation, each at the JSON pointer of the offending value.
/// A value of the wrong type gets only that complaint: the other keywords either do not apply to
/// it or, like `enum`, would repeat it.
public struct PayloadSchema: Sendable, Hashable {
    /// The schema as written in the catalog, `description` included.
    public let json: JSONValue
    private let rules: Rules

    /// Reads a schema, refusing what this subset does not define.
    /// - Parameters:
    ///   - json: The schema, a JSON object.
    ///   - path: The JSON pointer of `json` in its file, the prefix of every error's path.
    public init(json: JSONValue, path: String) throws(CatalogError) {
        self.json = json
        rules = try Rules(json: json, path: path)
    }

    /// Checks a value against the schema.
    /// - Parameters:
    ///   - value: The value to check, such as a present's payload.
    ///   - pointer: The JSON pointer of `value` in its request body, such as `/payload`.
    /// - Returns: Every violation, empty when the value conforms. An object's come member by
    ///   member in its order, then one for each missing required member.
    public func validate(_ value: JSONValue, at pointer: String) -> [ModalError.FieldError] {
        var errors: [ModalError.FieldError] = []
        validate(value, at: pointer, into: &errors)
        return errors
    }

    /// The schema of an object's member `name`, when `properties` declares it.
    public func property(_ name: String) -> PayloadSchema? {
        rules.properties[name]
    }

    /// The names of the types `type` allows; nil when it is absent (any type).
    public var typeNames: [String]? {
        rules.types?.map(\.rawValue)
    }

    /// Whether an object can conform: `type` is absent or includes `object`.
    var acceptsObjects: Bool {
        rules.types?.contains(.object) ?? true
    }

    // The rules follow from the JSON, so it alone decides equality.
    public static func == (lhs: PayloadSchema, rhs: PayloadSchema) -> Bool {
        lhs.json == rhs.json
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(json)
    }
}

// MARK: - Validation

extension PayloadSchema {
    private func validate(_ value: JSONValue, at pointer: String, into errors: inout [ModalError.FieldError]) {
        func fail(_ message: String) {
            errors.append(ModalError.FieldError(pointer: pointer, message: message))
        }

        if let types = rules.types, !types.contains(where: { $0.matches(value) }) {
            fail("expected \(Self.alternatives(types.map(\.rawValue))), got \(value.typeName)")
            return
        }
        if let allowedValues = rules.allowedValues,
            !allowedValues.contains(where: { $0.isStructurallyEqual(to: value) })
        {
            fail("must be one of \(allowedValues.map(\.jsonText).joined(separator: ", "))")
        }
        switch value {
        case .string(let string):
            let length = string.unicodeScalars.count
            if let minLength = rules.minLength, length < minLength {
                fail("must be at least \(Self.quantity(minLength, "character"))")
            }
            if let maxLength = rules.maxLength, length > maxLength {
                fail("must be at most \(Self.quantity(maxLength, "character"))")
            }
        case .number(let text):
            guard let number = ExactNumber(text) else { break }
            if let minimum = rules.minimum, number < minimum.value {
                fail("must be at least \(minimum.text)")
            }
            if let maximum = rules.maximum, number > maximum.value {
                fail("must be at most \(maximum.text)")
            }
        case .array(let elements):
            if let maxItems = rules.maxItems, elements.count > maxItems {
                fail("must have at most \(Self.quantity(maxItems, "item"))")
            }
            if let items = rules.items {
                for (index, element) in elements.enumerated() {
                    items.validate(element, at: "\(pointer)/\(index)", into: &errors)
                }
            }
        case .object(let object):
            validateMembers(of: object, at: pointer, into: &errors)
        case .null, .bool:
            break
        }
    }

    private func validateMembers(
        of object: JSONObject, at pointer: String, into errors: inout [ModalError.FieldError]
    ) {
        for member in object.members {
            let memberPointer = pointer + "/" + JSONPointer.escape(member.key)
            if let schema = rules.properties[member.key] {
                schema.validate(member.value, at: memberPointer, into: &errors)
                continue
            }
            switch rules.additionalProperties {
            case .allowed:
                break
            case .forbidden:
                errors.append(.init(pointer: memberPointer, message: "is not allowed (additionalProperties is false)"))
            case .schema(let schema):
                schema.validate(member.value, at: memberPointer, into: &errors)
            }
        }
        for name in rules.required where object[name] == nil {
            errors.append(.init(pointer: pointer + "/" + JSONPointer.escape(name), message: "is required"))
        }
    }

    /// `a`, `a or b`, `a, b or c`.
    private static func alternatives(_ names: [String]) -> String {
        guard let last = names.last, names.count > 1 else { return names.joined() }
        return names.dropLast().joined(separator: ", ") + " or " + last
    }

    /// `1 character`, `40 characters`.
    private static func quantity(_ count: Int, _ noun: String) -> String {
        count == 1 ? "1 \(noun)" : "\(count) \(noun)s"
    }
}

// MARK: - Loading

extension PayloadSchema {
    /// The keywords of the subset.
    private enum Keyword: String, CaseIterable {
        case type, properties, required, additionalProperties, `enum`, minLength, maxLength, minimum, maximum, items,
            maxItems, description

        /// The types whose values this keyword constrains; nil when it applies to every value.
        var constrainedTypes: [ValueType]? {
            switch self {
            case .properties, .required, .additionalProperties: [.object]
            case .minLength, .maxLength: [.string]
            case .minimum, .maximum: [.number, .integer]
            case .items, .maxItems: [.array]
            case .type, .enum, .description: nil
            }
        }
    }

    /// The names `type` accepts.
    private enum ValueType: String, CaseIterable {
        case object, array, string, number, integer, boolean, null

        func matches(_ value: JSONValue) -> Bool {
            switch (self, value) {
            case (.object, .object), (.array, .array), (.string, .string), (.number, .number), (.boolean, .bool),
                (.null, .null):
                true
            case (.integer, .number(let text)):
                ExactNumber(text)?.isWhole ?? false
            default:
                false
            }
        }
    }

    private enum AdditionalProperties {
        case allowed
        case forbidden
        case schema(PayloadSchema)
    }

    /// A `minimum` or `maximum`, with its text for messages.
    private struct Bound {
        let text: String
        let value: ExactNumber
    }

    /// The keywords read from ``json``. A class, because a schema holds schemas (`items`) and a
    /// struct cannot contain itself.
    private final class Rules: Sendable {
        let types: [ValueType]?
        let properties: [String: PayloadSchema]
        let required: [String]
        let additionalProperties: AdditionalProperties
        let allowedValues: [JSONValue]?
        let minLength: Int?
        let maxLength: Int?
        let minimum: Bound?
        let maximum: Bound?
        let items: PayloadSchema?
        let maxItems: Int?

        init(json: JSONValue, path: String) throws(CatalogError) {
            guard let object = json.objectValue else {
                throw CatalogError(path: path, message: "expected a schema object, got \(json.typeName)")
            }
            let reader = KeywordReader(object: object, path: path)
            try reader.rejectUnknownKeywords()
            types = try reader.types()
            try reader.checkApplicability(to: types)
            properties = try reader.properties()
            required = try reader.required()
            additionalProperties = try reader.additionalProperties()
            allowedValues = try reader.allowedValues()
            minLength = try reader.nonNegativeInteger(.minLength)
            maxLength = try reader.nonNegativeInteger(.maxLength)
            minimum = try reader.bound(.minimum)
            maximum = try reader.bound(.maximum)
            items = try reader.schema(.items)
            maxItems = try reader.nonNegativeInteger(.maxItems)
            try reader.checkDescription()

            if let minLength, let maxLength, minLength > maxLength {
                throw reader.error(.minLength, "is greater than maxLength (\(maxLength))")
            }
            if let minimum, let maximum, minimum.value > maximum.value {
                throw reader.error(.minimum, "is greater than maximum (\(maximum.text))")
            }
            if case .forbidden = additionalProperties {
                for (index, name) in required.enumerated() where properties[name] == nil {
                    throw reader.error(
                        .required, at: index,
                        "names \(JSONValue.string(name).jsonText), which is not in properties "
                            + "while additionalProperties is false")
                }
            }
        }
    }

    /// Reads the keywords of one schema object, throwing at the first fault with its path.
    private struct KeywordReader {
        let object: JSONObject
        let path: String

        func error(_ keyword: Keyword, at index: Int? = nil, _ message: String) -> CatalogError {
            let indexPath = index.map { "/\($0)" } ?? ""
            return CatalogError(path: "\(path)/\(keyword.rawValue)\(indexPath)", message: message)
        }

        func rejectUnknownKeywords() throws(CatalogError) {
            for key in object.keys where Keyword(rawValue: key) == nil {
                let known = Keyword.allCases.map(\.rawValue).joined(separator: ", ")
                throw CatalogError(
                    path: path + "/" + JSONPointer.escape(key),
                    message: "unknown keyword \(JSONValue.string(key).jsonText); known keywords: \(known)")
            }
        }

        func types() throws(CatalogError) -> [ValueType]? {
            switch object[Keyword.type.rawValue] {
            case nil:
                return nil
            case .string(let name)?:
                return [try valueType(name, at: nil)]
            case .array(let names)? where !names.isEmpty:
                var types: [ValueType] = []
                for (index, name) in names.enumerated() {
                    guard let name = name.stringValue else {
                        throw error(.type, at: index, "expected a string, got \(name.typeName)")
                    }
                    let type = try valueType(name, at: index)
                    guard !types.contains(type) else {
                        throw error(.type, at: index, "duplicate type \"\(name)\"")
                    }
                    types.append(type)
                }
                return types
            case let other?:
                throw error(.type, "expected a type name or a non-empty array of them, got \(other.typeName)")
            }
        }

        private func valueType(_ name: String, at index: Int?) throws(CatalogError) -> ValueType {
            guard let type = ValueType(rawValue: name) else {
                let known = ValueType.allCases.map(\.rawValue).joined(separator: ", ")
                throw error(.type, at: index, "unknown type \(JSONValue.string(name).jsonText); known types: \(known)")
            }
            return type
        }

        /// Refuses a keyword that no value of the declared types could meet or break.
        func checkApplicability(to types: [ValueType]?) throws(CatalogError) {
            guard let types else { return }
            for keyword in Keyword.allCases where object[keyword.rawValue] != nil {
                guard let constrained = keyword.constrainedTypes,
                    !types.contains(where: { constrained.contains($0) })
                else { continue }
                let declared = PayloadSchema.alternatives(types.map(\.rawValue))
                let applicable = constrained.map(\.rawValue).joined(separator: " and ")
                throw error(
                    keyword,
                    "cannot apply: type is \(declared), and \(keyword.rawValue) constrains only \(applicable) values")
            }
        }

        func properties() throws(CatalogError) -> [String: PayloadSchema] {
            guard let value = object[Keyword.properties.rawValue] else { return [:] }
            guard let members = value.objectValue else {
                throw error(.properties, "expected an object of schemas, got \(value.typeName)")
            }
            var properties: [String: PayloadSchema] = [:]
            for member in members.members {
                let memberPath = "\(path)/\(Keyword.properties.rawValue)/\(JSONPointer.escape(member.key))"
                properties[member.key] = try PayloadSchema(json: member.value, path: memberPath)
            }
            return properties
        }

        func required() throws(CatalogError) -> [String] {
            guard let value = object[Keyword.required.rawValue] else { return [] }
            guard let elements = value.arrayValue else {
                throw error(.required, "expected an array of member names, got \(value.typeName)")
            }
            var names: [String] = []
            for (index, element) in elements.enumerated() {
                guard let name = element.stringValue else {
                    throw error(.required, at: index, "expected a string, got \(element.typeName)")
                }
                guard !names.contains(name) else {
                    throw error(.required, at: index, "duplicate name \(JSONValue.string(name).jsonText)")
                }
                names.append(name)
            }
            return names
        }

        func additionalProperties() throws(CatalogError) -> AdditionalProperties {
            switch object[Keyword.additionalProperties.rawValue] {
            case nil, .bool(true)?: .allowed
            case .bool(false)?: .forbidden
            case let schema?:
                .schema(try PayloadSchema(json: schema, path: "\(path)/\(Keyword.additionalProperties.rawValue)"))
            }
        }

        func allowedValues() throws(CatalogError) -> [JSONValue]? {
            guard let value = object[Keyword.enum.rawValue] else { return nil }
            guard let values = value.arrayValue else {
                throw error(.enum, "expected an array of values, got \(value.typeName)")
            }
            guard !values.isEmpty else { throw error(.enum, "must list at least one value") }
            return values
        }

        func nonNegativeInteger(_ keyword: Keyword) throws(CatalogError) -> Int? {
            guard let value = object[keyword.rawValue] else { return nil }
            guard let count = value.intValue, count >= 0 else {
                throw error(keyword, "expected a non-negative integer, got \(Self.shown(value))")
            }
            return count
        }

        func bound(_ keyword: Keyword) throws(CatalogError) -> Bound? {
            guard let value = object[keyword.rawValue] else { return nil }
            guard case .number(let text) = value, let number = ExactNumber(text) else {
                throw error(keyword, "expected a number, got \(value.typeName)")
            }
            return Bound(text: text, value: number)
        }

        func schema(_ keyword: Keyword) throws(CatalogError) -> PayloadSchema? {
            guard let value = object[keyword.rawValue] else { return nil }
            return try PayloadSchema(json: value, path: "\(path)/\(keyword.rawValue)")
        }

        func checkDescription() throws(CatalogError) {
            guard let value = object[Keyword.description.rawValue], value.stringValue == nil else { return }
            throw error(.description, "expected a string, got \(value.typeName)")
        }

        /// A number as written, anything else by its type name.
        private static func shown(_ value: JSONValue) -> String {
            if case .number(let text) = value { return text }
            return value.typeName
        }
    }
}

// MARK: - Comparing values

extension JSONValue {
    /// JSON Schema's equality, for `enum`: objects regardless of member order, numbers by value,
    /// strings code point for code point.
    fileprivate func isStructurallyEqual(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null):
            return true
        case (.bool(let lhs), .bool(let rhs)):
            return lhs == rhs
        case (.number(let lhs), .number(let rhs)):
            guard let lhsNumber = ExactNumber(lhs), let rhsNumber = ExactNumber(rhs) else { return lhs == rhs }
            return lhsNumber == rhsNumber
        case (.string(let lhs), .string(let rhs)):
            // Swift's == would also match canonically equivalent strings ("é" and "e\u{301}").
            return lhs.unicodeScalars.elementsEqual(rhs.unicodeScalars)
        case (.array(let lhs), .array(let rhs)):
            return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.isStructurallyEqual(to: $1) }
        case (.object(let lhs), .object(let rhs)):
            return lhs.count == rhs.count
                && lhs.members.allSatisfy { member in
                    rhs[member.key].map { member.value.isStructurallyEqual(to: $0) } ?? false
                }
        default:
            return false
        }
    }
}

/// The exact value of a JSON number's text, so that numbers compare by value (`1`, `1.0` and
/// `10e-1` are equal) without the rounding of `Double`, which cannot tell 2^53 from 2^53 + 1.
///
/// Exponents are clamped to ±10^9: numbers that differ only beyond that compare equal, a
/// compromise no real payload meets.
private struct ExactNumber: Comparable {
    private static let exponentLimit = 1_000_000_000

    /// -1, 0 or 1.
    private let sign: Int
    /// The significant digits (each 0-9), without leading or trailing zeros; empty for zero.
    private let digits: [UInt8]
    /// The value is 0.d₁d₂d₃… × 10^pointPosition; 0 for zero.
    private let pointPosition: Int

    /// Reads the JSON number grammar, `-? digits (. digits)? ([eE] [+-]? digits)?`; nil when `text`
    /// does not follow it.
    init?(_ text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func readDigits() -> [UInt8] {
            let start = index
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                index += 1
            }
            return bytes[start..<index].map { $0 - UInt8(ascii: "0") }
        }

        let isNegative = bytes.first == UInt8(ascii: "-")
        if isNegative {
            index += 1
        }
        let integerDigits = readDigits()
        guard !integerDigits.isEmpty else { return nil }
        var fractionDigits: [UInt8] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fractionDigits = readDigits()
            guard !fractionDigits.isEmpty else { return nil }
        }
        var exponent = 0
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            let isExponentNegative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                index += 1
            }
            let exponentDigits = readDigits()
            guard !exponentDigits.isEmpty else { return nil }
            for digit in exponentDigits {
                exponent = min(exponent * 10 + Int(digit), Self.exponentLimit)
            }
            if isExponentNegative {
                exponent = -exponent
            }
        }
        guard index == bytes.count else { return nil }

        var digits = integerDigits + fractionDigits
        let leadingZeros = digits.prefix { $0 == 0 }.count
        digits.removeFirst(leadingZeros)
        while digits.last == 0 {
            digits.removeLast()
        }
        self.digits = digits
        if digits.isEmpty {
            sign = 0
            pointPosition = 0
        } else {
            sign = isNegative ? -1 : 1
            pointPosition = integerDigits.count - leadingZeros + exponent
        }
    }

    /// Whether the value has no fractional part.
    var isWhole: Bool {
        pointPosition >= digits.count
    }

    static func < (lhs: ExactNumber, rhs: ExactNumber) -> Bool {
        guard lhs.sign == rhs.sign else { return lhs.sign < rhs.sign }
        return lhs.sign < 0 ? hasSmallerMagnitude(rhs, than: lhs) : hasSmallerMagnitude(lhs, than: rhs)
    }

    private static func hasSmallerMagnitude(_ lhs: ExactNumber, than rhs: ExactNumber) -> Bool {
        guard lhs.pointPosition == rhs.pointPosition else { return lhs.pointPosition < rhs.pointPosition }
        return lhs.digits.lexicographicallyPrecedes(rhs.digits)
    }
}
