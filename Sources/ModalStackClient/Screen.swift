import Foundation

/// What an app draws for a destination: a presented modal, or a screen pushed inside a level. One
/// view builder draws both (see `View.modalStack(_:destination:dialog:)`), switching on
/// ``destination`` and reading ``payload``, as an app's navigation enum would.
public enum Screen: Sendable, Hashable, Identifiable {
    /// A sheet, full-screen cover or popover of the stack.
    case presented(Presentation)
    /// An entry of a path, pushed inside the root view or a container presentation.
    case pushed(PathEntry)

    /// The presentation's or the entry's id.
    public var id: String {
        switch self {
        case .presented(let presentation): presentation.id
        case .pushed(let entry): entry.id
        }
    }

    /// The screen name the app maps to a view.
    public var destination: String {
        switch self {
        case .presented(let presentation): presentation.destination
        case .pushed(let entry): entry.destination
        }
    }

    /// The identity: in the session for a presentation, in its path for an entry.
    public var key: String {
        switch self {
        case .presented(let presentation): presentation.key
        case .pushed(let entry): entry.key
        }
    }

    /// What the destination needs to show.
    public var payload: JSONObject {
        switch self {
        case .presented(let presentation): presentation.payload
        case .pushed(let entry): entry.payload
        }
    }

    /// The payload as the app's own type: `try screen.payload(as: Item.self)`.
    public func payload<Payload: Decodable>(as type: Payload.Type = Payload.self) throws -> Payload {
        try payload.decode(as: type)
    }
}
