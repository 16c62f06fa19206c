import ModalStackCore
import ModalStackTestSupport
import Testing

@Suite("Modal kinds: decoding each style's fields")
struct ModalKindDecodingTests {
    private func decode(_ text: String) throws -> PresentRequest {
        try PresentRequest(json: try JSONParser.parse(text))
    }

    private func pointers(_ text: String) -> [String] {
        do {
            _ = try decode(text)
            return []
        } catch let error as ModalError {
            return error.fieldErrors.map(\.pointer)
        } catch {
            return ["unexpected \(error)"]
        }
    }

    private func messages(_ text: String) -> [String] {
        do {
            _ = try decode(text)
            return []
        } catch let error as ModalError {
            return error.fieldErrors.map(\.message)
        } catch {
            return ["unexpected \(error)"]
        }
    }

    @Test("a sheet carries detents and interactiveDismissDisabled")
    func sheet() throws {
        let request = try decode(
            #"{"destination":"d","detents":["medium","large","fraction:0.25","height:300"],"interactiveDismissDisabled":true}"#
        )
        #expect(
            request.content
                == .sheet(
                    SheetOptions(
                        detents: [.medium, .large, .fraction(0.25), .height(300)], interactiveDismissDisabled: true)))
        #expect(
            pointers(
                #"{"destination":"d","detents":["small","fraction:0","fraction:1.5","height:-1","fraction:0x1p-1","height:1e6","large"]}"#
            )
                == ["/detents/0", "/detents/1", "/detents/2", "/detents/3", "/detents/4", "/detents/5"])
    }

    @Test("a detent listed twice is refused where it is repeated")
    func repeatedDetents() {
        #expect(pointers(#"{"destination":"d","detents":["large","medium","large"]}"#) == ["/detents/2"])
        #expect(pointers(#"{"destination":"d","detents":["fraction:0.5","fraction:0.50"]}"#) == ["/detents/1"])
        #expect(messages(#"{"destination":"d","detents":["large","large"]}"#) == ["large is listed twice"])
    }

    @Test("every detent the server writes is a plain decimal that reads back as the same detent")
    func detentRoundTrip() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        var fractions: [Double] = [
            1e-07, 0.1, 1.0 / 3, 2.0 / 3, 0.999999, 0.5, 1, 1.0.nextDown, 0.1.nextUp, 1e-05, 1.2345e-05, 0.0001,
            .ulpOfOne, .leastNormalMagnitude, .leastNonzeroMagnitude,
        ]
        fractions += (0..<2000).map { _ in Double.random(in: .leastNonzeroMagnitude...1, using: &generator) }
        fractions += (0..<2000).map { _ in
            Double(
                sign: .plus, exponent: -Int.random(in: 1...1074, using: &generator),
                significand: Double.random(in: 1..<2, using: &generator))
        }
        let heights: [Double] =
            [1e-05, 0.5, 320, 100_000, 100_000.0.nextDown, .leastNonzeroMagnitude]
            + (0..<2000).map { _ in Double.random(in: .leastNonzeroMagnitude...100_000, using: &generator) }
        let detents = fractions.map(Detent.fraction) + heights.map(Detent.height)
        for detent in detents {
            let number = detent.text.drop { $0 != ":" }.dropFirst()
            #expect(number.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }, "\(detent.text)")
            #expect(Detent(detent.text) == detent, "\(detent.text)")
        }
        let written = detents.prefix(500).map { JSONValue.string($0.text) }
        let request = try decode(#"{"destination":"d","detents":\#(JSONValue.array(written).jsonText)}"#)
        #expect(request.content == .sheet(SheetOptions(detents: Array(detents.prefix(500)))))
        #expect(Detent.fraction(1e-07).text == "fraction:0.0000001")
        #expect(Detent.height(1e-05).text == "height:0.00001")
    }

    @Test("a detent number may have an exponent, as older servers wrote it; the ranges still hold")
    func detentExponents() throws {
        #expect(Detent("fraction:1e-07") == .fraction(1e-07))
        let request = try decode(
            #"{"destination":"d","detents":["fraction:1e-07","height:1E+3","fraction:2.5e-1","height:1.5e-05"]}"#)
        #expect(
            request.content
                == .sheet(SheetOptions(detents: [.fraction(1e-07), .height(1000), .fraction(0.25), .height(1.5e-05)])))
        for text in [
            "fraction:1e", "fraction:e-7", "fraction:1e-", "fraction:1e-7.5", "fraction:1e--7", "fraction:-1e-07",
            "fraction:+1e-07",
            "fraction:1e+1", "fraction:1e999", "fraction:1e-999", "fraction:0e5", "fraction:inf", "fraction:nan",
            "fraction:.", "fraction:.e1",
            "height:1e6", "height:1e 3",
        ] {
            #expect(Detent(text) == nil, "\(text)")
        }
    }

    @Test("popover, full-screen cover and dialog carry no style fields")
    func plainStyles() throws {
        #expect(try decode(#"{"destination":"d","style":"popover"}"#).content == .popover)
        #expect(try decode(#"{"destination":"d","style":"fullScreenCover"}"#).content == .fullScreenCover)
        #expect(try decode(#"{"destination":"sun","style":"dialog","payload":{"title":"Sunny"}}"#).content == .dialog)
    }

    @Test("an alert without buttons gets a single OK button")
    func alertDefaults() throws {
        let request = try decode(#"{"destination":"saved","style":"alert","title":"Saved"}"#)
        #expect(
            request.content
                == .alert(AlertContent(title: "Saved", buttons: [AlertButton(id: "ok", label: "OK", role: .default)])))
    }

    @Test("alert and confirmation dialog fields are checked one by one")
    func alertValidation() throws {
        let full = try decode(
            #"{"destination":"deleteConfirm","style":"confirmationDialog","title":"Delete?","message":"Gone\nforever","buttons":[{"id":"delete","label":"Delete","role":"destructive"},{"id":"cancel","label":"Cancel","role":"cancel"}]}"#
        )
        #expect(full.content.buttons.map(\.id) == ["delete", "cancel"])
        #expect(pointers(#"{"destination":"a","style":"alert"}"#) == ["/title"])
        #expect(pointers(#"{"destination":"a","style":"confirmationDialog","title":"t"}"#) == ["/buttons"])
        #expect(pointers(#"{"destination":"a","style":"alert","title":"t","buttons":[]}"#) == ["/buttons"])
        let longTitle = String(repeating: "t", count: 201)
        #expect(pointers(#"{"destination":"a","style":"alert","title":"\#(longTitle)"}"#) == ["/title"])
        #expect(
            pointers(
                #"{"destination":"a","style":"alert","title":"t","buttons":[{"id":"x","label":"X"},{"id":"x","label":"Y"}]}"#
            )
                == ["/buttons/1/id"])
        #expect(
            pointers(
                #"{"destination":"a","style":"alert","title":"t","buttons":[{"id":"a","label":"A","role":"cancel"},{"id":"b","label":"B","role":"cancel"}]}"#
            )
                == ["/buttons/1/role"])
        #expect(
            pointers(
                #"{"destination":"a","style":"alert","title":"t","buttons":[{"id":"a","label":"A","role":"maybe","extra":1},"b"]}"#
            )
                == ["/buttons/0/role", "/buttons/0/extra", "/buttons/1"])
    }

    @Test("a progress needs total > 0 and completed within 0…total")
    func progress() throws {
        let request = try decode(
            #"{"destination":"sync","style":"progress","message":"Syncing","total":10,"completed":2.5}"#)
        #expect(request.content == .progress(ProgressContent(message: "Syncing", total: 10, completed: 2.5)))
        #expect(
            try decode(#"{"destination":"sync","style":"progress","total":3}"#).content
                == .progress(ProgressContent(total: 3, completed: 0)))
        #expect(pointers(#"{"destination":"sync","style":"progress"}"#) == ["/total"])
        #expect(pointers(#"{"destination":"sync","style":"progress","total":0}"#) == ["/total"])
        #expect(pointers(#"{"destination":"sync","style":"progress","total":5,"completed":6}"#) == ["/completed"])
        #expect(pointers(#"{"destination":"sync","style":"progress","total":5,"completed":-1}"#) == ["/completed"])
    }

    @Test("a range is told as people write it, an open bound as such")
    func rangeDetails() throws {
        #expect(
            messages(#"{"destination":"sync","style":"progress","total":0}"#)
                == ["must be greater than 0 and at most 1e15"])
        #expect(
            messages(#"{"destination":"sync","style":"progress","total":2e15}"#)
                == ["must be greater than 0 and at most 1e15"])
        #expect(
            messages(#"{"destination":"sync","style":"progress","total":5,"completed":-1}"#)
                == ["must be between 0 and 1e15"])
        let open = ModalError.validation([.init(pointer: "/total", message: "must be greater than 0 and at most 1e15")])
        #expect(throws: open) { try UpdateRequest(json: try JSONParser.parse(#"{"total":0}"#)) }
    }

    @Test("a field of another style is refused with its pointer")
    func wrongFieldForStyle() {
        #expect(pointers(#"{"destination":"a","buttons":[{"id":"x","label":"X"}]}"#) == ["/buttons"])
        #expect(pointers(#"{"destination":"a","style":"alert","title":"t","detents":["large"]}"#) == ["/detents"])
        #expect(pointers(#"{"destination":"a","style":"dialog","total":3}"#) == ["/total"])
        #expect(
            pointers(#"{"destination":"a","style":"popover","title":"x","interactiveDismissDisabled":true}"#)
                == ["/interactiveDismissDisabled", "/title"])
    }

    @Test("locked and whenBlocked are read; a bad whenBlocked is refused")
    func lockAndBlocking() throws {
        let request = try decode(#"{"destination":"pay","locked":true,"whenBlocked":"reject"}"#)
        #expect(request.locked == true)
        #expect(try decode(#"{"destination":"pay"}"#).locked == nil)
        #expect(request.whenBlocked == .reject)
        #expect(try decode(#"{"destination":"pay"}"#).whenBlocked == .queue)
        #expect(pointers(#"{"destination":"pay","whenBlocked":"later"}"#) == ["/whenBlocked"])
    }

    @Test("PATCH bodies: payload, message, total, completed; nothing else")
    func updateBodies() throws {
        let update = try UpdateRequest(
            json: try JSONParser.parse(#"{"completed":3,"message":"Almost","payload":{"a":1}}"#))
        #expect(update == UpdateRequest(payload: ["a": 1], message: "Almost", total: nil, completed: 3))
        #expect(throws: ModalError.self) { try UpdateRequest(json: try JSONParser.parse(#"{"title":"x"}"#)) }
        #expect(throws: ModalError.self) { try UpdateRequest(json: try JSONParser.parse(#"{"total":0}"#)) }
    }

    @Test("every presentation's JSON form reads back as the same presentation")
    func representationRoundTrip() throws {
        let contents: [ModalContent] = [
            .sheet(
                SheetOptions(detents: [.medium, .fraction(0.5), .fraction(1e-07)], interactiveDismissDisabled: true)),
            .fullScreenCover, .popover,
            alert(),
            .confirmationDialog(
                AlertContent(title: "Share", message: "To where?", buttons: [AlertButton(id: "mail", label: "Mail")])),
            .dialog, .progress(ProgressContent(message: "Sync", total: 7, completed: 1.5)),
        ]
        for (index, content) in contents.enumerated() {
            let presentation = Presentation(
                id: "p\(index)", destination: "d", key: "k\(index)", content: content, payload: ["n": JSONValue(index)],
                locked: index.isMultiple(of: 2), state: .dismissed,
                requestedAt: Timestamp(millisecondsSinceEpoch: 1000),
                presentedAt: Timestamp(millisecondsSinceEpoch: 2000),
                dismissedAt: Timestamp(millisecondsSinceEpoch: 3000),
                result: ["buttonId": "mail"])
            #expect(try Presentation(json: try JSONParser.parse(presentation.json.serialized())) == presentation)
        }
    }
}
