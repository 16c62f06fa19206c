import ModalStackCore
import Testing

@Suite("Payload schema")
struct PayloadSchemaTests {
    /// The violations of `value` against `schema` (both JSON text), with the value at `/payload`.
    private func violations(_ schema: String, _ value: String) throws -> [ModalError.FieldError] {
        let schema = try PayloadSchema(json: try JSONParser.parse(schema), path: "")
        return schema.validate(try JSONParser.parse(value), at: "/payload")
    }

    /// The error loading `schema` (JSON text) as if it were at `/s` in a catalog file.
    private func loadError(_ schema: String) throws -> CatalogError {
        let json = try JSONParser.parse(schema)
        return try #require(throws: CatalogError.self) { try PayloadSchema(json: json, path: "/s") }
    }

    private func loads(_ schema: String) throws -> Bool {
        let json = try JSONParser.parse(schema)
        return (try? PayloadSchema(json: json, path: "/s")) != nil
    }

    // MARK: - type

    @Test(
        "type: each name accepts its values and refuses the others",
        arguments: [
            ("object", [#"{}"#, #"{"a":1}"#], ["[]", "null"]),
            ("array", ["[]", "[1]"], ["{}", #""[]""#]),
            ("string", [#""""#, #""a""#], ["1", "null"]),
            ("number", ["1", "-1.5", "1e300", "0"], [#""1""#, "true"]),
            ("integer", ["1", "1.0", "-0", "1e2", "2.5e1", "12345678901234567890123"], ["1.5", "1e-1", #""1""#]),
            ("boolean", ["true", "false"], ["0", "null"]),
            ("null", ["null"], ["false", "{}"]),
        ])
    func typeNames(type: String, accepted: [String], refused: [String]) throws {
        let schema = #"{"type": "\#(type)"}"#
        for value in accepted {
            #expect(try violations(schema, value) == [], "\(value) should be \(type)")
        }
        for value in refused {
            let typeName = try JSONParser.parse(value).typeName
            #expect(
                try violations(schema, value) == [
                    .init(pointer: "/payload", message: "expected \(type), got \(typeName)")
                ])
        }
    }

    @Test("type: an array of names accepts any of them and lists them when refusing")
    func typeArrays() throws {
        #expect(try violations(#"{"type": ["string", "null"]}"#, #""a""#) == [])
        #expect(try violations(#"{"type": ["string", "null"]}"#, "null") == [])
        #expect(
            try violations(#"{"type": ["string", "null"]}"#, "1")
                == [.init(pointer: "/payload", message: "expected string or null, got number")])
        #expect(
            try violations(#"{"type": ["string", "number", "null"]}"#, "true")
                == [.init(pointer: "/payload", message: "expected string, number or null, got boolean")])
    }

    @Test("a value of the wrong type gets only the type complaint")
    func typeMismatchIsTheOnlyComplaint() throws {
        #expect(
            try violations(#"{"type": "string", "enum": ["abcd"], "minLength": 3}"#, "5")
                == [.init(pointer: "/payload", message: "expected string, got number")])
    }

    // MARK: - objects

    @Test("properties: each member is checked by its schema, at its pointer, escaped")
    func properties() throws {
        let schema = #"""
            {"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}}}}
            }}
            """#
        let longName = String(repeating: "x", count: 41)
        let value = #"{"items": [{"name": "ok"}, {"name": "fine"}, {"name": "\#(longName)"}]}"#
        #expect(
            try violations(schema, value) == [
                .init(pointer: "/payload/items/2/name", message: "must be at most 40 characters")
            ])

        let escaped = #"{"properties": {"a/b": {"type": "string"}, "c~d": {"type": "string"}}}"#
        #expect(
            try violations(escaped, #"{"a/b": 1, "c~d": 2, "other": 3}"#) == [
                .init(pointer: "/payload/a~1b", message: "expected string, got number"),
                .init(pointer: "/payload/c~0d", message: "expected string, got number"),
            ])
        #expect(try violations(escaped, #"{"a/b": "x"}"#) == [])
    }

    @Test("required: every missing member is reported")
    func required() throws {
        let schema = #"{"required": ["a", "b", "c/d"]}"#
        #expect(
            try violations(schema, #"{"b": 1}"#) == [
                .init(pointer: "/payload/a", message: "is required"),
                .init(pointer: "/payload/c~1d", message: "is required"),
            ])
        #expect(try violations(schema, #"{"a": null, "b": 1, "c/d": false}"#) == [])
    }

    @Test("additionalProperties: false refuses every extra member, a schema checks them, true allows them")
    func additionalProperties() throws {
        let closed = #"{"properties": {"a": {}}, "additionalProperties": false}"#
        #expect(
            try violations(closed, #"{"x": 1, "a": 2, "y": 3}"#) == [
                .init(pointer: "/payload/x", message: "is not allowed (additionalProperties is false)"),
                .init(pointer: "/payload/y", message: "is not allowed (additionalProperties is false)"),
            ])
        #expect(try violations(closed, #"{"a": [1, {}]}"#) == [])

        let typed = #"{"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}"#
        #expect(
            try violations(typed, #"{"a": "s", "x": 1, "y": "no"}"#) == [
                .init(pointer: "/payload/y", message: "expected integer, got string")
            ])

        #expect(try violations(#"{"additionalProperties": true}"#, #"{"x": 1}"#) == [])
        #expect(try violations(#"{}"#, #"{"x": 1}"#) == [])
    }

    // MARK: - enum

    @Test("enum: lists the allowed values when refusing")
    func enumMessage() throws {
        #expect(
            try violations(#"{"enum": ["a", "b"]}"#, #""c""#) == [
                .init(pointer: "/payload", message: #"must be one of "a", "b""#)
            ])
        #expect(try violations(#"{"enum": ["a", "b"]}"#, #""b""#) == [])
    }

    @Test("enum: values compare structurally, numbers by value")
    func enumEquality() throws {
        let schema = #"{"enum": [1, "two", null, true, [1, 2], {"k": "v", "n": 0}]}"#
        for accepted in [
            "1", "1.0", "10e-1", #""two""#, "null", "true", "[1, 2]", "[1.0, 2e0]", #"{"n": 0.0, "k": "v"}"#,
        ] {
            #expect(try violations(schema, accepted) == [], "\(accepted) should be allowed")
        }
        let message = #"must be one of 1, "two", null, true, [1,2], {"k":"v","n":0}"#
        for refused in [
            #""1""#, "false", "0", "[2, 1]", "[1]", #"{"k": "v"}"#, #"{"k": "v", "n": 0, "x": 1}"#, #""Two""#, "{}",
        ] {
            #expect(try violations(schema, refused) == [.init(pointer: "/payload", message: message)], "\(refused)")
        }
    }

    @Test("enum: integers beyond 2^53 and strings differing only in normalization stay distinct")
    func enumExactness() throws {
        #expect(try violations(#"{"enum": [9007199254740993]}"#, "9007199254740992").count == 1)
        #expect(try violations(#"{"enum": [9007199254740993]}"#, "9007199254740993.000") == [])
        #expect(try violations(#"{"enum": ["\u00e9"]}"#, #""e\u0301""#).count == 1)
        #expect(try violations(#"{"enum": ["\u00e9"]}"#, #""é""#) == [])
    }

    // MARK: - strings

    @Test("minLength and maxLength count Unicode scalars")
    func lengths() throws {
        let schema = #"{"minLength": 2, "maxLength": 3}"#
        #expect(try violations(schema, #""ab""#) == [])
        #expect(try violations(schema, #""abc""#) == [])
        #expect(
            try violations(schema, #""a""#) == [.init(pointer: "/payload", message: "must be at least 2 characters")])
        #expect(
            try violations(schema, #""abcd""#) == [.init(pointer: "/payload", message: "must be at most 3 characters")])
        // One character, two scalars.
        #expect(try violations(schema, #""e\u0301""#) == [])
        // One scalar, two UTF-16 code units.
        #expect(try violations(#"{"maxLength": 1}"#, #""😀""#) == [])
        #expect(
            try violations(#"{"maxLength": 1}"#, #""👍🏽""#) == [
                .init(pointer: "/payload", message: "must be at most 1 character")
            ])
        #expect(
            try violations(#"{"minLength": 1}"#, #""""#) == [
                .init(pointer: "/payload", message: "must be at least 1 character")
            ])
        #expect(try violations(schema, "12345") == [])
    }

    // MARK: - numbers

    @Test("minimum and maximum are inclusive")
    func bounds() throws {
        let schema = #"{"minimum": 0, "maximum": 1}"#
        for accepted in ["0", "1", "0.5", "1.0", "1e0", "0e5", "-0", "100e-2"] {
            #expect(try violations(schema, accepted) == [], "\(accepted)")
        }
        #expect(try violations(schema, "-0.001") == [.init(pointer: "/payload", message: "must be at least 0")])
        #expect(try violations(schema, "2") == [.init(pointer: "/payload", message: "must be at most 1")])
        #expect(try violations(schema, "1e1") == [.init(pointer: "/payload", message: "must be at most 1")])
        #expect(try violations(schema, #""2""#) == [])
    }

    @Test("minimum and maximum compare exactly, negatives and fractions included")
    func exactBounds() throws {
        #expect(try violations(#"{"maximum": 1}"#, "1.0000000000000000001").count == 1)
        #expect(try violations(#"{"maximum": 9007199254740992}"#, "9007199254740993").count == 1)
        #expect(try violations(#"{"minimum": 0.1}"#, "0.09999999999999999999").count == 1)
        let negative = #"{"minimum": -2.5, "maximum": -1e-1}"#
        #expect(try violations(negative, "-2.5") == [])
        #expect(try violations(negative, "-0.1") == [])
        #expect(try violations(negative, "-2.6") == [.init(pointer: "/payload", message: "must be at least -2.5")])
        #expect(try violations(negative, "-0.05") == [.init(pointer: "/payload", message: "must be at most -1e-1")])
        #expect(try violations(negative, "0") == [.init(pointer: "/payload", message: "must be at most -1e-1")])
    }

    // MARK: - arrays

    @Test("items checks every element at its index; maxItems bounds the count")
    func arrays() throws {
        let schema = #"{"items": {"type": "string"}, "maxItems": 2}"#
        #expect(try violations(schema, #"["a", "b"]"#) == [])
        #expect(
            try violations(schema, #"["a", 1, true]"#) == [
                .init(pointer: "/payload", message: "must have at most 2 items"),
                .init(pointer: "/payload/1", message: "expected string, got number"),
                .init(pointer: "/payload/2", message: "expected string, got boolean"),
            ])
        #expect(
            try violations(#"{"maxItems": 1}"#, "[1, 2]") == [
                .init(pointer: "/payload", message: "must have at most 1 item")
            ])
        #expect(try violations(#"{"maxItems": 0}"#, "[]") == [])
    }

    // MARK: - everything at once

    @Test("every violation is reported, each at its pointer")
    func allViolations() throws {
        let schema = #"""
            {
              "type": "object",
              "description": "A card",
              "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": 5},
                "count": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "maxItems": 2, "items": {"enum": ["a", "b"]}},
                "mode": {"enum": ["x", "y"]},
                "id": {"type": "string"}
              },
              "required": ["title", "count", "id"],
              "additionalProperties": false
            }
            """#
        let value = #"{"title": "toolong", "count": 0.5, "tags": ["a", "c", "b"], "mode": "z", "extra": 1}"#
        #expect(
            try violations(schema, value) == [
                .init(pointer: "/payload/title", message: "must be at most 5 characters"),
                .init(pointer: "/payload/count", message: "expected integer, got number"),
                .init(pointer: "/payload/tags", message: "must have at most 2 items"),
                .init(pointer: "/payload/tags/1", message: #"must be one of "a", "b""#),
                .init(pointer: "/payload/mode", message: #"must be one of "x", "y""#),
                .init(pointer: "/payload/extra", message: "is not allowed (additionalProperties is false)"),
                .init(pointer: "/payload/id", message: "is required"),
            ])
        #expect(try violations(schema, #"{"title": "ok", "count": 3, "tags": ["b"], "mode": "x", "id": "7"}"#) == [])
    }

    @Test("description is ignored by validation and kept in json; equality follows the json")
    func descriptionAndEquality() throws {
        let json = try JSONParser.parse(#"{"description": "Any text", "type": "string"}"#)
        let schema = try PayloadSchema(json: json, path: "/a")
        #expect(schema.json == json)
        #expect(schema.validate("x", at: "") == [])
        #expect(schema == (try PayloadSchema(json: json, path: "/b")))
        let other = try PayloadSchema(
            json: try JSONParser.parse(#"{"description": "Other", "type": "string"}"#), path: "/a")
        #expect(schema != other)
        #expect(Set([schema, other, schema]).count == 2)
    }

    // MARK: - load errors

    @Test("an unknown keyword is refused at its path, listing the known ones")
    func unknownKeyword() throws {
        let error = try loadError(#"{"type": "object", "requird": ["a"]}"#)
        #expect(error.path == "/s/requird")
        #expect(
            error.message
                == #"unknown keyword "requird"; known keywords: type, properties, required, additionalProperties, enum, "#
                + "minLength, maxLength, minimum, maximum, items, maxItems, description")
        #expect(try loadError(#"{"properties": {"a/b": {"maxLenght": 3}}}"#).path == "/s/properties/a~1b/maxLenght")
        #expect(try loadError(#"{"$schema": "https://json-schema.org/draft/2020-12/schema"}"#).path == "/s/$schema")
    }

    @Test(
        "each malformed keyword is refused at its path",
        arguments: [
            (#""string""#, "/s", "expected a schema object, got string"),
            ("true", "/s", "expected a schema object, got boolean"),
            (
                #"{"type": "strin"}"#, "/s/type",
                #"unknown type "strin"; known types: object, array, string, number, integer, boolean, null"#
            ),
            (
                #"{"type": ["string", "strin"]}"#, "/s/type/1",
                #"unknown type "strin"; known types: object, array, string, number, integer, boolean, null"#
            ),
            (#"{"type": []}"#, "/s/type", "expected a type name or a non-empty array of them, got array"),
            (#"{"type": 1}"#, "/s/type", "expected a type name or a non-empty array of them, got number"),
            (#"{"type": [1]}"#, "/s/type/0", "expected a string, got number"),
            (#"{"type": ["string", "string"]}"#, "/s/type/1", #"duplicate type "string""#),
            (#"{"properties": []}"#, "/s/properties", "expected an object of schemas, got array"),
            (#"{"properties": {"a": 1}}"#, "/s/properties/a", "expected a schema object, got number"),
            (#"{"required": "a"}"#, "/s/required", "expected an array of member names, got string"),
            (#"{"required": ["a", 1]}"#, "/s/required/1", "expected a string, got number"),
            (#"{"required": ["a", "a"]}"#, "/s/required/1", #"duplicate name "a""#),
            (#"{"additionalProperties": "no"}"#, "/s/additionalProperties", "expected a schema object, got string"),
            (
                #"{"additionalProperties": {"type": "nope"}}"#, "/s/additionalProperties/type",
                #"unknown type "nope"; known types: object, array, string, number, integer, boolean, null"#
            ),
            (#"{"enum": "a"}"#, "/s/enum", "expected an array of values, got string"),
            (#"{"enum": []}"#, "/s/enum", "must list at least one value"),
            (#"{"minLength": -1}"#, "/s/minLength", "expected a non-negative integer, got -1"),
            (#"{"maxLength": 1.5}"#, "/s/maxLength", "expected a non-negative integer, got 1.5"),
            (#"{"maxItems": "3"}"#, "/s/maxItems", "expected a non-negative integer, got string"),
            (#"{"minimum": "0"}"#, "/s/minimum", "expected a number, got string"),
            (#"{"maximum": null}"#, "/s/maximum", "expected a number, got null"),
            (#"{"items": [{"type": "string"}]}"#, "/s/items", "expected a schema object, got array"),
            (
                #"{"items": {"type": "strng"}}"#, "/s/items/type",
                #"unknown type "strng"; known types: object, array, string, number, integer, boolean, null"#
            ),
            (#"{"description": 5}"#, "/s/description", "expected a string, got number"),
        ])
    func malformedKeyword(schema: String, path: String, message: String) throws {
        let error = try loadError(schema)
        #expect(error == CatalogError(path: path, message: message))
    }

    @Test("a keyword that cannot apply to the declared type is refused")
    func inapplicableKeyword() throws {
        #expect(
            try loadError(#"{"type": "integer", "maxLength": 5}"#)
                == CatalogError(
                    path: "/s/maxLength",
                    message: "cannot apply: type is integer, and maxLength constrains only string values"))
        #expect(
            try loadError(#"{"type": ["string", "null"], "minimum": 1}"#)
                == CatalogError(
                    path: "/s/minimum",
                    message:
                        "cannot apply: type is string or null, and minimum constrains only number and integer values"))
        #expect(try loadError(#"{"type": "object", "items": {}}"#).path == "/s/items")
        #expect(try loadError(#"{"type": "array", "required": ["a"]}"#).path == "/s/required")
        #expect(try loads(#"{"type": ["integer", "null"], "minimum": 1}"#))
        #expect(try loads(#"{"type": "string", "enum": ["a"], "description": "d"}"#))
    }

    @Test("contradictory bounds and unsatisfiable required members are refused")
    func contradictions() throws {
        #expect(
            try loadError(#"{"minLength": 5, "maxLength": 4}"#)
                == CatalogError(path: "/s/minLength", message: "is greater than maxLength (4)"))
        #expect(
            try loadError(#"{"minimum": 2, "maximum": 1.5}"#)
                == CatalogError(path: "/s/minimum", message: "is greater than maximum (1.5)"))
        #expect(try loads(#"{"minimum": 1, "maximum": 1.0, "minLength": 2, "maxLength": 2}"#))
        #expect(
            try loadError(#"{"properties": {"text": {}}, "required": ["text", "txt"], "additionalProperties": false}"#)
                == CatalogError(
                    path: "/s/required/1",
                    message: #"names "txt", which is not in properties while additionalProperties is false"#))
        #expect(try loads(#"{"properties": {"text": {}}, "required": ["text", "txt"]}"#))
    }
}
