import Foundation
import ModalStackTestSupport
import Testing

@testable import ModalStackClient

/// Parses `text` fed whole; the parser is returned for its state.
private func parse(_ text: String) -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
    parse(Array(text.utf8))
}

private func parse(_ bytes: [UInt8]) -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
    var parser = ServerSentEventParser()
    let events = parser.feed(Data(bytes))
    return (events, parser)
}

/// Parses `bytes` fed in the given pieces.
private func parse(_ bytes: [UInt8], splitAt cuts: [Int]) -> (events: [ServerSentEvent], parser: ServerSentEventParser)
{
    var parser = ServerSentEventParser()
    var events: [ServerSentEvent] = []
    var start = 0
    for cut in cuts + [bytes.count] {
        events += parser.feed(Data(bytes[start..<cut]))
        start = cut
    }
    return (events, parser)
}

private func message(_ data: String, id: String = "", type: String = "message") -> ServerSentEvent {
    ServerSentEvent(type: type, data: data, lastEventID: id)
}

@Suite("Server-Sent Events parser")
struct ServerSentEventParserTests {
    // MARK: The HTML standard's examples

    @Test("data lines join with LF: the stock ticker example")
    func stockTicker() {
        #expect(parse("data: YHOO\ndata: +2\ndata: 10\n\n").events == [message("YHOO\n+2\n10")])
    }

    @Test("a comment fires nothing, an id sets the last event ID, an empty id resets it")
    func testStream() {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        let (events, parser) = parse(stream)
        #expect(events == [message("first event", id: "1"), message("second event"), message(" third event")])
        #expect(parser.commentCount == 1)
        #expect(parser.lastEventID == "")
    }

    @Test("an empty data line gives empty data, two give a newline, an unended event is dropped")
    func emptyData() {
        #expect(parse("data\n\ndata\ndata\n\ndata:").events == [message(""), message("\n")])
    }

    @Test("one space after the colon is ignored: two identical events")
    func spaceAfterColon() {
        #expect(parse("data:test\n\ndata: test\n\n").events == [message("test"), message("test")])
    }

    @Test("the event field names the type")
    func eventTypes() {
        let stream = "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
        #expect(
            parse(stream).events == [
                message("73857293", type: "add"), message("2153", type: "remove"), message("113411", type: "add"),
            ])
    }

    // MARK: Lines

    @Test("lines end in CRLF, LF or CR", arguments: ["\r\n", "\n", "\r"])
    func lineEnds(end: String) {
        let stream = ["event: e", "data: a", "data: b", "", ": c", "data: d", "", ""].joined(separator: end)
        #expect(parse(stream).events == [message("a\nb", type: "e"), message("d")])
    }

    @Test("mixed line ends; LF CR is two line ends, CR CR a blank line")
    func mixedLineEnds() {
        #expect(parse("data: a\r\ndata: b\rdata: c\n\n").events == [message("a\nb\nc")])
        #expect(parse("data: a\n\rdata: b\r\r").events == [message("a"), message("b")])
    }

    @Test("a CR ending one chunk and an LF starting the next are one line end")
    func splitCRLF() {
        let bytes = Array("data: a\r\ndata: b\r\n\r\n".utf8)
        let cuts = bytes.indices.filter { bytes[$0] == UInt8(ascii: "\n") }
        #expect(parse(bytes, splitAt: cuts).events == [message("a\nb")])
        // A CR at the end of the last chunk fed is a line end already.
        var parser = ServerSentEventParser()
        #expect(parser.feed(Data("data: a\r".utf8)) == [])
        #expect(parser.feed(Data("\r".utf8)) == [message("a")])
        #expect(parser.feed(Data()) == [])
        #expect(parser.feed(Data("\ndata: b\n\n".utf8)) == [message("b")])
    }

    @Test("a line without a colon is a field with an empty value; unknown fields are ignored")
    func fieldsWithoutValues() {
        #expect(parse("data\nevent\n\n").events == [message("")])
        #expect(parse("Data: a\nfoo: b\ndata : c\n data: d\n\n").events == [])
        #expect(parse("data:: a\ndata:\tb\n\n").events == [message(": a\n\tb")])
    }

    @Test("the value keeps a colon and spaces past the first")
    func colonsInValues() {
        #expect(parse("data:  {\"a\": 1}  \n\n").events == [message(" {\"a\": 1}  ")])
    }

    // MARK: Fields

    @Test("the last event ID persists across events and updates at dispatch")
    func lastEventIDPersists() {
        var parser = ServerSentEventParser()
        #expect(
            parser.feed(Data("id: 7\ndata: a\n\ndata: b\n\n".utf8)) == [message("a", id: "7"), message("b", id: "7")])
        #expect(parser.feed(Data("id: 8\ndata: c\n".utf8)) == [])
        #expect(parser.lastEventID == "7")
        #expect(parser.feed(Data("\n".utf8)) == [message("c", id: "8")])
        #expect(parser.lastEventID == "8")
    }

    @Test("an id with NUL is ignored")
    func idWithNUL() {
        let (events, parser) = parse("id: 1\ndata: a\n\nid: 2\u{0}3\ndata: b\n\n")
        #expect(events == [message("a", id: "1"), message("b", id: "1")])
        #expect(parser.lastEventID == "1")
    }

    @Test("an event without data is not dispatched, but its id still counts and its type is dropped")
    func eventWithoutData() {
        let (events, parser) = parse("event: change\nid: 5\n\ndata: a\n\n")
        #expect(events == [message("a", id: "5")])
        #expect(parser.lastEventID == "5")
    }

    @Test("retry takes ASCII digits only")
    func retry() {
        #expect(parse("retry: 3000\n").parser.retry == 3000)
        #expect(parse("retry\n").parser.retry == nil)
        for ignored in [
            "retry: 3s", "retry: -1", "retry: 1.5", "retry:  30", "retry: ", "retry: ٣", "retry: 99999999999999999999",
        ] {
            #expect(parse("retry: 10\n\(ignored)\n").parser.retry == 10, "\(ignored)")
        }
        // Not an event: no data.
        #expect(parse("retry: 10\n\n").events == [])
    }

    @Test("comments are counted, wherever they are")
    func comments() {
        let (events, parser) = parse(": heartbeat\n\ndata: a\n:\n: x\ndata: b\n\n:")
        #expect(events == [message("a\nb")])
        #expect(parser.commentCount == 3)
    }

    // MARK: Bytes

    @Test("one leading byte order mark is skipped, even split, and only at the start")
    func byteOrderMark() {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let stream = bom + Array("data: a\n\n".utf8)
        #expect(parse(stream).events == [message("a")])
        #expect(parse(stream, splitAt: [1, 2]).events == [message("a")])
        // A second one makes the field name "\u{FEFF}data", which is no field.
        #expect(parse(bom + bom + Array("data: a\n\ndata: b\n\n".utf8)).events == [message("b")])
        #expect(parse(Array("data: a\n".utf8) + bom + Array("data: b\n\n".utf8)).events == [message("a")])
        #expect(parse(Array("data: \u{FEFF}a\n\n".utf8)).events == [message("\u{FEFF}a")])
    }

    @Test("invalid UTF-8 becomes U+FFFD; a character split across chunks is decoded whole")
    func utf8() {
        let bytes = Array("data: a".utf8) + [0xFF, 0xE2, 0x82] + Array("\nid: é€😀\ndata: 😀\n\n".utf8)
        let expected = [message("a\u{FFFD}\u{FFFD}\n😀", id: "é€😀")]
        #expect(parse(bytes).events == expected)
        #expect(parse(bytes, splitAt: Array(1..<bytes.count)).events == expected)
    }

    @Test("a data line of a megabyte, fed in small chunks")
    func longLine() {
        let value = String(repeating: "0123456789abcdef", count: 65_536)
        let bytes = Array("data: \(value)\n\n".utf8)
        let cuts = Array(stride(from: 1000, to: bytes.count, by: 1000))
        #expect(parse(bytes, splitAt: cuts).events == [message(value)])
    }

    // MARK: Chunking

    @Test("a long random stream gives the same events however it is cut")
    func randomChunks() {
        let seed = SeededGenerator.seed()
        var random = SeededGenerator(seed: seed)
        let (bytes, expected, expectedLastID, expectedComments) = randomStream(&random)
        let whole = parse(bytes)
        #expect(difference(whole.events, expected) == nil, "seed \(seed)")
        #expect(whole.parser.lastEventID == expectedLastID)
        #expect(whole.parser.commentCount == expectedComments)
        #expect(whole.parser.retry == 2500)

        let byteByByte = parse(bytes, splitAt: Array(1..<bytes.count))
        #expect(difference(byteByByte.events, expected) == nil, "seed \(seed)")
        #expect(byteByByte.parser.lastEventID == expectedLastID)
        #expect(byteByByte.parser.commentCount == expectedComments)

        for _ in 0..<20 {
            var cuts: [Int] = []
            var position = 0
            while true {
                position += Int.random(in: 1...40, using: &random)
                guard position < bytes.count else { break }
                cuts.append(position)
            }
            let chunked = parse(bytes, splitAt: cuts)
            #expect(difference(chunked.events, expected) == nil, "seed \(seed)")
            #expect(chunked.parser.lastEventID == expectedLastID)
            #expect(chunked.parser.commentCount == expectedComments)
        }
    }

    /// The first event where `events` differ from `expected`, short enough to read in a failure.
    private func difference(_ events: [ServerSentEvent], _ expected: [ServerSentEvent]) -> String? {
        guard events != expected else { return nil }
        let index = zip(events, expected).prefix { $0 == $1 }.count
        let got = index < events.count ? "\(events[index])" : "nothing"
        let want = index < expected.count ? "\(expected[index])" : "nothing"
        return "event \(index) of \(events.count) (expected \(expected.count)): \(got), expected \(want)"
    }

    /// A stream of a few hundred events with every kind of line end, comments, ids, types, empty
    /// and multi-line data and multi-byte characters; with the events it must give.
    private func randomStream(_ random: inout SeededGenerator) -> (
        bytes: [UInt8], events: [ServerSentEvent], lastEventID: String, comments: Int
    ) {
        let pieces = ["a", "b", " ", ":", "é", "€", "😀", "{\"x\":1}", "\u{0301}", "data", "id"]
        func text() -> String {
            (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        var stream = "\u{FEFF}retry: 2500\r\n"
        var events: [ServerSentEvent] = []
        var lastEventID = ""
        var comments = 0
        for _ in 0..<400 {
            let end = ["\r\n", "\n", "\r"].randomElement(using: &random)!
            var lines: [String] = []
            var data: [String] = []
            var type = ""
            var id: String?
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0:
                    lines.append(":" + text())
                    comments += 1
                case 1:
                    type = text()
                    lines.append("event: " + type)
                case 2:
                    id = String(Int.random(in: 0...1000, using: &random))
                    lines.append("id:" + id!)
                case 3:
                    lines.append("unknown: " + text())
                default:
                    let value = text()
                    data.append(value)
                    lines.append("data: " + value)
                }
            }
            stream += lines.map { $0 + end }.joined() + end
            if let id { lastEventID = id }
            if !data.isEmpty {
                let type = type.isEmpty ? "message" : type
                events.append(ServerSentEvent(type: type, data: data.joined(separator: "\n"), lastEventID: lastEventID))
            }
        }
        return (Array(stream.utf8), events, lastEventID, comments)
    }
}
