import Foundation

/// SplitMix64: small, fast, and the same sequence for the same seed on every platform, so that a
/// test's random data comes out the same again.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed to use: `MODALSTACK_SEED` when set (to replay a failure), a fresh one otherwise.
    public static func seed() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["MODALSTACK_SEED"], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 1...UInt64(UInt32.max))
    }
}
