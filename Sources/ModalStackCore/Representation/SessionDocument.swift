/// A session's JSON as the API serves it, and where its path, stack and queue arrays lie in it.
/// Those arrays are also the lists' stored form, so one rendering per change serves both the
/// answer and the store.
public struct SessionDocument: Sendable, Hashable {
    struct Lists: Hashable {
        var path = 0..<0
        var stack = 0..<0
        var queue = 0..<0
    }

    public let bytes: [UInt8]
    private let lists: Lists

    public init(_ session: Session) {
        var writer = JSONWriter()
        lists = session.writeLocatingLists(to: &writer)
        bytes = writer.bytes
    }

    /// The root path as JSON text: what `JSONWriter.write(session.path)` writes.
    public var pathText: String { String(decoding: bytes[lists.path], as: UTF8.self) }

    /// The stack as JSON text: what `JSONWriter.write(session.stack)` writes.
    public var stackText: String { String(decoding: bytes[lists.stack], as: UTF8.self) }
    /// The queue as JSON text: what `JSONWriter.write(session.queue)` writes.
    public var queueText: String { String(decoding: bytes[lists.queue], as: UTF8.self) }
}
