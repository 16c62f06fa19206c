/// A point in time in whole milliseconds since the Unix epoch, written as RFC 3339 UTC
/// (`2026-11-29T19:05:01.123Z`). The core never reads a clock: callers pass the time in.
public struct Timestamp: Sendable, Hashable, Comparable {
    public var millisecondsSinceEpoch: Int64

    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSinceEpoch < rhs.millisecondsSinceEpoch
    }

    /// RFC 3339 in UTC with millisecond precision.
    public var rfc3339: String {
        let fields = self.fields
        guard (0...9999).contains(fields.year) else {
            return Self.padded(Int(fields.year), 4) + "-" + Self.padded(fields.month, 2) + "-"
                + Self.padded(fields.day, 2)
                + "T" + Self.padded(fields.secondOfDay / 3600, 2) + ":" + Self.padded(fields.secondOfDay / 60 % 60, 2)
                + ":"
                + Self.padded(fields.secondOfDay % 60, 2) + "." + Self.padded(fields.milliseconds, 3) + "Z"
        }
        return String(unsafeUninitializedCapacity: 24) { buffer in
            fields.write(into: buffer)
            return 24
        }
    }

    /// Appends ``rfc3339``'s text to `bytes` without making a `String` first: timestamps are in
    /// every response, stored row and log line.
    public func appendRFC3339(to bytes: inout [UInt8]) {
        let fields = self.fields
        guard (0...9999).contains(fields.year) else { return bytes.append(contentsOf: rfc3339.utf8) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            fields.write(into: buffer)
            bytes.append(contentsOf: buffer)
        }
    }

    private struct Fields {
        var year: Int64
        var month: Int
        var day: Int
        var secondOfDay: Int
        var milliseconds: Int

        /// `YYYY-MM-DDTHH:MM:SS.mmmZ` into the first 24 bytes of `buffer`; for years 0–9999.
        func write(into buffer: UnsafeMutableBufferPointer<UInt8>) {
            func digit(_ value: Int, at offset: Int) {
                buffer[offset] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
            }
            func twoDigits(_ value: Int, at offset: Int) {
                digit(value / 10, at: offset)
                digit(value % 10, at: offset + 1)
            }
            twoDigits(Int(year) / 100, at: 0)
            twoDigits(Int(year) % 100, at: 2)
            twoDigits(month, at: 5)
            twoDigits(day, at: 8)
            twoDigits(secondOfDay / 3600, at: 11)
            twoDigits(secondOfDay / 60 % 60, at: 14)
            twoDigits(secondOfDay % 60, at: 17)
            digit(milliseconds / 100, at: 20)
            twoDigits(milliseconds % 100, at: 21)
            (buffer[4], buffer[7], buffer[10]) = (UInt8(ascii: "-"), UInt8(ascii: "-"), UInt8(ascii: "T"))
            (buffer[13], buffer[16], buffer[19], buffer[23]) = (
                UInt8(ascii: ":"), UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "Z")
            )
        }
    }

    private var fields: Fields {
        let milliseconds = Int(millisecondsSinceEpoch.modulo(1000))
        let seconds = (millisecondsSinceEpoch - Int64(milliseconds)) / 1000
        let secondOfDay = Int(seconds.modulo(86_400))
        let (year, month, day) = Self.civilDate(daysSinceEpoch: (seconds - Int64(secondOfDay)) / 86_400)
        return Fields(year: year, month: month, day: day, secondOfDay: secondOfDay, milliseconds: milliseconds)
    }

    /// Parses the form `rfc3339` writes (`YYYY-MM-DDTHH:MM:SS.mmmZ`, years 0000–9999); nil otherwise.
    public init?(rfc3339 text: String) {
        var text = text
        guard let milliseconds = text.withUTF8(Self.millisecondsSinceEpoch(rfc3339:)) else { return nil }
        self.init(millisecondsSinceEpoch: milliseconds)
    }

    private static func millisecondsSinceEpoch(rfc3339 bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millisecond = number(20..<23), (1...12).contains(month), day >= 1,
            day <= daysIn(month: month, of: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
    }

    /// The number of days of `month` (1–12) in `year` of the proleptic Gregorian calendar.
    private static func daysIn(month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Howard Hinnant's civil-to-days algorithm (proleptic Gregorian calendar).
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    private static func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension Int64 {
    fileprivate func modulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
