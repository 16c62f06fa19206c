import ModalStackCore
import ModalStackTestSupport
import Testing

/// Parses `bytes` expecting `error`; most tests spell the input as text, these need raw bytes.
private func expectError(
    _ error: JSONParseError, parsing bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(throws: error, sourceLocation: sourceLocation) { try JSONParser.parse(bytes) }
}

private func ascii(_ character: Unicode.Scalar) -> UInt8 {
    UInt8(ascii: character)
}

@Suite("JSON parsing")
struct JSONParserTests {
    @Test func parsesScalars() throws {
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse("false") == .bool(false))
        #expect(try JSONParser.parse("0") == .number("0"))
        #expect(try JSONParser.parse("\"\"") == .string(""))
        #expect(try JSONParser.parse("\"hi\"") == .string("hi"))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse("{}") == .object(JSONObject()))
    }

    @Test func parsesNestedValuesKeepingMemberOrder() throws {
        let value = try JSONParser.parse(#"{"id":"s1","slides":[1,{"note":null}],"flags":{"z":true,"a":false}}"#)
        let expected: JSONValue = [
            "id": "s1",
            "slides": [1, ["note": .null]],
            "flags": ["z": true, "a": false],
        ]
        #expect(value == expected)
        #expect(value.objectValue?.keys == ["id", "slides", "flags"])
        #expect(value["flags"]?.objectValue?.keys == ["z", "a"])
    }

    @Test(arguments: [
        "0", "-0", "7", "123", "-123", "0.5", "-0.0", "10.25", "1e5", "1E+5", "1e-5", "-2.5E-300", "1e400",
        "12345678901234567890", "-9223372036854775809", "1.0000000000000000000001",
    ])
    func keepsNumberTextExactly(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value == .number(text))
        #expect(value.jsonText == text)
    }

    @Test func preservesBigIntegersInDocuments() throws {
        let value = try JSONParser.parse(#"{"id": 12345678901234567890, "ids": [98765432109876543210]}"#)
        #expect(value["id"] == .number("12345678901234567890"))
        #expect(value["ids"] == [.number("98765432109876543210")])
        #expect(value.jsonText == #"{"id":12345678901234567890,"ids":[98765432109876543210]}"#)
    }

    @Test(arguments: [
        ("01", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("-01", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("00", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("1.", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("1.e3", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("1e", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("1e+", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("1.5E", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("-", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("-a", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("-Infinity", JSONParseError(offset: 0, reason: .invalidNumber)),
        ("[1, 02]", JSONParseError(offset: 4, reason: .invalidNumber)),
        ("+1", JSONParseError(offset: 0, reason: .unexpectedByte(ascii("+")))),
        (".5", JSONParseError(offset: 0, reason: .unexpectedByte(ascii(".")))),
        ("NaN", JSONParseError(offset: 0, reason: .unexpectedByte(ascii("N")))),
        ("Infinity", JSONParseError(offset: 0, reason: .unexpectedByte(ascii("I")))),
        ("0x10", JSONParseError(offset: 1, reason: .trailingData)),
        ("[1.5x]", JSONParseError(offset: 4, reason: .unexpectedByte(ascii("x")))),
    ])
    func rejectsInvalidNumbers(text: String, error: JSONParseError) {
        #expect(throws: error) { try JSONParser.parse(text) }
    }

    @Test func acceptsTheFourWhitespaceCharactersAnywhereBetweenTokens() throws {
        let value = try JSONParser.parse(" \t\r\n{ \"a\" :\n[ 1 ,\t2 ] ,\r\n\"b\" : null }\n\t ")
        #expect(value == ["a": [1, 2], "b": .null])
    }

    @Test func rejectsOtherWhitespace() {
        expectError(JSONParseError(offset: 0, reason: .unexpectedByte(0x0C)), parsing: [0x0C, ascii("1")])
        expectError(JSONParseError(offset: 1, reason: .unexpectedByte(0x0B)), parsing: [ascii("["), 0x0B, ascii("]")])
        // U+00A0 no-break space, a well-formed character that is not JSON whitespace.
        expectError(JSONParseError(offset: 0, reason: .unexpectedByte(0xC2)), parsing: [0xC2, 0xA0, ascii("1")])
    }

    @Test func rejectsEmptyInput() {
        #expect(throws: JSONParseError(offset: 0, reason: .emptyInput)) { try JSONParser.parse("") }
        #expect(throws: JSONParseError(offset: 3, reason: .emptyInput)) { try JSONParser.parse(" \n ") }
        expectError(JSONParseError(offset: 0, reason: .emptyInput), parsing: [])
    }

    @Test(arguments: [
        ("1 2", 2), ("{} {}", 3), ("[1]]", 3), ("\"a\"x", 3), ("nullx", 4), ("1 // comment", 2), ("[] \n,", 4),
    ])
    func rejectsTrailingData(text: String, offset: Int) {
        #expect(throws: JSONParseError(offset: offset, reason: .trailingData)) { try JSONParser.parse(text) }
    }

    @Test(
        arguments: [
            ("[1,]", 3, "]"), (#"{"a":1,}"#, 7, "}"), ("[1 2]", 3, "2"), (#"{"a" 1}"#, 5, "1"),
            ("{a:1}", 1, "a"), ("{'a':1}", 1, "'"), ("[,1]", 1, ","), ("/*c*/1", 0, "/"), ("]", 0, "]"),
            ("True", 0, "T"), ("nulx", 3, "x"), ("fals", 4, nil), (#"{"a":1]"#, 6, "]"), ("[1}", 2, "}"),
            (#"{"a":}"#, 5, "}"), ("{,}", 1, ","),
        ] as [(String, Int, Unicode.Scalar?)])
    func rejectsUnexpectedCharacters(text: String, offset: Int, character: Unicode.Scalar?) {
        let reason: JSONParseError.Reason = character.map { .unexpectedByte(UInt8(ascii: $0)) } ?? .unexpectedEnd
        #expect(throws: JSONParseError(offset: offset, reason: reason)) { try JSONParser.parse(text) }
    }

    @Test func rejectsNonASCIICharactersOutsideStrings() {
        #expect(throws: JSONParseError(offset: 1, reason: .unexpectedByte(0xC3))) { try JSONParser.parse("[é]") }
        expectError(JSONParseError(offset: 0, reason: .unexpectedByte(0xEF)), parsing: [0xEF, 0xBB, 0xBF, ascii("1")])
    }

    @Test(arguments: [
        ("[", 1), ("[1", 2), ("[1,", 3), ("{", 1), (#"{"a""#, 4), (#"{"a":"#, 5), (#"{"a":1"#, 6), (#"{"a":1,"#, 7),
        (#""abc"#, 4), ("tru", 3), (#""\"#, 2), (#""\u12"#, 5), (#""\n"#, 3),
    ])
    func rejectsTruncatedDocuments(text: String, offset: Int) {
        #expect(throws: JSONParseError(offset: offset, reason: .unexpectedEnd)) { try JSONParser.parse(text) }
    }

    @Test func failsOnEveryStrictPrefixOfADocument() throws {
        let document = Array(#"{"name":"Déjà vu 😀","n":[1,-2.5e3,true,false,null],"esc":"\u00e9\n"}"#.utf8)
        _ = try JSONParser.parse(document)
        for length in 0..<document.count {
            #expect(throws: JSONParseError.self, "prefix of \(length) bytes") {
                try JSONParser.parse(document[..<length])
            }
        }
    }

    @Test func decodesSimpleEscapes() throws {
        #expect(try JSONParser.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try JSONParser.parse(#""a\nb\tc""#) == .string("a\nb\tc"))
    }

    @Test(arguments: [
        (#"\u0041"#, "A"), (#"\u00e9"#, "é"), (#"\u00E9"#, "é"), (#"\u20ac"#, "€"), (#"\uFFFF"#, "\u{FFFF}"),
        (#"\ud83d\ude00"#, "😀"), (#"\uD83D\uDE00"#, "😀"), (#"\udbff\udfff"#, "\u{10FFFF}"),
        (#"x\u0000y"#, "x\u{0}y"), (#"caf\u00e9 \ud83d\ude00!"#, "café 😀!"),
    ])
    func decodesUnicodeEscapes(escaped: String, decoded: String) throws {
        let value = try JSONParser.parse("\"\(escaped)\"")
        #expect(value == .string(decoded))
        #expect(Array(value.stringValue?.utf8 ?? "".utf8) == Array(decoded.utf8))
    }

    @Test(arguments: [
        (#""\ud83d""#, 1), (#""\ude00""#, 1), (#""\ud83d\u0041""#, 1), (#""\ud83dx""#, 1), (#""ab\ud83d\n""#, 3),
        (#""\ude00\ud83d""#, 1), (#""\ud83d\ud83d""#, 1), (#""\ud83d"#, 1),
    ])
    func rejectsUnpairedSurrogates(text: String, offset: Int) {
        #expect(throws: JSONParseError(offset: offset, reason: .unpairedSurrogate)) { try JSONParser.parse(text) }
    }

    @Test(arguments: [
        (#""\x""#, 1), (#""\U0041""#, 1), (#""\u12G4""#, 1), (#""\'""#, 1), (#""a\u00""#, 2), (#""\ud83d\uZZZZ""#, 7),
        (#""\ ""#, 1), (#"{"k\a":1}"#, 3),
    ])
    func rejectsInvalidEscapes(text: String, offset: Int) {
        #expect(throws: JSONParseError(offset: offset, reason: .invalidEscape)) { try JSONParser.parse(text) }
    }

    @Test(arguments: [("\"a\u{01}b\"", 2), ("\"\n\"", 1), ("\"\t\"", 1), ("\"\\n\u{1F}\"", 3), ("{\"\r\":1}", 2)])
    func rejectsRawControlCharactersInStrings(text: String, offset: Int) {
        #expect(throws: JSONParseError(offset: offset, reason: .controlCharacterInString)) {
            try JSONParser.parse(text)
        }
    }

    @Test func acceptsDeleteCharacterInStrings() throws {
        #expect(try JSONParser.parse("\"\u{7F}\"") == .string("\u{7F}"))
    }

    /// Found by the fuzzer's `json` target: JSONSerialization drops a raw U+FEFF that starts a
    /// string (or key); in JSON it is a character like any other and stays.
    @Test func keepsAByteOrderMarkThatStartsAString() throws {
        let value = try JSONParser.parse(
            [ascii("{"), ascii("\""), 0xEF, 0xBB, 0xBF, ascii("a"), ascii("\"")] + Array(":1}".utf8))
        #expect(value.objectValue?.keys.first?.unicodeScalars.first == "\u{FEFF}")
        #expect(try JSONParser.parse(value.serialized()) == value)
    }

    @Test func handlesNULOnlyAsAnEscape() throws {
        let value = try JSONParser.parse(#""a\u0000b""#)
        #expect(Array(value.stringValue?.utf8 ?? "".utf8) == [ascii("a"), 0, ascii("b")])
        #expect(value.jsonText == #""a\u0000b""#)
        #expect(try JSONParser.parse(value.serialized()) == value)
        expectError(
            JSONParseError(offset: 2, reason: .controlCharacterInString),
            parsing: [ascii("\""), ascii("a"), 0, ascii("\"")])
        expectError(JSONParseError(offset: 1, reason: .unexpectedByte(0)), parsing: [ascii("["), 0, ascii("]")])
    }

    @Test(
        arguments: [
            [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],
            [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80],
        ] as [[UInt8]])
    func acceptsWellFormedUTF8(sequence: [UInt8]) throws {
        let value = try JSONParser.parse([ascii("\"")] + sequence + [ascii("\"")])
        #expect(Array(value.stringValue?.utf8 ?? "".utf8) == sequence)
    }

    @Test(
        arguments: [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80],
            [0xF0, 0x8F, 0xBF, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF], [0xFE], [0x80], [0xBF], [0xC2],
            [0xC2, 0x41],
            [0xE2, 0x82], [0xE2, 0x28, 0xA1], [0xF0, 0x9F, 0x98], [0xF0, 0x9F, 0x41, 0x80],
        ] as [[UInt8]])
    func rejectsMalformedUTF8InStrings(sequence: [UInt8]) {
        let prefix: [UInt8] = [ascii("\""), ascii("a"), ascii("b")]
        expectError(JSONParseError(offset: 3, reason: .invalidUTF8), parsing: prefix + sequence + [ascii("\"")])
        // The same sequence after an escape, where the string is being unescaped.
        let escapedPrefix: [UInt8] = [ascii("\""), ascii("\\"), ascii("n")]
        expectError(JSONParseError(offset: 3, reason: .invalidUTF8), parsing: escapedPrefix + sequence + [ascii("\"")])
    }

    /// The parser skips eight bytes at a time, before and after an escape; a fault must be seen wherever it is.
    @Test(arguments: [[ascii("\"")], [ascii("\""), ascii("\\"), ascii("t")]])
    func findsFaultsAtEveryPositionInLongStrings(opening: [UInt8]) {
        for position in 0..<24 {
            let before = opening + [UInt8](repeating: ascii("a"), count: position)
            let after = [UInt8](repeating: ascii("b"), count: 24 - position) + [ascii("\"")]
            let offset = before.count
            expectError(
                JSONParseError(offset: offset, reason: .controlCharacterInString), parsing: before + [0x1F] + after)
            expectError(JSONParseError(offset: offset, reason: .invalidUTF8), parsing: before + [0xC3, 0x28] + after)
            expectError(
                JSONParseError(offset: offset, reason: .invalidEscape),
                parsing: before + [ascii("\\"), ascii("q")] + after)
            expectError(
                JSONParseError(offset: offset + 1, reason: .trailingData), parsing: before + [ascii("\"")] + after)
        }
    }

    @Test func rejectsMalformedUTF8Anywhere() {
        expectError(JSONParseError(offset: 1, reason: .invalidUTF8), parsing: [ascii("\""), 0xE2, 0x82])
        expectError(JSONParseError(offset: 1, reason: .invalidUTF8), parsing: [ascii("["), 0xFF, ascii("]")])
        expectError(JSONParseError(offset: 1, reason: .invalidUTF8), parsing: [ascii("["), 0xC0, 0x80, ascii("]")])
        expectError(JSONParseError(offset: 0, reason: .invalidUTF8), parsing: [0xED, 0xA0, 0x80])
        expectError(
            JSONParseError(offset: 2, reason: .invalidUTF8),
            parsing: [ascii("{"), ascii("\""), 0xFF, ascii("\""), ascii(":"), ascii("1"), ascii("}")])
    }

    @Test func rejectsDuplicateKeys() {
        #expect(throws: JSONParseError(offset: 7, reason: .duplicateKey("a"))) {
            try JSONParser.parse(#"{"a":1,"a":2}"#)
        }
        #expect(throws: JSONParseError(offset: 13, reason: .duplicateKey("a"))) {
            try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        }
        // Escapes are compared after decoding.
        #expect(throws: JSONParseError(offset: 7, reason: .duplicateKey("a"))) {
            try JSONParser.parse(#"{"a":1,"\u0061":2}"#)
        }
        // Keys compare as Swift strings, like JSONObject lookups: canonically equivalent keys collide.
        #expect(throws: JSONParseError.self) { try JSONParser.parse("{\"\u{E9}\":1,\"e\u{301}\":2}") }
    }

    @Test func allowsTheSameKeyInDifferentObjects() throws {
        let value = try JSONParser.parse(#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#)
        #expect(value["a"]?["a"] == 1)
        #expect(value["b"]?.arrayValue?.count == 2)
    }

    @Test func rejectsDuplicateKeysInLargeObjects() throws {
        let members = (0..<100).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let distinct = try JSONParser.parse("{\(members)}")
        #expect(distinct.objectValue?.keys == (0..<100).map { "k\($0)" })

        for duplicate in [0, 15, 16, 99] {
            let prefix = "{\(members),"
            #expect(throws: JSONParseError(offset: prefix.utf8.count, reason: .duplicateKey("k\(duplicate)"))) {
                try JSONParser.parse(prefix + "\"k\(duplicate)\":0}")
            }
        }
    }

    @Test func parsesObjectsWithManyMembers() throws {
        let members = (0..<20_000).map { "\"key\($0)\":\($0)" }.joined(separator: ",")
        let value = try JSONParser.parse("{\(members)}")
        #expect(value.objectValue?.count == 20_000)
        #expect(value["key19999"] == 19_999)
    }

    @Test func acceptsNestingExactlyAtTheDepthLimit() throws {
        let arrays = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONParser.parse(arrays) }
        let objects = String(repeating: #"{"a":"#, count: 63) + "[1]" + String(repeating: "}", count: 63)
        #expect(throws: Never.self) { try JSONParser.parse(objects) }
    }

    @Test func rejectsNestingBeyondTheDepthLimit() {
        let arrays = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError(offset: 64, reason: .tooDeep(limit: 64))) { try JSONParser.parse(arrays) }
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(throws: JSONParseError(offset: 5 * 64, reason: .tooDeep(limit: 64))) { try JSONParser.parse(objects) }
    }

    @Test func rejectsHugeNestingWithoutExhaustingTheStack() {
        let opening = [UInt8](repeating: ascii("["), count: 100_000)
        expectError(JSONParseError(offset: 64, reason: .tooDeep(limit: 64)), parsing: opening)
        let balanced = opening + [UInt8](repeating: ascii("]"), count: 100_000)
        expectError(JSONParseError(offset: 64, reason: .tooDeep(limit: 64)), parsing: balanced)
    }

    @Test func appliesACustomDepthLimit() throws {
        let flat = JSONParser.Limits(maxDepth: 0)
        #expect(try JSONParser.parse("1", limits: flat) == 1)
        #expect(throws: JSONParseError(offset: 0, reason: .tooDeep(limit: 0))) {
            try JSONParser.parse("[]", limits: flat)
        }
        #expect(throws: JSONParseError(offset: 0, reason: .tooDeep(limit: 0))) {
            try JSONParser.parse("{}", limits: flat)
        }

        let two = JSONParser.Limits(maxDepth: 2)
        #expect(try JSONParser.parse(#"[{"a":1}]"#, limits: two) == [["a": 1]])
        #expect(throws: JSONParseError(offset: 6, reason: .tooDeep(limit: 2))) {
            try JSONParser.parse(#"[{"a":[]}]"#, limits: two)
        }
    }

    @Test func limitsStringLengthInUnescapedUTF8Bytes() throws {
        let limits = JSONParser.Limits(maxStringBytes: 4)
        for accepted in [#""abcd""#, #""éé""#, #""\u00e9\u00e9""#, #""\n\n\n\n""#, #""😀""#, #"{"abcd":"wxyz"}"#] {
            #expect(throws: Never.self, "\(accepted)") { try JSONParser.parse(accepted, limits: limits) }
        }
        let tooLong = JSONParseError.Reason.stringTooLong(limit: 4)
        for (rejected, offset) in [
            (#""abcde""#, 0), (#""ééa""#, 0), (#""\u00e9\u00e9a""#, 0), (#""a😀""#, 0), (#"{"abcde":1}"#, 1),
            (#"[1,"abcde"]"#, 3),
        ] {
            #expect(throws: JSONParseError(offset: offset, reason: tooLong), "\(rejected)") {
                try JSONParser.parse(rejected, limits: limits)
            }
        }
    }

    @Test func limitsNumberLength() throws {
        let limits = JSONParser.Limits(maxNumberLength: 5)
        #expect(try JSONParser.parse("12345", limits: limits) == .number("12345"))
        #expect(try JSONParser.parse("-1.25", limits: limits) == .number("-1.25"))
        #expect(throws: JSONParseError(offset: 0, reason: .numberTooLong(limit: 5))) {
            try JSONParser.parse("123456", limits: limits)
        }
        #expect(throws: JSONParseError(offset: 4, reason: .numberTooLong(limit: 5))) {
            try JSONParser.parse("[0, 1.2345]", limits: limits)
        }

        let sixtyFourDigits = String(repeating: "9", count: 64)
        #expect(try JSONParser.parse(sixtyFourDigits) == .number(sixtyFourDigits))
        #expect(throws: JSONParseError(offset: 0, reason: .numberTooLong(limit: 64))) {
            try JSONParser.parse(sixtyFourDigits + "9")
        }
    }

    @Test func hasDocumentedDefaultLimits() {
        let limits = JSONParser.Limits.default
        #expect(limits.maxDepth == 64)
        #expect(limits.maxStringBytes == 1 << 20)
        #expect(limits.maxNumberLength == 64)
    }

    @Test func parsesEveryKindOfByteCollection() throws {
        let text = #"{"a":[1,"é"]}"#
        let expected: JSONValue = ["a": [1, "é"]]
        #expect(try JSONParser.parse(text) == expected)
        #expect(try JSONParser.parse(text.utf8) == expected)
        #expect(try JSONParser.parse(Array(text.utf8)) == expected)
        #expect(try JSONParser.parse(Array(("  " + text).utf8).dropFirst(2)) == expected)
        // A collection without contiguous storage is copied first.
        #expect(try JSONParser.parse(Array(text.utf8).lazy.map { $0 }) == expected)
    }

    @Test func describesErrorsInASentence() throws {
        let cases: [(JSONParseError, String)] = [
            (JSONParseError(offset: 17, reason: .duplicateKey("a")), #"duplicate key "a" at byte 17"#),
            (JSONParseError(offset: 1, reason: .duplicateKey("q\"\n")), #"duplicate key "q\"\n" at byte 1"#),
            (JSONParseError(offset: 0, reason: .emptyInput), "the document is empty"),
            (JSONParseError(offset: 9, reason: .unexpectedEnd), "unexpected end of input at byte 9"),
            (JSONParseError(offset: 5, reason: .unexpectedByte(ascii("}"))), "unexpected character '}' at byte 5"),
            (JSONParseError(offset: 0, reason: .unexpectedByte(0x0C)), "unexpected byte 0x0C at byte 0"),
            (JSONParseError(offset: 1, reason: .unexpectedByte(0xC3)), "unexpected byte 0xC3 at byte 1"),
            (JSONParseError(offset: 3, reason: .invalidUTF8), "invalid UTF-8 at byte 3"),
            (JSONParseError(offset: 2, reason: .invalidEscape), "invalid escape sequence at byte 2"),
            (
                JSONParseError(offset: 2, reason: .unpairedSurrogate),
                #"unpaired UTF-16 surrogate in \u escape at byte 2"#
            ),
            (JSONParseError(offset: 4, reason: .invalidNumber), "invalid number at byte 4"),
            (
                JSONParseError(offset: 64, reason: .tooDeep(limit: 64)),
                "arrays and objects nested deeper than 64 levels at byte 64"
            ),
            (
                JSONParseError(offset: 3, reason: .stringTooLong(limit: 1_048_576)),
                "string longer than 1048576 bytes at byte 3"
            ),
            (
                JSONParseError(offset: 0, reason: .numberTooLong(limit: 64)),
                "number longer than 64 characters at byte 0"
            ),
            (JSONParseError(offset: 2, reason: .trailingData), "unexpected data after the JSON value at byte 2"),
            (
                JSONParseError(offset: 1, reason: .controlCharacterInString),
                "unescaped control character in string at byte 1"
            ),
        ]
        for (error, sentence) in cases {
            #expect(error.description == sentence)
        }

        let longKey = String(repeating: "k", count: 100)
        let longKeyError = JSONParseError(offset: 0, reason: .duplicateKey(longKey))
        #expect(longKeyError.description == "duplicate key \"\(String(repeating: "k", count: 64))…\" at byte 0")

        let thrown = try #require(throws: JSONParseError.self) { try JSONParser.parse(#"{"a": 1, "a": 2}"#) }
        #expect(thrown.description == #"duplicate key "a" at byte 9"#)
    }
}

@Suite("JSON writing")
struct JSONWriterTests {
    @Test func writesCompactTextInMemberOrder() {
        let value: JSONValue = [
            "id": "s1", "count": 3, "ratio": 0.5, "ok": true, "off": false, "gone": .null, "tags": ["a", "b"],
            "meta": [:],
            "list": [],
        ]
        #expect(
            value.jsonText
                == #"{"id":"s1","count":3,"ratio":0.5,"ok":true,"off":false,"gone":null,"tags":["a","b"],"meta":{},"list":[]}"#
        )
        let reordered: JSONValue = ["z": 1, "a": 2, "m": 3]
        #expect(reordered.jsonText == #"{"z":1,"a":2,"m":3}"#)
    }

    @Test func writesScalars() {
        #expect(JSONValue.null.jsonText == "null")
        #expect(JSONValue.bool(true).jsonText == "true")
        #expect(JSONValue.bool(false).jsonText == "false")
        #expect(JSONValue.string("").jsonText == #""""#)
        #expect(JSONValue(-42).jsonText == "-42")
    }

    @Test func writesNumbersAsTheirText() {
        #expect(JSONValue.number("1E+400").jsonText == "1E+400")
        #expect(JSONValue.number("-0.000").jsonText == "-0.000")
        #expect(JSONValue.number("12345678901234567890").jsonText == "12345678901234567890")
    }

    @Test func escapesOnlyWhatJSONRequires() {
        let value = JSONValue.string("q\"b\\s/é😀\u{08}\u{0C}\n\r\t\u{00}\u{01}\u{1B}\u{1F} \u{7F}")
        #expect(value.jsonText == #""q\"b\\s/é😀\b\f\n\r\t\u0000\u0001\u001b\u001f "# + "\u{7F}\"")
        let key: JSONValue = ["a\"b\n": "\\"]
        #expect(key.jsonText == #"{"a\"b\n":"\\"}"#)
    }

    @Test func escapesAtRunBoundaries() {
        let run = String(repeating: "x", count: 1000)
        let value = JSONValue.string("\n" + run + "\"" + run + "\\")
        #expect(value.jsonText == "\"\\n" + run + "\\\"" + run + "\\\\\"")
    }

    /// The writer and the parser skip eight bytes at a time; a special byte must be seen wherever it is.
    @Test(arguments: [
        ("\"", #"\""#), ("\\", #"\\"#), ("\n", #"\n"#), ("\u{01}", #"\u0001"#), ("é", "é"), ("😀", "😀"),
        ("\u{7F}", "\u{7F}"),
    ])
    func handlesSpecialCharactersAtEveryPosition(character: String, escaped: String) throws {
        for position in 0..<24 {
            let before = String(repeating: "a", count: position)
            let after = String(repeating: "b", count: 24 - position)
            let value = JSONValue.string(before + character + after)
            #expect(value.jsonText == "\"" + before + escaped + after + "\"")
            let parsed = try JSONParser.parse(value.serialized())
            #expect(Array(parsed.stringValue?.utf8 ?? "".utf8) == Array((before + character + after).utf8))
        }
    }

    /// Strings without escapes are found by a check of whole words, the last one overlapping the
    /// word before; shorter strings byte by byte.
    @Test(arguments: [("\"", #"\""#), ("\\", #"\\"#), ("\u{1F}", #"\u001f"#), ("é", "é")])
    func handlesSpecialCharactersInStringsOfEveryLength(character: String, escaped: String) {
        for length in 1...18 {
            for position in 0..<length {
                let before = String(repeating: "a", count: position)
                let after = String(repeating: "b", count: length - position - 1)
                #expect(JSONValue.string(before + character + after).jsonText == "\"" + before + escaped + after + "\"")
            }
            let plain = String(repeating: "c", count: length)
            #expect(JSONValue.string(plain).jsonText == "\"" + plain + "\"")
        }
    }

    @Test func serializedIsTheUTF8OfJSONText() {
        let value: JSONValue = ["name": "Déjà vu 😀", "n": [1, 2.5]]
        #expect(value.serialized() == Array(value.jsonText.utf8))
    }

    @Test func writerAppendsToItsBytes() {
        var writer = JSONWriter(capacity: 8)
        writer.write(1)
        writer.write("a")
        writer.write([.null])
        #expect(writer.bytes == Array(#"1"a"[null]"#.utf8))
    }

    @Test(arguments: [0, 7, -1, 10, -10, 99, 100, 1_234_567_890, Int64.max, Int64.min, Int64.min + 1])
    func writesIntegersAsJSONValueDoes(integer: Int64) {
        var writer = JSONWriter(capacity: 2)
        writer.array { $0.element { $0.write(integer: integer) } }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[\(integer)]")
        #expect(writer.bytes == JSONValue.array([JSONValue(integer)]).serialized())
    }

    @Test(arguments: [0.1, -2.5, 1e-7, 1e300, .leastNonzeroMagnitude, 123_456_789.125, 1e15, 1e16, -0.0])
    func writesDoublesAsParseableNumbers(double: Double) throws {
        let parsed = try JSONParser.parse(JSONValue(double).jsonText)
        #expect(parsed.doubleValue == double)
    }
}

@Suite("JSON writer structure")
struct JSONWriterStructureTests {
    private func text(_ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter(capacity: 0)
        body(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test func writesEmptyObjectsAndArrays() {
        #expect(text { $0.object { _ in } } == "{}")
        #expect(text { $0.array { _ in } } == "[]")
        #expect(
            text { writer in
                writer.object { object in
                    object.object("o") { _ in }
                    object.array("a") { _ in }
                    object.write(membersOf: JSONObject())
                }
            } == #"{"o":{},"a":[]}"#)
        #expect(
            text { writer in
                writer.array { array in
                    array.object { _ in }
                    array.array { _ in }
                }
            } == "[{},[]]")
    }

    @Test func separatesMembersAndElementsWithOneCommaEach() {
        #expect(text { $0.object { $0.write("a", integer: 1) } } == #"{"a":1}"#)
        #expect(
            text { writer in
                writer.object { object in
                    object.write("a", integer: 1)
                    object.write("b", integer: 2)
                    object.write("c", integer: 3)
                }
            } == #"{"a":1,"b":2,"c":3}"#)
        #expect(text { $0.array { $0.element { $0.write(integer: 1) } } } == "[1]")
        #expect(
            text { writer in
                writer.array { array in
                    for number in 1...3 { array.element { $0.write(integer: Int64(number)) } }
                }
            } == "[1,2,3]")
    }

    @Test func nestsObjectsAndArrays() {
        let written = text { writer in
            writer.object { object in
                object.write("id", string: "s1")
                object.object("meta") { meta in
                    meta.write("n", integer: 1)
                    meta.array("deep") { deep in
                        deep.array { inner in
                            inner.element { $0.write(.null) }
                            inner.object { $0.write("x", .bool(true)) }
                        }
                        deep.array { _ in }
                    }
                }
                object.array("list") { list in
                    list.object { $0.write("k", string: "v") }
                    list.object { _ in }
                    list.element { $0.write(string: "e") }
                }
                object.write("last", .bool(false))
            }
        }
        #expect(
            written
                == #"{"id":"s1","meta":{"n":1,"deep":[[null,{"x":true}],[]]},"list":[{"k":"v"},{},"e"],"last":false}"#
        )
    }

    @Test func writesEachTypedMemberAsItsValueWrite() {
        let time = Timestamp(millisecondsSinceEpoch: 1_767_225_600_123)
        let written = text { writer in
            writer.object { object in
                object.write("value", ["n": 1.5])
                object.write("string", string: "q\"\n")
                object.write("integer", integer: -7)
                object.write("time", time)
                object.write("never", nil as Timestamp?)
                object.write("strings", strings: ["a", "b"])
                object.write("none", strings: [])
                object.member("custom") { $0.write(integer: 42) }
            }
        }
        #expect(
            written
                == #"{"value":{"n":1.5},"string":"q\"\n","integer":-7,"time":"2026-01-01T00:00:00.123Z","never":null,"strings":["a","b"],"none":[],"custom":42}"#
        )
    }

    @Test func writesMembersOfAnObjectWithEscapedKeysAfterOtherMembers() {
        let details: JSONObject = ["a\"b": 1, "c": ["d": .null]]
        #expect(text { $0.object { $0.write(membersOf: details) } } == #"{"a\"b":1,"c":{"d":null}}"#)
        #expect(
            text { writer in
                writer.object { object in
                    object.write("type", string: "t")
                    object.write(membersOf: details)
                    object.write("after", integer: 0)
                }
            } == #"{"type":"t","a\"b":1,"c":{"d":null},"after":0}"#)
    }

    @Test func appendsAfterWhatTheWriterHolds() {
        var writer = JSONWriter(capacity: 0)
        writer.write(integer: 1)
        writer.object { $0.write("a", integer: 2) }
        writer.array { $0.element { $0.write(integer: 3) } }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"1{"a":2}[3]"#)
    }

    /// Keys are written with one capacity check each; a buffer that must grow many times keeps
    /// every byte.
    @Test func growsTheBufferAcrossManyMembers() {
        let written = text { writer in
            writer.object { object in
                for index in 0..<500 {
                    object.write("a-rather-long-key-to-make-the-buffer-grow", integer: Int64(index))
                }
            }
        }
        let members = (0..<500).map { #""a-rather-long-key-to-make-the-buffer-grow":\#($0)"# }
        #expect(written == "{" + members.joined(separator: ",") + "}")
    }
}

@Suite("JSON round trips")
struct JSONRoundTripTests {
    @Test(arguments: [
        "null", "[]", "{}", #""""#, "0", "-0.5e-7", "12345678901234567890", #"[1,"two",{"three":[3,null,true,false]}]"#,
        #"{"z":{"y":{"x":[]}},"a":"é€😀","nul":"\u0000","ctl":"\b\f\n\r\t\u0001\u001f","q":"\"\\/"}"#,
        #"{"id":"pres-1","payload":{"slides":[{"title":"Intro","ms":1500}],"theme":null}}"#,
    ])
    func compactTextRoundTripsByteForByte(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value.jsonText == text)
        #expect(try JSONParser.parse(value.serialized()) == value)
    }

    @Test func normalizesOptionalEscapesAndWhitespace() throws {
        let value = try JSONParser.parse(" { \"a\\/b\" : [ \"\\u00e9\\u0041\" , 1 ] } ")
        #expect(value.jsonText == #"{"a/b":["éA",1]}"#)
    }

    @Test func randomValuesRoundTrip() throws {
        var generator = RandomJSON(seed: 0x5EED)
        for _ in 0..<300 {
            let value = generator.value(depth: 0)
            let bytes = value.serialized()
            let parsed = try JSONParser.parse(bytes)
            #expect(parsed == value)
            // Exact bytes too: String equality alone would accept a canonically equivalent string.
            #expect(parsed.serialized() == bytes)
        }
    }
}

/// Generates arbitrary JSON values, strings full of characters that need escaping, from a fixed seed.
private struct RandomJSON {
    private var generator: SeededGenerator

    init(seed: UInt64) {
        generator = SeededGenerator(seed: seed)
    }

    private mutating func below(_ bound: Int) -> Int {
        Int(generator.next() % UInt64(bound))
    }

    private static let characters: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "€", "😀", "\u{10FFFF}",
        "e\u{301}", "\u{FFFF}",
    ]
    private static let numbers = [
        "0", "-0", "42", "-17", "3.25", "1e10", "-2.5E-3", "12345678901234567890", "0.000001",
    ]

    mutating func string() -> String {
        String((0..<below(12)).map { _ in Self.characters[below(Self.characters.count)] }.joined())
    }

    mutating func value(depth: Int) -> JSONValue {
        switch below(depth < 4 ? 7 : 5) {
        case 0: return .null
        case 1: return .bool(below(2) == 0)
        case 2: return .number(Self.numbers[below(Self.numbers.count)])
        case 3, 4: return .string(string())
        case 5: return .array((0..<below(6)).map { _ in value(depth: depth + 1) })
        default:
            var object = JSONObject()
            var keys = Set<String>()
            for _ in 0..<below(6) {
                let key = string()
                if keys.insert(key).inserted {
                    object.append(key, value(depth: depth + 1))
                }
            }
            return .object(object)
        }
    }
}
