import Foundation

/// One event of a `text/event-stream`, as the HTML standard's "Interpreting an event stream" dispatches it.
struct ServerSentEvent: Sendable, Hashable {
    /// The `event` field's value, or `message` when the event had none (or an empty one).
    var type: String
    /// The `data` fields' values joined with "\n".
    var data: String
    /// The stream's last event ID when the event was dispatched: set by this event's `id` field or
    /// an earlier one's (the standard's `lastEventId`); `""` when no `id` came yet, or an empty one.
    var lastEventID: String
}

/// An incremental parser of a `text/event-stream`, following the HTML standard's "Interpreting an
/// event stream": feed it the body's bytes as they arrive, in chunks of any size, and it returns
/// the events each chunk completes.
///
/// Lines end in CRLF, LF or CR, and are decoded as UTF-8 with U+FFFD for invalid sequences; a
/// leading byte order mark is skipped. It keeps only the unfinished line and the event being
/// read, and looks at each byte once. An unfinished event at the end of a stream is never
/// dispatched; use a new parser for each connection (and send ``lastEventID`` when reconnecting).
struct ServerSentEventParser {
    /// The stream's last event ID: set at each dispatch (a blank line) from the last `id` field
    /// seen, and kept from event to event; `""` when none came, or an empty one reset it.
    private(set) var lastEventID = ""
    /// The reconnection time in milliseconds the stream asked for with its last valid `retry`
    /// field (ASCII digits only; a value too large for `Int` is ignored).
    private(set) var retry: Int?
    /// How many comment lines (such as `: heartbeat`) arrived.
    private(set) var commentCount = 0

    /// The bytes of the line being read, without its line end.
    private var line: [UInt8] = []
    /// Whether the previous chunk ended with CR: an LF starting this one ends no other line.
    private var skipsLineFeed = false
    private var readsFirstLine = true
    private var dataBuffer: [UInt8] = []
    private var eventTypeBuffer = ""
    private var lastEventIDBuffer = ""

    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let colon = UInt8(ascii: ":")
    private static let space = UInt8(ascii: " ")
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    init() {}

    /// Reads the next bytes of the stream; returns the events they complete, in order.
    mutating func feed(_ bytes: Data) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        var index = bytes.startIndex
        if skipsLineFeed, index < bytes.endIndex {
            skipsLineFeed = false
            if bytes[index] == Self.lineFeed { index += 1 }
        }
        while index < bytes.endIndex {
            guard
                let end = bytes[index...].firstIndex(where: { $0 == Self.lineFeed || $0 == Self.carriageReturn })
            else {
                line.append(contentsOf: bytes[index...])
                break
            }
            line.append(contentsOf: bytes[index..<end])
            if let event = processLine() { events.append(event) }
            index = end + 1
            if bytes[end] == Self.carriageReturn {
                if index == bytes.endIndex {
                    skipsLineFeed = true
                } else if bytes[index] == Self.lineFeed {
                    index += 1
                }
            }
        }
        return events
    }

    /// Interprets the complete line in `line`, then empties it.
    private mutating func processLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if readsFirstLine {
            readsFirstLine = false
            if line.starts(with: Self.byteOrderMark) { line.removeFirst(Self.byteOrderMark.count) }
        }
        if line.isEmpty { return dispatch() }
        if line.first == Self.colon {
            commentCount += 1
            return nil
        }
        // Fields are compared as bytes, as the standard compares code points (String's == would
        // also match canonically equivalent text); ":" and " " are ASCII, so splitting the bytes
        // before decoding them gives what decoding the line first would.
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: Self.colon) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == Self.space { value = value.dropFirst() }
        } else {
            field = line[...]
            value = []
        }
        if field.elementsEqual("event".utf8) {
            eventTypeBuffer = String(decoding: value, as: UTF8.self)
        } else if field.elementsEqual("data".utf8) {
            dataBuffer += value
            dataBuffer.append(Self.lineFeed)
        } else if field.elementsEqual("id".utf8) {
            if !value.contains(0) { lastEventIDBuffer = String(decoding: value, as: UTF8.self) }
        } else if field.elementsEqual("retry".utf8), !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }),
            let milliseconds = Int(String(decoding: value, as: UTF8.self))
        {
            retry = milliseconds
        }
        return nil
    }

    /// A blank line: the event read so far, unless its data is empty.
    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = lastEventIDBuffer
        defer {
            dataBuffer.removeAll(keepingCapacity: true)
            eventTypeBuffer = ""
        }
        guard !dataBuffer.isEmpty else { return nil }
        if dataBuffer.last == Self.lineFeed { dataBuffer.removeLast() }
        return ServerSentEvent(
            type: eventTypeBuffer.isEmpty ? "message" : eventTypeBuffer,
            data: String(decoding: dataBuffer, as: UTF8.self), lastEventID: lastEventID)
    }
}
