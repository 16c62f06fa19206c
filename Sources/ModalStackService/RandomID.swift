import Glibc

/// Unguessable, URL-safe identifiers: 144 random bits from the kernel (getrandom) as 24 base64url characters.
public enum RandomID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func make() -> String {
        // 144 random bits from one getrandom(2) call (glibc's arc4random_buf), each 3 bytes written
        // as four 6-bit characters.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 18) { random in
            arc4random_buf(random.baseAddress!, 18)
            return String(unsafeUninitializedCapacity: 24) { buffer in
                for group in 0..<6 {
                    let bits =
                        Int(random[group * 3]) << 16 | Int(random[group * 3 + 1]) << 8 | Int(random[group * 3 + 2])
                    for index in 0..<4 {
                        buffer[group * 4 + index] = alphabet[bits >> (18 - 6 * index) & 0x3F]
                    }
                }
                return 24
            }
        }
    }
}
