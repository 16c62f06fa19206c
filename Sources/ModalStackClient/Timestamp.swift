import Foundation

/// The JSON coders for the server's bodies, with ``Timestamp``'s date form.
public enum ModalStackJSON {
    /// A decoder that reads dates in exactly the server's form, and refuses any other.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not a timestamp like 2026-11-29T19:05:01.123Z: \(text)")
            }
            return date
        }
        return decoder
    }

    /// An encoder that writes dates in the server's form (compact output, sorted keys).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        return encoder
    }
}

extension ModalStackJSON {
    /// The server's timestamps: RFC 3339 in UTC with milliseconds, exactly `2026-11-29T19:05:01.123Z`.
    public enum Timestamp {
        /// The date `text` stands for, or `nil` unless it is exactly in the server's form.
        public static func parse(_ text: String) -> Date? {
            let bytes = Array(text.utf8)
            guard bytes.count == 24 else { return nil }
            let separators: [Int: UInt8] = [4: 0x2D, 7: 0x2D, 10: 0x54, 13: 0x3A, 16: 0x3A, 19: 0x2E, 23: 0x5A]
            for (index, byte) in bytes.enumerated() {
                if let separator = separators[index] {
                    guard byte == separator else { return nil }
                } else if !(0x30...0x39).contains(byte) {
                    return nil
                }
            }
            func number(_ range: Range<Int>) -> Int64 {
                range.reduce(0) { $0 * 10 + Int64(bytes[$1] - 0x30) }
            }
            let (year, month, day) = (number(0..<4), number(5..<7), number(8..<10))
            let (hour, minute, second, millisecond) = (
                number(11..<13), number(14..<16), number(17..<19), number(20..<23)
            )
            guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24,
                minute < 60, second < 60
            else { return nil }
            let seconds =
                daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
            return Date(timeIntervalSince1970: Double(seconds * 1000 + millisecond) / 1000)
        }

        /// `date` in the server's form, rounded to the nearest millisecond.
        public static func format(_ date: Date) -> String {
            let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
            let (days, inDay) = floorDivide(milliseconds, 86_400_000)
            let (year, month, day) = civilFromDays(days)
            func pad(_ value: Int64, _ width: Int) -> String {
                let digits = String(value)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
            return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(inDay / 3_600_000, 2)):"
                + "\(pad(inDay / 60_000 % 60, 2)):\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
        }

        private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
            let remainder = value % divisor
            return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
        }

        private static func daysIn(month: Int64, year: Int64) -> Int64 {
            switch month {
            case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
            case 4, 6, 9, 11: 30
            default: 31
            }
        }

        // Howard Hinnant's days_from_civil and civil_from_days (proleptic Gregorian calendar).
        private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
            let y = month <= 2 ? year - 1 : year
            let era = floorDivide(y, 400).0
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            return era * 146_097 + dayOfEra - 719_468
        }

        private static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
            let z = days + 719_468
            let era = floorDivide(z, 146_097).0
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let mp = (5 * dayOfYear + 2) / 153
            let day = dayOfYear - (153 * mp + 2) / 5 + 1
            let month = mp < 10 ? mp + 3 : mp - 9
            return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
        }
    }
}
