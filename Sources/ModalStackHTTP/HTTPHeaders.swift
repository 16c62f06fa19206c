/// HTTP header fields in the order they were sent or added.
///
/// Names compare case-insensitively (ASCII); a name may occur several times.
public struct HTTPHeaders: Sendable, Equatable {
    /// The fields, in order.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates headers from (name, value) pairs, keeping their order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// The number of fields (repeated names count once per occurrence).
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The value of the first field named `name` (case-insensitive), or `nil`.
    public subscript(name: String) -> String? {
        fields.first { Self.namesMatch($0.name, name) }?.value
    }

    /// The values of every field named `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// Whether a field named `name` is present (case-insensitive).
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// Appends a field, keeping any existing fields with the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` by a single field with `value`, at the position of the first.
    public mutating func set(_ name: String, _ value: String) {
        if let first = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) {
            fields[first] = (name, value)
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if Self.namesMatch(fields[index].name, name) {
                    fields.remove(at: index)
                } else {
                    index = fields.index(after: index)
                }
            }
        } else {
            fields.append((name, value))
        }
    }

    /// Removes every field named `name` (case-insensitive).
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// ASCII case-insensitive comparison without allocating lowercased copies; reads the names'
    /// bytes in place (a write request looks up a dozen names).
    static func namesMatch(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { lhs in
            rhs.withUTF8 { rhs in
                for index in lhs.indices where lhs[index] != rhs[index] {
                    guard asciiLowercased(lhs[index]) == asciiLowercased(rhs[index]) else { return false }
                }
                return true
            }
        }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
    }
}

extension HTTPHeaders: Sequence {
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension HTTPHeaders: ExpressibleByDictionaryLiteral {
    /// `["Content-Type": "application/json"]`; the literal's order is kept.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { (name: $0.0, value: $0.1) })
    }
}

extension HTTPHeaders: CustomStringConvertible {
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}
