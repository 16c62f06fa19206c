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
        func append(_ text: String) { writer.bytes.append(contentsOf: text.utf8) }
        append(#"{"time":""#)
        append(entry.time.rfc3339)
        append(#"","level":""#)
        append(level.rawValue)
        append(#"","msg":"request","method":"#)
        writer.write(.string(entry.method))
        append(#","route":"#)
        writer.write(entry.route.map(JSONValue.string) ?? .null)
        append(#","status":"#)
        append(String(entry.status))
        append(#","durationMs":"#)
        writer.write(JSONValue((entry.durationSeconds * 1_000_000).rounded() / 1000))
        append(#","bytes":"#)
        append(String(entry.bytes))
        append(#","requestId":"#)
        writer.write(entry.requestID.map(JSONValue.string) ?? .null)
        if !entry.completed { append(#","completed":false"#) }
        append("}")
        return writer.bytes
    }

    private func logfmt(_ entry: Entry, level: Level) -> String {
        var fields = [
            "time=\(entry.time.rfc3339)", "level=\(level.rawValue)", "msg=request", "method=\(entry.method)",
            "route=\(Self.quoted(entry.route ?? "unmatched"))", "status=\(entry.status)",
            "duration_ms=\(JSONValue((entry.durationSeconds * 1_000_000).rounded() / 1000).jsonText)", "bytes=\(entry.bytes)",
            "request_id=\(Self.quoted(entry.requestID ?? ""))",
        ]
        if !entry.completed { fields.append("completed=false") }
        return fields.joined(separator: " ")
    }

    private static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty ? JSONValue.string(value).jsonText : value
    }
}
