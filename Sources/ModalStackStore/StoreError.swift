/// Why the store could not do what was asked, by what a client can do about it.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// No space left for the database to grow: writes fail, reads still work.
        case full
        /// The database is busy, locked, read-only or its file vanished: try again later.
        case unavailable
        /// The file is not a ModalStack database or is damaged.
        case corrupt
        /// Anything else.
        case failed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
