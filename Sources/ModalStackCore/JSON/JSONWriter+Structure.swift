/// Objects and arrays that place their own braces, brackets, commas and colons, so that a document
/// written through them is well formed whatever the members and elements are.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.object { object in
///     object.write("id", string: "s1")
///     object.write("version", integer: 3)
///     object.array("stack") { stack in
///         stack.object { presentation in presentation.write("id", string: "p1") }
///     }
/// }
/// // writer.bytes holds {"id":"s1","version":3,"stack":[{"id":"p1"}]}
/// ```
///
/// Inlinable, so that callers in other modules get the writes specialized too; the closures are
/// non-escaping and allocate nothing.
extension JSONWriter {
    /// Appends an object whose members `body` writes.
    @inlinable
    public mutating func object(_ body: (inout JSONObjectWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        // The object borrows the bytes by swapping, not copying: no reference is shared, so
        // appending to them never copies the buffer.
        var object = JSONObjectWriter()
        swap(&self, &object.writer)
        body(&object)
        swap(&self, &object.writer)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends an array whose elements `body` writes.
    @inlinable
    public mutating func array(_ body: (inout JSONArrayWriter) -> Void) {
        bytes.append(UInt8(ascii: "["))
        var array = JSONArrayWriter()
        swap(&self, &array.writer)
        body(&array)
        swap(&self, &array.writer)
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `"key":`, after a comma if `comma`, with one capacity check; the key as it is.
    @inlinable
    mutating func appendKey(_ key: StaticString, afterComma comma: Bool) {
        key.withUTF8Buffer { key in
            appendBytes(maximumCount: key.count + 4) { start in
                var next = start
                if comma {
                    next.initialize(to: UInt8(ascii: ","))
                    next += 1
                }
                next.initialize(to: UInt8(ascii: "\""))
                next += 1
                if let text = key.baseAddress {
                    next.initialize(from: text, count: key.count)
                    next += key.count
                }
                next.initialize(to: UInt8(ascii: "\""))
                (next + 1).initialize(to: UInt8(ascii: ":"))
                return next + 2 - start
            }
        }
    }
}

/// The members of an object being written by ``JSONWriter/object(_:)``.
///
/// Keys are static text written as it is, without escaping: they must not need any. Each value
/// goes through the ``JSONWriter`` write of its type.
public struct JSONObjectWriter {
    @usableFromInline var writer: JSONWriter
    @usableFromInline var isEmpty: Bool

    @inlinable
    init() {
        writer = JSONWriter(bytes: [])
        isEmpty = true
    }

    /// Appends a member whose value `value` writes: exactly one value.
    @inlinable
    public mutating func member(_ key: StaticString, _ value: (inout JSONWriter) -> Void) {
        writer.appendKey(key, afterComma: !isEmpty)
        isEmpty = false
        value(&writer)
    }

    @inlinable
    public mutating func write(_ key: StaticString, _ value: JSONValue) {
        member(key) { $0.write(value) }
    }

    @inlinable
    public mutating func write(_ key: StaticString, string: String) {
        member(key) { $0.write(string: string) }
    }

    @inlinable
    public mutating func write(_ key: StaticString, integer: Int64) {
        member(key) { $0.write(integer: integer) }
    }

    /// A time as its RFC 3339 string, or `null`.
    @inlinable
    public mutating func write(_ key: StaticString, _ time: Timestamp?) {
        member(key) { $0.write(time) }
    }

    @inlinable
    public mutating func write(_ key: StaticString, _ value: some JSONWritable) {
        member(key) { value.write(to: &$0) }
    }

    @inlinable
    public mutating func write(_ key: StaticString, _ values: [some JSONWritable]) {
        member(key) { $0.write(values) }
    }

    @inlinable
    public mutating func write(_ key: StaticString, strings: [String]) {
        member(key) { $0.write(strings: strings) }
    }

    /// Appends a member whose value is an object with the members `body` writes.
    @inlinable
    public mutating func object(_ key: StaticString, _ body: (inout JSONObjectWriter) -> Void) {
        member(key) { $0.object(body) }
    }

    /// Appends a member whose value is an array with the elements `body` writes.
    @inlinable
    public mutating func array(_ key: StaticString, _ body: (inout JSONArrayWriter) -> Void) {
        member(key) { $0.array(body) }
    }

    /// Appends a member whose key is made at run time (an id): the key is escaped.
    public mutating func member(escaping key: String, _ value: (inout JSONWriter) -> Void) {
        if !isEmpty { writer.bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        writer.write(string: key)
        writer.bytes.append(UInt8(ascii: ":"))
        value(&writer)
    }

    /// Appends every member of `object` in its order, keys escaped.
    public mutating func write(membersOf object: JSONObject) {
        for member in object.members {
            self.member(escaping: member.key) { $0.write(member.value) }
        }
    }
}

/// The elements of an array being written by ``JSONWriter/array(_:)``.
public struct JSONArrayWriter {
    @usableFromInline var writer: JSONWriter
    @usableFromInline var isEmpty: Bool

    @inlinable
    init() {
        writer = JSONWriter(bytes: [])
        isEmpty = true
    }

    /// Appends an element that `value` writes: exactly one value.
    @inlinable
    public mutating func element(_ value: (inout JSONWriter) -> Void) {
        if !isEmpty { writer.bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        value(&writer)
    }

    /// Appends an element that is an object with the members `body` writes.
    @inlinable
    public mutating func object(_ body: (inout JSONObjectWriter) -> Void) {
        element { $0.object(body) }
    }

    /// Appends an element that is an array with the elements `body` writes.
    @inlinable
    public mutating func array(_ body: (inout JSONArrayWriter) -> Void) {
        element { $0.array(body) }
    }
}
