import Foundation
import ModalStackCore
import Testing

@Suite("Catalog")
struct CatalogTests {
    /// The example of the `Catalog` documentation.
    private static let example = #"""
        {
          "destinations": {
            "settings": { "styles": ["sheet", "fullScreenCover"], "summary": "App settings" },
            "help": { "styles": ["sheet"], "payload": { "type": "object", "properties": { "text": { "type": "string", "maxLength": 500 } }, "required": ["text"], "additionalProperties": false } },
            "deleteConfirm": { "styles": ["alert"] }
          }
        }
        """#

    private static let allStyleNames =
        "sheet, fullScreenCover, popover, alert, confirmationDialog, dialog, progress, push"

    private func load(_ text: String) throws -> Catalog {
        try Catalog.load(Array(text.utf8))
    }

    private func loadError(_ text: String) throws -> CatalogError {
        try #require(throws: CatalogError.self) { try Catalog.load(Array(text.utf8)) }
    }

    /// scripts/seeds-catalog.json, found from this file: Tests/ModalStackCoreTests/CatalogTests.swift.
    private func loadSeeds() throws -> Catalog {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/seeds-catalog.json")
        return try Catalog.load(Array(try Data(contentsOf: url)))
    }

    // MARK: - Loading

    @Test("a catalog file loads sorted by name, with styles in file order, payload schema and summary")
    func loadsExample() throws {
        let catalog = try load(Self.example)
        #expect(catalog.destinations.map(\.name) == ["deleteConfirm", "help", "settings"])

        let settings = try #require(catalog.destination(named: "settings"))
        #expect(settings.styles == [.sheet, .fullScreenCover])
        #expect(settings.summary == "App settings")
        #expect(settings.payloadSchema == nil)

        let help = try #require(catalog.destination(named: "help"))
        #expect(help.styles == [.sheet])
        #expect(help.summary == nil)
        #expect(
            help.payloadSchema?.json.jsonText
                == #"{"type":"object","properties":{"text":{"type":"string","maxLength":500}},"required":["text"],"additionalProperties":false}"#
        )

        #expect(catalog.destination(named: "Settings") == nil)
        #expect(catalog.destination(named: "unknown") == nil)
    }

    @Test("a destination without styles allows every style; one without payload accepts any payload")
    func defaults() throws {
        let catalog = try load(#"{"destinations": {"anything": {}}}"#)
        let anything = try #require(catalog.destination(named: "anything"))
        #expect(anything.styles == ModalStyle.allCases)
        for style in ModalStyle.allCases {
            #expect(
                catalog.check(destination: "anything", style: style, payload: ["any": [1, "two", .null]], at: "") == [])
        }
    }

    @Test("a catalog made in code is sorted and indexed like a loaded one")
    func madeInCode() throws {
        let alert = Catalog.Destination(name: "deleteConfirm", styles: [.alert])
        let sheet = Catalog.Destination(name: "about", summary: "About the app")
        let catalog = Catalog(destinations: [alert, sheet])
        #expect(catalog.destinations == [sheet, alert])
        #expect(catalog.destination(named: "deleteConfirm") == alert)
        #expect(catalog == Catalog(destinations: [sheet, alert]))
        #expect(Set([catalog, Catalog(destinations: [sheet, alert])]).count == 1)
        #expect(catalog != Catalog(destinations: [sheet]))
    }

    // MARK: - Load errors

    @Test(
        "each malformed catalog is refused at its path",
        arguments: [
            ("[]", "", "expected an object, got array"),
            (
                #"{"destinations": {"a": {}}, "version": 1}"#, "/version",
                #"unknown member "version"; the members are "destinations" and "routes""#
            ),
            ("{}", "/destinations", "is required"),
            (#"{"destinations": "a"}"#, "/destinations", "expected an object, got string"),
            (#"{"destinations": {}}"#, "/destinations", "must declare at least one destination"),
            (#"{"destinations": []}"#, "/destinations", "must declare at least one destination"),
            (
                #"{"destinations": {"9lives": {}}}"#, "/destinations/9lives",
                #""9lives" is not a valid destination name: it must be 1-64 characters matching ^[A-Za-z][A-Za-z0-9._-]*$"#
            ),
            (
                #"{"destinations": {"a/b": {}}}"#, "/destinations/a~1b",
                #""a/b" is not a valid destination name: it must be 1-64 characters matching ^[A-Za-z][A-Za-z0-9._-]*$"#
            ),
            (#"{"destinations": {"a": []}}"#, "/destinations/a", "expected an object, got array"),
            (
                #"{"destinations": {"a": {"style": ["sheet"]}}}"#, "/destinations/a/style",
                #"unknown member "style"; known members: styles, payload, summary"#
            ),
            (
                #"{"destinations": {"a": {"styles": "sheet"}}}"#, "/destinations/a/styles",
                "expected an array of style names, got string"
            ),
            (#"{"destinations": {"a": {"styles": []}}}"#, "/destinations/a/styles", "must list at least one style"),
            (
                #"{"destinations": {"a": {"styles": ["sheet", 1]}}}"#, "/destinations/a/styles/1",
                "expected a string, got number"
            ),
            (
                #"{"destinations": {"a": {"styles": ["sheet", "bubble"]}}}"#, "/destinations/a/styles/1",
                #"unknown style "bubble"; known styles: "# + allStyleNames
            ),
            (
                #"{"destinations": {"a": {"styles": ["sheet", "popover", "sheet"]}}}"#, "/destinations/a/styles/2",
                #"duplicate style "sheet""#
            ),
            (
                #"{"destinations": {"a": {"payload": []}}}"#, "/destinations/a/payload",
                "expected a schema object, got array"
            ),
            (
                #"{"destinations": {"a": {"payload": {"type": "string"}}}}"#, "/destinations/a/payload/type",
                #"must be or include "object", since payloads are objects"#
            ),
            (
                #"{"destinations": {"a": {"payload": {"type": ["string", "null"]}}}}"#, "/destinations/a/payload/type",
                #"must be or include "object", since payloads are objects"#
            ),
            (#"{"destinations": {"a": {"summary": 5}}}"#, "/destinations/a/summary", "expected a string, got number"),
        ])
    func malformedCatalog(text: String, path: String, message: String) throws {
        #expect(try loadError(text) == CatalogError(path: path, message: message))
    }

    @Test("a payload schema error names its path inside the file")
    func payloadSchemaErrorPath() throws {
        let text = #"""
            {"destinations": {"help": {"payload": {"type": "object", "properties": {"text": {"type": "string", "maxLength": "500"}}}}}}
            """#
        #expect(
            try loadError(text)
                == CatalogError(
                    path: "/destinations/help/payload/properties/text/maxLength",
                    message: "expected a non-negative integer, got string"))
        #expect(
            try loadError(#"{"destinations": {"help": {"payload": {"requird": ["text"]}}}}"#).path
                == "/destinations/help/payload/requird")
        #expect(
            try load(#"{"destinations": {"a": {"payload": {"type": ["object", "null"]}}}}"#).destinations.count == 1)
    }

    @Test("invalid JSON is refused as a whole, with the parser's reason")
    func invalidJSON() throws {
        let truncated = try loadError(#"{"destinations": {"#)
        #expect(truncated.path == "")
        #expect(truncated.message.hasPrefix("invalid JSON: "))
        #expect(truncated.description == truncated.message)

        let duplicate = try loadError(#"{"destinations": {"a": {}, "a": {}}}"#)
        #expect(duplicate.message.hasPrefix(#"invalid JSON: duplicate key "a""#))
    }

    @Test(
        "the listing form's entries are checked too",
        arguments: [
            (#"{"destinations": [1]}"#, "/destinations/0", "expected an object, got number"),
            (#"{"destinations": [{"styles": ["sheet"]}]}"#, "/destinations/0/name", "is required"),
            (#"{"destinations": [{"name": 1}]}"#, "/destinations/0/name", "expected a string, got number"),
            (
                #"{"destinations": [{"name": "_a"}]}"#, "/destinations/0/name",
                #""_a" is not a valid destination name: it must be 1-64 characters matching ^[A-Za-z][A-Za-z0-9._-]*$"#
            ),
            (
                #"{"destinations": [{"name": "a"}, {"name": "a"}]}"#, "/destinations/1/name",
                #"duplicate destination "a""#
            ),
            (
                #"{"destinations": [{"name": "a", "extra": 1}]}"#, "/destinations/0/extra",
                #"unknown member "extra"; known members: name, styles, payload, summary"#
            ),
            (
                #"{"destinations": [{"name": "a", "styles": ["bubble"]}]}"#, "/destinations/0/styles/0",
                #"unknown style "bubble"; known styles: "# + allStyleNames
            ),
        ])
    func malformedListing(text: String, path: String, message: String) throws {
        #expect(try loadError(text) == CatalogError(path: path, message: message))
    }

    @Test("an error describes itself with its path, or alone for the whole document")
    func errorDescription() {
        #expect(
            CatalogError(path: "/destinations/a/styles/1", message: "bad").description
                == "at /destinations/a/styles/1: bad")
        #expect(CatalogError(path: "", message: "bad").description == "bad")
    }

    // MARK: - Checking presents

    @Test("an unknown destination is one error at /destination listing the known names")
    func unknownDestination() throws {
        let catalog = try load(Self.example)
        let expected = ModalError.FieldError(
            pointer: "/destination",
            message: #"unknown destination "setings"; known destinations: deleteConfirm, help, settings"#)
        #expect(catalog.check(destination: "setings", style: .popover, payload: ["x": 1], at: "") == [expected])
        #expect(
            catalog.check(destination: "setings", style: .sheet, payload: [:], at: "/stack/2").map(\.pointer)
                == ["/stack/2/destination"])
    }

    @Test("a style the destination does not allow is an error at /style listing the allowed ones")
    func disallowedStyle() throws {
        let catalog = try load(Self.example)
        #expect(
            catalog.check(destination: "settings", style: .alert, payload: [:], at: "") == [
                .init(
                    pointer: "/style",
                    message: #"style "alert" is not allowed for "settings"; allowed styles: sheet, fullScreenCover"#)
            ])
        #expect(catalog.check(destination: "settings", style: .fullScreenCover, payload: [:], at: "") == [])
    }

    @Test("style and payload violations are all reported under the present's pointer")
    func allViolations() throws {
        let catalog = try load(Self.example)
        #expect(
            catalog.check(destination: "help", style: .popover, payload: ["text": 5, "x": true], at: "/stack/1") == [
                .init(
                    pointer: "/stack/1/style",
                    message: #"style "popover" is not allowed for "help"; allowed styles: sheet"#),
                .init(pointer: "/stack/1/payload/text", message: "expected string, got number"),
                .init(pointer: "/stack/1/payload/x", message: "is not allowed (additionalProperties is false)"),
            ])
        #expect(
            catalog.check(destination: "help", style: .sheet, payload: [:], at: "")
                == [.init(pointer: "/payload/text", message: "is required")])
        #expect(catalog.check(destination: "help", style: .sheet, payload: ["text": "How can we help?"], at: "") == [])
    }

    // MARK: - Output

    @Test("json lists the destinations by name with the file's keys")
    func jsonOutput() throws {
        let catalog = try load(Self.example)
        #expect(
            catalog.json.jsonText
                == #"{"destinations":[{"name":"deleteConfirm","styles":["alert"]},"#
                + #"{"name":"help","styles":["sheet"],"payload":{"type":"object","properties":{"text":{"type":"string","maxLength":500}},"required":["text"],"additionalProperties":false}},"#
                + #"{"name":"settings","styles":["sheet","fullScreenCover"],"summary":"App settings"}]}"#)
        let allStyles = (ModalStyle.allCases.map(\.rawValue) + ["push"]).map { #""\#($0)""# }.joined(separator: ",")
        #expect(
            try load(#"{"destinations": {"a": {}}}"#).json.jsonText
                == #"{"destinations":[{"name":"a","styles":["# + allStyles + "]}]}")
    }

    @Test(
        "json loads back as an equal catalog",
        arguments: [example, #"{"destinations": {"a": {}, "B": {"summary": ""}}}"#])
    func roundTrip(text: String) throws {
        let catalog = try load(text)
        #expect(try Catalog(json: catalog.json) == catalog)
        #expect(try Catalog.load(catalog.json.serialized()) == catalog)
        #expect(try Catalog(json: catalog.json).json == catalog.json)
    }

    // MARK: - The seeds catalog

    @Test("scripts/seeds-catalog.json loads, every destination summarized, and round-trips")
    func seedsLoad() throws {
        let seeds = try loadSeeds()
        #expect(
            seeds.destinations.map(\.name) == [
                "deleteConfirm", "downloadItem", "downloads", "help", "onboarding", "privacy", "profile", "settings",
                "shareOptions", "sun", "sync",
            ])
        #expect(seeds.routes.compactMap(\.name) == ["download-item", "settings-help", "privacy", "profile", "home"])
        #expect(seeds.destinations.allSatisfy { $0.summary?.isEmpty == false })
        #expect(try Catalog(json: seeds.json) == seeds)
        #expect(seeds.destination(named: "help")?.styles == [.sheet, .fullScreenCover])
    }

    @Test("real presents are checked against the seeds catalog")
    func seedsPresents() throws {
        let seeds = try loadSeeds()
        func messages(_ destination: String, _ style: ModalStyle, _ payload: JSONObject = [:]) -> [String] {
            seeds.check(destination: destination, style: style, payload: payload, at: "").map {
                "\($0.pointer) \($0.message)"
            }
        }

        #expect(messages("settings", .sheet) == [])
        #expect(messages("settings", .fullScreenCover) == [])
        #expect(
            messages("settings", .popover) == [
                #"/style style "popover" is not allowed for "settings"; allowed styles: sheet, fullScreenCover"#
            ])

        #expect(messages("profile", .sheet, ["userId": 42]) == [])
        #expect(messages("profile", .sheet, ["userId": .number("1.0")]) == [])
        #expect(messages("profile", .sheet, ["userId": 0]) == ["/payload/userId must be at least 1"])
        #expect(messages("profile", .sheet, ["userId": "42"]) == ["/payload/userId expected integer, got string"])
        #expect(messages("profile", .sheet) == ["/payload/userId is required"])
        #expect(
            messages("profile", .sheet, ["userId": 1, "tab": "posts"])
                == ["/payload/tab is not allowed (additionalProperties is false)"])

        #expect(messages("help", .fullScreenCover, ["text": "How can we help?"]) == [])
        #expect(messages("help", .sheet, ["text": ""]) == ["/payload/text must be at least 1 character"])
        #expect(
            messages("help", .sheet, ["text": .string(String(repeating: "é", count: 501))])
                == ["/payload/text must be at most 500 characters"])

        #expect(messages("onboarding", .fullScreenCover) == [])
        #expect(messages("onboarding", .sheet, ["page": 10]) == [])
        #expect(messages("onboarding", .sheet, ["page": 11]) == ["/payload/page must be at most 10"])
        #expect(messages("onboarding", .sheet, ["page": 2.5]) == ["/payload/page expected integer, got number"])

        #expect(messages("downloads", .sheet) == [])
        #expect(messages("deleteConfirm", .alert) == [])
        #expect(
            messages("deleteConfirm", .sheet) == [
                #"/style style "sheet" is not allowed for "deleteConfirm"; allowed styles: alert"#
            ])
        #expect(messages("shareOptions", .confirmationDialog) == [])
        #expect(messages("sync", .progress) == [])

        #expect(messages("sun", .dialog, ["title": "Sunny", "brightness": 0.8]) == [])
        #expect(messages("sun", .dialog, ["brightness": 1.5]) == ["/payload/brightness must be at most 1"])
        #expect(
            messages("sun", .sheet, ["title": 7])
                == [
                    #"/style style "sheet" is not allowed for "sun"; allowed styles: dialog"#,
                    "/payload/title expected string, got number",
                ])

        #expect(
            messages("settingz", .sheet) == [
                "/destination unknown destination \"settingz\"; known destinations: "
                    + "deleteConfirm, downloadItem, downloads, help, onboarding, privacy, profile, settings, shareOptions, "
                    + "sun, sync"
            ])
    }
}
