import ModalStackCore
import Testing

@Suite("Timestamps")
struct TimestampTests {
    @Test(
        "RFC 3339 in UTC with milliseconds",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
            (Int64(1_795_978_800_999), "2026-11-29T19:00:00.999Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(-23_215_049_510_988), "1234-05-06T07:08:09.012Z"),
            (Int64(253_402_300_799_000), "9999-12-31T23:59:59.000Z"),
            (Int64(253_402_300_800_000), "10000-01-01T00:00:00.000Z"),
        ])
    func rfc3339(milliseconds: Int64, expected: String) {
        let timestamp = Timestamp(millisecondsSinceEpoch: milliseconds)
        #expect(timestamp.rfc3339 == expected)
        // Appended to what a writer already holds, as responses and log lines do.
        var bytes = Array("x".utf8)
        timestamp.appendRFC3339(to: &bytes)
        #expect(bytes == Array("x\(expected)".utf8))
    }
}

@Suite("Timestamp parsing")
struct TimestampParsingTests {
    @Test("what rfc3339 writes parses back to the same instant")
    func roundTrip() {
        for milliseconds: Int64 in [
            0, 951_782_400_123, 1_795_978_800_999, 253_402_300_799_000, 86_399_999, -62_162_121_600_000,
            1_709_208_000_000,
        ] {
            let timestamp = Timestamp(millisecondsSinceEpoch: milliseconds)
            #expect(Timestamp(rfc3339: timestamp.rfc3339) == timestamp)
        }
    }

    @Test(
        "leap days parse in leap years only (every 4th year, not every 100th, but every 400th)",
        arguments: [
            ("2024-02-29T12:00:00.000Z", true), ("2000-02-29T00:00:00.000Z", true), ("0000-02-29T00:00:00.000Z", true),
            ("2026-02-29T00:00:00.000Z", false), ("2100-02-29T00:00:00.000Z", false),
            ("2026-02-28T23:59:59.999Z", true),
        ])
    func leapDays(text: String, valid: Bool) {
        #expect((Timestamp(rfc3339: text)?.rfc3339 == text) == valid)
        #expect((Timestamp(rfc3339: text) != nil) == valid)
    }

    @Test(
        "other shapes and impossible dates are refused",
        arguments: [
            "2026-11-29T19:00:00Z", "2026-11-29 19:00:00.000Z", "2026-02-30T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
            "2026-11-29T24:00:00.000Z", "2026-11-29T19:00:00.000+01:00", "", "abcd-ef-ghTij:kl:mn.opqZ",
            "2026-02-29T00:00:00.000Z", "2100-02-29T00:00:00.000Z", "2026-04-31T00:00:00.000Z",
            "2026-00-10T00:00:00.000Z",
            "2026-11-00T00:00:00.000Z", "2026-11-29T19:60:00.000Z", "+026-11-29T19:00:00.000Z",
        ])
    func refused(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }
}
