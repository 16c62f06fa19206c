import ModalStackCore
import Testing

@testable import ModalStackAPI

@Suite("Access log lines")
struct AccessLogTests {
    let log = AccessLog(format: .json, minimumLevel: .info)
    let entry = AccessLog.Entry(
        time: Timestamp(millisecondsSinceEpoch: 1_767_225_600_123), method: "GET", route: "/v1/sessions/{sessionId}",
        status: 200, durationSeconds: 0.0421234, bytes: 845, requestID: "req-1", completed: true)

    @Test func jsonLineHasEveryFieldInOrder() {
        #expect(
            String(decoding: log.json(entry, level: .info), as: UTF8.self)
                == #"{"time":"2026-01-01T00:00:00.123Z","level":"info","msg":"request","method":"GET","route":"/v1/sessions/{sessionId}","status":200,"durationMs":42.123,"bytes":845,"requestId":"req-1"}"#
        )
    }

    @Test func jsonLineOfAnUnmatchedUncompletedRequest() {
        var unmatched = entry
        unmatched.method = "BREW\""
        unmatched.route = nil
        unmatched.requestID = nil
        unmatched.status = 503
        unmatched.bytes = 0
        unmatched.completed = false
        #expect(
            String(decoding: log.json(unmatched, level: .error), as: UTF8.self)
                == #"{"time":"2026-01-01T00:00:00.123Z","level":"error","msg":"request","method":"BREW\"","route":null,"status":503,"durationMs":42.123,"bytes":0,"requestId":null,"completed":false}"#
        )
    }

    @Test func logfmtLine() {
        #expect(
            log.logfmt(entry, level: .info)
                == #"time=2026-01-01T00:00:00.123Z level=info msg=request method=GET route=/v1/sessions/{sessionId} status=200 durationMs=42.123 bytes=845 requestId=req-1"#
        )
    }

    /// Milliseconds with three decimals, rounded to the microsecond; what is not a duration is 0.
    @Test(arguments: [
        (0.0, "0.000"), (0.0000004, "0.000"), (0.0000005, "0.001"), (0.001, "1.000"), (0.0999999, "100.000"),
        (12.3456789, "12345.679"), (3600.0, "3600000.000"), (-1.0, "0"), (Double.nan, "0"), (Double.infinity, "0"),
    ])
    func durations(seconds: Double, text: String) throws {
        var timed = entry
        timed.durationSeconds = seconds
        let line = try JSONParser.parse(log.json(timed, level: .info))
        #expect(line["durationMs"] == .number(text))
    }
}
