import Synchronization

/// The id that ties a request to its response and its log lines (``HTTPRequest/requestID``).
///
/// A client's (or a proxy's) id is kept when it is 1–128 visible ASCII characters (0x21–0x7E), so it
/// can be logged and echoed as is; anything else is replaced by a fresh one: 32 lowercase hex
/// characters.
///
/// Fresh ids must be unique, not secret: each is a per-process counter scrambled with a random key
/// drawn once at start (a bijection, so no two requests of a process share an id, and ids of
/// different processes differ), which costs no system call per request.
enum RequestID {
    /// The longest incoming id that is kept.
    static let maxLength = 128

    private static let counter = Atomic<UInt64>(0)
    private static let key: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()

    /// `incoming` when it is acceptable, otherwise a new id.
    static func resolve(incoming: String?) -> String {
        if let incoming, isAcceptable(incoming) { return incoming }
        return generate()
    }

    /// Whether `candidate` is 1–128 visible ASCII characters.
    static func isAcceptable(_ candidate: String) -> Bool {
        let utf8 = candidate.utf8
        return (1...maxLength).contains(utf8.count) && utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// The next id of this process: 32 lowercase hex characters.
    static func generate() -> String {
        let count = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let halves = (scramble(count ^ key.0), scramble(count &+ key.1))
        return String(unsafeUninitializedCapacity: 32) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for index in 0..<16 {
                let shift = UInt64(60 - index * 4)
                buffer[index] = digits.utf8Start[Int(halves.0 >> shift & 0xF)]
                buffer[16 + index] = digits.utf8Start[Int(halves.1 >> shift & 0xF)]
            }
            return 32
        }
    }

    /// SplitMix64's finalizer: a bijection on 64-bit values that spreads every input bit.
    private static func scramble(_ value: UInt64) -> UInt64 {
        var mixed = value &+ 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
