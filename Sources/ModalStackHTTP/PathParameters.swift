/// The `{name}` segments of a matched route and their percent-decoded values, in the pattern's
/// order. A route has one or two, so a lookup compares names instead of hashing them, and the
/// router hands over the route's names and the values it captured without building a dictionary.
public struct PathParameters: Sendable, Sequence {
    private let names: [String]
    private let values: [String]

    /// No parameters.
    public init() {
        names = []
        values = []
    }

    /// `names[i]` has the value `values[i]`; the names are distinct.
    init(names: [String], values: [String]) {
        precondition(names.count == values.count, "one value for each parameter name")
        self.names = names
        self.values = values
    }

    /// The value of the segment `{name}`, or `nil` when the route has no such segment.
    public subscript(name: String) -> String? {
        names.firstIndex(of: name).map { values[$0] }
    }

    public var count: Int { names.count }

    public func makeIterator() -> some IteratorProtocol<(key: String, value: String)> {
        zip(names, values).lazy.map { (key: $0, value: $1) }.makeIterator()
    }
}
