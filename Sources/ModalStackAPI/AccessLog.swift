import Glibc
import ModalStackCore

/// One structured line per answered request on standard output (through a ``LogBuffer``), and a
/// line for what the server reports of itself: JSON by default, or logfmt. Nothing secret is
/// written: no headers, no bodies, no query strings.
public struct AccessLog: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case json
        case logfmt
    }

    public enum Level: String, Sendable, CaseIterable, Comparable {
        case debug
        case info
        case warn
        case error
        case off

        public static func < (lhs: Level, rhs: Level) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    struct Entry: Sendable {
        var time: Timestamp
        var method: String
        var route: String?
        var status: Int
        var durationSeconds: Double
        var bytes: Int
        var requestID: String?
        var completed: Bool
    }

    let format: Format
    let minimumLevel: Level
    let output: LogBuffer

    init(format: Format, minimumLevel: Level, output: LogBuffer = LogBuffer()) {
        self.format = format
        self.minimumLevel = minimumLevel
        self.output = output
    }

    func write(_ entry: Entry) {
        let level: Level = entry.status >= 500 ? .error : .info
        guard level >= minimumLevel, minimumLevel != .off else { return }
        var line = format == .json ? json(entry, level: level) : Array(logfmt(entry, level: level).utf8)
        line.append(UInt8(ascii: "\n"))
        output.append(line)
    }

    /// A line about the server rather than a request (`msg` says what), with its fields as strings.
    func write(_ level: Level, _ message: String, _ fields: KeyValuePairs<StaticString, String>, at time: Timestamp) {
        guard level >= minimumLevel, minimumLevel != .off else { return }
        var line: [UInt8]
        switch format {
        case .json:
            var writer = JSONWriter(capacity: 256)
            writer.object { line in
                line.write("time", time)
                line.write("level", string: level.rawValue)
                line.write("msg", string: message)
                for (name, value) in fields { line.write(name, string: value) }
            }
            line = writer.bytes
        case .logfmt:
            let pairs =
                [("time", time.rfc3339), ("level", level.rawValue), ("msg", message)] + fields.map { ("\($0)", $1) }
            line = Array(pairs.map { "\($0)=\(Self.quoted($1))" }.joined(separator: " ").utf8)
        }
        line.append(UInt8(ascii: "\n"))
        output.append(line)
    }

    /// Written member by member rather than built as a `JSONObject`: this runs for every request.
    func json(_ entry: Entry, level: Level) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.object { line in
            line.write("time", entry.time)
            line.write("level", string: level.rawValue)
            line.write("msg", string: "request")
            line.write("method", string: entry.method)
            line.write("route", entry.route.map(JSONValue.string) ?? .null)
            line.write("status", integer: Int64(entry.status))
            line.member("durationMs") { Self.writeMilliseconds(entry.durationSeconds, to: &$0) }
            line.write("bytes", integer: Int64(entry.bytes))
            line.write("requestId", entry.requestID.map(JSONValue.string) ?? .null)
            if !entry.completed {
                line.write("completed", .bool(false))
            }
        }
        return writer.bytes
    }

    /// `seconds` in milliseconds with three decimals (microsecond precision), e.g. `0.042`.
    private static func writeMilliseconds(_ seconds: Double, to writer: inout JSONWriter) {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else {
            writer.write(integer: 0)
            return
        }
        let microseconds = Int64((seconds * 1_000_000).rounded())
        writer.write(integer: microseconds / 1000)
        let fraction = microseconds % 1000
        writer.bytes.append(UInt8(ascii: "."))
        writer.bytes.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        writer.bytes.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        writer.bytes.append(UInt8(ascii: "0") + UInt8(fraction % 10))
    }

    func logfmt(_ entry: Entry, level: Level) -> String {
        var fields = [
            "time=\(entry.time.rfc3339)", "level=\(level.rawValue)", "msg=request", "method=\(entry.method)",
            "route=\(Self.quoted(entry.route ?? "unmatched"))", "status=\(entry.status)",
            "durationMs=\(Self.milliseconds(entry.durationSeconds))", "bytes=\(entry.bytes)",
            "requestId=\(Self.quoted(entry.requestID ?? ""))",
        ]
        if !entry.completed { fields.append("completed=false") }
        return fields.joined(separator: " ")
    }

    private static func milliseconds(_ seconds: Double) -> String {
        var writer = JSONWriter(capacity: 16)
        writeMilliseconds(seconds, to: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty
            ? JSONValue.string(value).jsonText : value
    }
}
