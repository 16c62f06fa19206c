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
        let milliseconds = Int(millisecondsSinceEpoch.modulo(1000))
        let seconds = (millisecondsSinceEpoch - Int64(milliseconds)) / 1000
        let secondOfDay = Int(seconds.modulo(86_400))
        let days = (seconds - Int64(secondOfDay)) / 86_400
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        var text = ""
        text.reserveCapacity(24)
        text += Self.padded(Int(year), 4) + "-" + Self.padded(month, 2) + "-" + Self.padded(day, 2)
        text += "T" + Self.padded(secondOfDay / 3600, 2) + ":" + Self.padded(secondOfDay / 60 % 60, 2)
        text += ":" + Self.padded(secondOfDay % 60, 2) + "." + Self.padded(milliseconds, 3) + "Z"
        return text
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
