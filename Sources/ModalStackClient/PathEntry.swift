import Foundation

/// A screen pushed inside a level: the root view's navigation stack, or a container presentation's.
public struct PathEntry: Codable, Sendable, Hashable, Identifiable {
    /// Made by the server: 24 base64url characters.
    public var id: String
    /// The screen name the app maps to a view.
    public var destination: String
    /// The identity in its path, unique within it; the destination unless the push named one.
    public var key: String
    /// What the destination needs to show.
    public var payload: JSONObject
    /// When it was pushed.
    public var pushedAt: Date

    /// An entry with these members; `key` defaults to `destination`, as the server's does.
    public init(id: String, destination: String, key: String? = nil, payload: JSONObject = [:], pushedAt: Date) {
        self.id = id
        self.destination = destination
        self.key = key ?? destination
        self.payload = payload
        self.pushedAt = pushedAt
    }

    /// The payload read as the app's own type, with the server's date form (see
    /// ``JSONValue/decode(as:)``).
    ///
    /// - Throws: `DecodingError` when the payload does not fit `type`.
    public func payload<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try payload.decode(as: type)
    }
}

/// A level of a session's navigation, which has a path: the root view, or a container presentation
/// (a sheet, full-screen cover or popover) on the stack. Alert-like presentations have none.
///
/// On the wire it is a string: `"root"`, or the presentation's id (24 characters, never `root`).
public enum NavigationLevel: Sendable, Hashable, CustomStringConvertible {
    /// The root view: ``Session/path``.
    case root
    /// The container presentation with this id: its ``Presentation/path``.
    case presentation(String)

    /// The level as the server names it.
    public var description: String {
        switch self {
        case .root: "root"
        case .presentation(let id): id
        }
    }

    /// The level the server names `name`.
    public init(_ name: String) {
        self = name == "root" ? .root : .presentation(name)
    }
}

extension NavigationLevel: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
