import Foundation

@testable import ModalStackClient

/// The client's Server-Sent Events parser: however the stream is cut into chunks (the first byte
/// seeds the cuts), the same events, last event ID, retry and comments.
enum ClientSSEFuzz {
    static func check(_ input: [UInt8]) {
        guard let seed = input.first else { return }
        let stream = Data(input.dropFirst())
        var whole = ServerSentEventParser()
        let expected = whole.feed(stream)
        var chunked = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        var start = stream.startIndex
        var step = Int(seed % 7) + 1
        while start < stream.endIndex {
            let end = min(start + step, stream.endIndex)
            events += chunked.feed(stream[start..<end])
            start = end
            step = step % 7 + 1
        }
        guard events == expected, chunked.lastEventID == whole.lastEventID, chunked.retry == whole.retry,
            chunked.commentCount == whole.commentCount
        else { finding("cut into chunks, the stream reads as \(events), whole as \(expected)", input: input) }
    }
}

/// The client's decoding of response bodies: the first byte picks the type; what decodes encodes
/// and decodes again to the same value.
enum ClientResponseFuzz {
    private static let decoder = ModalStackJSON.makeDecoder()
    private static let encoder = ModalStackJSON.makeEncoder()

    static func check(_ input: [UInt8]) {
        guard let kind = input.first else { return }
        let body = Data(input.dropFirst())
        switch kind % 8 {
        case 0: roundTrip(Session.self, body, input: input)
        case 1: roundTrip(Presentation.self, body, input: input)
        case 2: roundTrip(PathEntry.self, body, input: input)
        case 3: roundTrip(SessionChange.self, body, input: input)
        case 4: roundTrip(EventsPage.self, body, input: input)
        case 5: roundTrip(SessionsPage.self, body, input: input)
        case 6: roundTrip(ModalStackError.Problem.self, body, input: input)
        default: roundTrip(JSONValue.self, body, input: input)
        }
    }

    private static func roundTrip<Value: Codable & Equatable>(_ type: Value.Type, _ body: Data, input: [UInt8]) {
        guard let value = try? decoder.decode(type, from: body) else { return }
        guard let encoded = try? encoder.encode(value) else {
            finding("a decoded \(type) does not encode", input: input)
        }
        guard let again = try? decoder.decode(type, from: encoded), again == value else {
            finding(
                "a decoded \(type) encodes as \(String(decoding: encoded, as: UTF8.self)), which reads otherwise",
                input: input)
        }
    }
}
