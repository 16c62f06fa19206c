import ModalStackCore
import Testing

@Suite("Timestamps")
struct TimestampTests {
    @Test("RFC 3339 in UTC with milliseconds", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
        (Int64(1_795_978_800_999), "2026-11-29T19:00:00.999Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
        (Int64(253_402_300_799_000), "9999-12-31T23:59:59.000Z"),
    ])
    func rfc3339(milliseconds: Int64, expected: String) {
        #expect(Timestamp(millisecondsSinceEpoch: milliseconds).rfc3339 == expected)
    }
}
