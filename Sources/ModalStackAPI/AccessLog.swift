import Glibc
import ModalStackCore

/// One structured line per answered request on standard output: JSON by default, or logfmt.
/// Nothing secret is written: no headers, no bodies, no query strings.
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

    func write(_ entry: Entry) {
        let level: Level = entry.status >= 500 ? .error : .info
        guard level >= minimumLevel, minimumLevel != .off else { return }
        var line = format == .json ? json(entry, level: level) : Array(logfmt(entry, level: level).utf8)
        line.append(UInt8(ascii: "\n"))
        _ = line.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }

    /// Written piece by piece rather than through a `JSONObject`: this runs for every request.
    /// Only the method, the route and the request id can need escaping.
    private func json(_ entry: Entry, level: Level) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.writeVerbatim(#"{"time":"#)
        writer.write(entry.time)
        writer.writeVerbatim(#","level":""#)
        writer.bytes.append(contentsOf: level.rawValue.utf8)
        writer.writeVerbatim(#"","msg":"request","method":"#)
        writer.write(.string(entry.method))
        writer.writeVerbatim(#","route":"#)
        writer.write(entry.route.map(JSONValue.string) ?? .null)
        writer.writeVerbatim(#","status":"#)
        writer.bytes.append(contentsOf: String(entry.status).utf8)
        writer.writeVerbatim(#","durationMs":"#)
        Self.appendMilliseconds(entry.durationSeconds, to: &writer.bytes)
        writer.writeVerbatim(#","bytes":"#)
        writer.bytes.append(contentsOf: String(entry.bytes).utf8)
        writer.writeVerbatim(#","requestId":"#)
        writer.write(entry.requestID.map(JSONValue.string) ?? .null)
        writer.writeVerbatim(entry.completed ? "}" : #","completed":false}"#)
        return writer.bytes
    }

    /// `seconds` in milliseconds with three decimals (microsecond precision), e.g. `0.042`.
    private static func appendMilliseconds(_ seconds: Double, to bytes: inout [UInt8]) {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        let microseconds = Int((seconds * 1_000_000).rounded())
        bytes.append(contentsOf: String(microseconds / 1000).utf8)
        let fraction = microseconds % 1000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction % 10))
    }

    private func logfmt(_ entry: Entry, level: Level) -> String {
        var fields = [
            "time=\(entry.time.rfc3339)", "level=\(level.rawValue)", "msg=request", "method=\(entry.method)",
            "route=\(Self.quoted(entry.route ?? "unmatched"))", "status=\(entry.status)",
            "duration_ms=\(Self.milliseconds(entry.durationSeconds))", "bytes=\(entry.bytes)",
            "request_id=\(Self.quoted(entry.requestID ?? ""))",
        ]
        if !entry.completed { fields.append("completed=false") }
        return fields.joined(separator: " ")
    }

    private static func milliseconds(_ seconds: Double) -> String {
        var text: [UInt8] = []
        appendMilliseconds(seconds, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    private static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty ? JSONValue.string(value).jsonText : value
    }
}
