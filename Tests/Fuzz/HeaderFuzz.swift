import ModalStackCore
import ModalStackHTTP
import ModalStackStore

@testable import ModalStackAPI

/// The request headers and query values the API reads itself: `Prefer`, `If-Match`,
/// `If-None-Match`, `Last-Event-ID`, a session list cursor and a timestamp, as NUL-separated
/// values. What parses keeps its meaning when written again: an entity tag list names the
/// versions it was read with, a cursor and a timestamp read back as themselves.
enum HeaderFuzz {
    static func check(_ input: [UInt8]) {
        let values = input.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        func value(_ index: Int) -> String { index < values.count ? values[index] : "" }
        let request = HTTPRequest(
            method: "GET", target: "/",
            headers: [
                "Prefer": value(0), "If-Match": value(1), "If-None-Match": value(2), "Last-Event-ID": value(3),
            ])
        _ = request.preference("wait")
        _ = request.preference("return")
        _ = try? request.lastEventID()
        for condition in [try? request.ifMatch(), try? request.ifNoneMatch()] {
            guard case .versions(let strong, let weak)? = condition else { continue }
            for version in strong {
                let written = EntityTag.of(version: version)
                guard (try? EntityTag.condition(written, name: "If-Match"))?.matches(version, weakly: false) == true
                else {
                    finding("the entity tag \(written) does not match version \(version)", input: input)
                }
            }
            for version in weak {
                let written = "W/" + EntityTag.of(version: version)
                guard (try? EntityTag.condition(written, name: "If-None-Match"))?.matches(version, weakly: true) == true
                else {
                    finding("the weak tag \(written) does not match version \(version) weakly", input: input)
                }
            }
        }
        if let cursor = try? SessionListCursor.parse(value(4)) {
            let session = Session(
                id: cursor.id, version: 1, createdAt: cursor.updatedAt, updatedAt: cursor.updatedAt, stack: [])
            guard (try? SessionListCursor.parse(SessionListCursor.format(session))) == cursor else {
                finding("the cursor \(value(4)) does not read back", input: input)
            }
        }
        if let timestamp = Timestamp(rfc3339: value(5)) {
            guard Timestamp(rfc3339: timestamp.rfc3339) == timestamp else {
                finding("the timestamp \(value(5)) reads as \(timestamp.rfc3339), which reads otherwise", input: input)
            }
        }
    }
}
