import Foundation
import ModalStackCore

/// ModalStack's JSON parser, differentially against Foundation's `JSONSerialization`: the same
/// accept or refuse (where ModalStack refuses only by one of its documented rules) and the same
/// values; and what the writer makes of a value parses back to that value.
enum JSONFuzz {
    static func check(_ input: [UInt8]) {
        let ours = Result { () throws(JSONParseError) in try JSONParser.parse(input) }
        let theirs = Result { try JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed]) }
        switch (ours, theirs) {
        case (.success(let value), .success(let foundation)):
            guard same(value, foundation) else {
                finding(
                    "JSONParser and JSONSerialization read different values: \(value) vs \(foundation)", input: input)
            }
            checkRoundTrip(value, input: input)
        case (.success(let value), .failure(let error)):
            guard foundationRefusesByDesign(value) else {
                finding("JSONParser accepts what JSONSerialization refuses (\(error))", input: input)
            }
            checkRoundTrip(value, input: input)
        case (.failure(let error), .success):
            guard refusesByDesign(error, input: input) else {
                finding("JSONParser refuses (\(error)) what JSONSerialization accepts", input: input)
            }
        case (.failure, .failure):
            break
        }
    }

    /// Write the value, parse it again: the same value.
    private static func checkRoundTrip(_ value: JSONValue, input: [UInt8]) {
        var writer = JSONWriter()
        writer.write(value)
        let reparsed = Result { () throws(JSONParseError) in try JSONParser.parse(writer.bytes, limits: .written) }
        guard case .success(let again) = reparsed, again == value else {
            finding(
                "the writer's text \(String(decoding: writer.bytes, as: UTF8.self)) does not parse back", input: input)
        }
    }

    /// ModalStack's own rules, stricter than the RFC allows a parser to be: nesting, string and
    /// number length limits, and keys that must name one member (`"é"` and `"e\u0301"` are one key
    /// to `JSONObject`; Foundation keeps the last of two identical keys). Foundation is also more
    /// lenient than RFC 8259: it reads UTF-16 and UTF-32, skips a byte order mark, and takes a
    /// trailing comma before a closing bracket.
    private static func refusesByDesign(_ error: JSONParseError, input: [UInt8]) -> Bool {
        switch error.reason {
        case .tooDeep, .stringTooLong, .numberTooLong, .duplicateKey:
            return true
        case .unexpectedByte(UInt8(ascii: "}")), .unexpectedByte(UInt8(ascii: "]")):
            let before = input[..<error.offset].last { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            return before == UInt8(ascii: ",") || !isPlainUTF8(input)
        default:
            return !isPlainUTF8(input)
        }
    }

    /// JSONSerialization turns numbers into doubles and refuses one that overflows to infinity.
    private static func foundationRefusesByDesign(_ value: JSONValue) -> Bool {
        switch value {
        case .number(let text): return !(Double(text)?.isFinite ?? false)
        case .array(let elements): return elements.contains(where: foundationRefusesByDesign)
        case .object(let object): return object.members.contains { foundationRefusesByDesign($0.value) }
        default: return false
        }
    }

    /// Not UTF-16/32 and no byte order mark: Foundation sniffs the encoding from the first bytes.
    private static func isPlainUTF8(_ input: [UInt8]) -> Bool {
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { return false }
        return !input.prefix(4).contains(0)
    }

    /// Whether a value from JSONParser is the value Foundation read: numbers compare as the double
    /// both round to, strings by their scalars (not by Swift's canonical equivalence).
    private static func same(_ ours: JSONValue, _ theirs: Any) -> Bool {
        switch ours {
        case .null:
            return theirs is NSNull
        case .bool(let bool):
            guard let number = theirs as? NSNumber, isBoolean(number) else { return false }
            return number.boolValue == bool
        case .number(let text):
            guard let number = theirs as? NSNumber, !isBoolean(number), let double = Double(text) else { return false }
            // Beyond 64-bit integers Foundation reads a Decimal, whose conversion to a double may
            // round differently: compare it as a Decimal.
            if let decimal = number as? NSDecimalNumber { return decimal.decimalValue == Decimal(string: text) }
            return number.doubleValue == double
        case .string(let string):
            guard let other = theirs as? String else { return false }
            return Array(foundationForm(string).unicodeScalars) == Array(foundationForm(other).unicodeScalars)
        case .array(let elements):
            guard let others = theirs as? [Any], others.count == elements.count else { return false }
            return zip(elements, others).allSatisfy { same($0, $1) }
        case .object(let object):
            guard let others = theirs as? [String: Any] else { return false }
            let othersByKey = Dictionary(others.map { (foundationForm($0.key), $0.value) }) { first, _ in first }
            // Keys that differ only by U+FEFF may be one key to Foundation: nothing to compare then.
            guard Set(object.keys.map(foundationForm)).count == object.count, othersByKey.count == others.count else {
                return true
            }
            guard others.count == object.count else { return false }
            return object.members.allSatisfy { member in
                othersByKey[foundationForm(member.key)].map { same(member.value, $0) } ?? false
            }
        }
    }

    /// A string as JSONSerialization reads it: it drops a raw U+FEFF that starts a string, a key,
    /// or a run of text after an escape, as if each were a byte order mark (JSONDecoder keeps them;
    /// RFC 8259 makes U+FEFF a character like any other). So U+FEFF is left out of comparisons;
    /// `JSONParserTests` pins that JSONParser keeps it.
    private static func foundationForm(_ string: String) -> String {
        string.unicodeScalars.contains("\u{FEFF}") ? String(string.unicodeScalars.filter { $0 != "\u{FEFF}" }) : string
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
