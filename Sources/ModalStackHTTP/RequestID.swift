/// The id that ties a request to its response and its log lines (``HTTPRequest/requestID``).
///
/// A client's (or a proxy's) id is kept when it is 1–128 visible ASCII characters (0x21–0x7E), so it
/// can be logged and echoed as is; anything else is replaced by a fresh one: 16 random bytes as 32
/// lowercase hex characters.
enum RequestID {
    /// The longest incoming id that is kept.
    static let maxLength = 128

    /// `incoming` when it is acceptable, otherwise a new id.
    static func resolve(incoming: String?) -> String {
        if let incoming, isAcceptable(incoming) { return incoming }
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }

    /// Whether `candidate` is 1–128 visible ASCII characters.
    static func isAcceptable(_ candidate: String) -> Bool {
        let utf8 = candidate.utf8
        return (1...maxLength).contains(utf8.count) && utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// 16 random bytes as 32 lowercase hex characters.
    static func generate(using generator: inout some RandomNumberGenerator) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let halves = [generator.next() as UInt64, generator.next() as UInt64]
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for half in halves {
            for shift in stride(from: 60, through: 0, by: -4) {
                text.append(digits[Int((half >> UInt64(shift)) & 0xF)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
}
