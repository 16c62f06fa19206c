import Foundation

// Payloads and results as the app's own Codable types: made from any Encodable, read as any
// Decodable, through the same JSON coders as the server's bodies (``ModalStackJSON``), so a `Date`
// in a payload is written like every other date the server sends: `2026-11-29T19:05:01.123Z`.

extension JSONValue {
    /// The JSON `value` encodes to, with ``ModalStackJSON/makeEncoder()``'s settings: a `Date`
    /// becomes a ``ModalStackJSON/Timestamp`` string (rounded to the millisecond), an `Int` an ``integer(_:)``.
    ///
    /// A `JSONValue` (or a ``JSONObject``) is taken as it is.
    ///
    /// - Throws: `EncodingError` when `value` cannot be encoded, such as a NaN or infinite `Double`.
    public init(encoding value: some Encodable) throws {
        if let value = value as? JSONValue {
            self = value
        } else if let object = value as? JSONObject {
            self = .object(object)
        } else {
            let data = try ModalStackJSON.makeEncoder().encode(value)
            self = try ModalStackJSON.makeDecoder().decode(JSONValue.self, from: data)
        }
    }

    /// The value read as `type`, with ``ModalStackJSON/makeDecoder()``'s settings: a `Date` is
    /// read from a ``ModalStackJSON/Timestamp`` string (and only from one).
    ///
    /// ```swift
    /// struct Profile: Decodable { var userId: Int }
    /// let profile = try presentation.result?.decode(as: Profile.self)
    /// ```
    ///
    /// - Throws: `DecodingError` when the value does not fit `type`; `EncodingError` when it holds
    ///   a NaN or infinite double, which JSON cannot carry.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        if let value = self as? T { return value }
        let data = try ModalStackJSON.makeEncoder().encode(self)
        return try ModalStackJSON.makeDecoder().decode(type, from: data)
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The JSON object `value` encodes to, as ``JSONValue/init(encoding:)`` makes it: a payload
    /// from the app's own type.
    ///
    /// ```swift
    /// struct Profile: Encodable { var userId: Int; var since: Date }
    /// let payload = try JSONObject(encoding: Profile(userId: 42, since: .now))
    /// ```
    ///
    /// - Throws: `EncodingError.invalidValue` when `value` encodes to something other than an
    ///   object (an array, a string, a number…), as a payload must be one; `EncodingError` when
    ///   `value` cannot be encoded.
    public init(encoding value: some Encodable) throws {
        let json = try JSONValue(encoding: value)
        guard case .object(let object) = json else {
            let message =
                "A payload must encode to a JSON object, not \(json.kindPhrase): this \(Swift.type(of: value)) "
                + "encodes to \(json)"
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: message))
        }
        self = object
    }

    /// The object read as `type`, as ``JSONValue/decode(as:)`` reads it.
    ///
    /// - Throws: `DecodingError` when the object does not fit `type`.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONValue.object(self).decode(as: type)
    }
}
