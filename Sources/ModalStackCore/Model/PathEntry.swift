/// A screen pushed inside a level, as `NavigationStack(path:)` holds it: what to show
/// (`destination`, `payload`) and its identity within the path (`key`).
public struct PathEntry: Sendable, Hashable {
    /// Server-made, unguessable and URL-safe, like a presentation's.
    public var id: String
    public var destination: String
    /// Unique within one path; by default the destination.
    public var key: String
    public var payload: JSONObject
    public var pushedAt: Timestamp

    public init(id: String, destination: String, key: String, payload: JSONObject = [:], pushedAt: Timestamp) {
        self.id = id
        self.destination = destination
        self.key = key
        self.payload = payload
        self.pushedAt = pushedAt
    }
}

/// Where a push path lives: the root level (the screen beneath every modal) or a container
/// presentation on the stack. Its wire name is `root` or the presentation's id.
public enum NavigationLevel: Sendable, Hashable, CustomStringConvertible {
    case root
    case presentation(id: String)

    public static let rootName = "root"

    public init(name: String) {
        self = name == Self.rootName ? .root : .presentation(id: name)
    }

    public var name: String {
        switch self {
        case .root: Self.rootName
        case .presentation(let id): id
        }
    }

    public var description: String { name }

    /// How messages name the level's path: "the root path", "the path of presentation X".
    public var pathName: String {
        switch self {
        case .root: "the root path"
        case .presentation(let id): "the path of presentation \(id)"
        }
    }
}

extension Session {
    /// The path of a level; empty for a presentation that is not a container on the stack.
    public func path(of level: NavigationLevel) -> [PathEntry] {
        switch level {
        case .root: path
        case .presentation(let id): stack.first { $0.id == id }?.path ?? []
        }
    }

    /// Sets the path of the root or of a presentation on the stack; false when the level is not there.
    @discardableResult
    mutating func setPath(_ entries: [PathEntry], of level: NavigationLevel) -> Bool {
        switch level {
        case .root:
            path = entries
            return true
        case .presentation(let id):
            guard let index = stack.firstIndex(where: { $0.id == id }) else { return false }
            stack[index].path = entries
            return true
        }
    }

    /// The level a push or pop that names none acts on: the top-most container on the stack
    /// (beneath an alert-like top), else the root.
    public var topLevel: NavigationLevel {
        stack.last { !$0.style.isAlertLike }.map { .presentation(id: $0.id) } ?? .root
    }

    /// Every level there is now, root first, then each container on the stack bottom-up.
    public var levels: [NavigationLevel] {
        [.root] + stack.filter { !$0.style.isAlertLike }.map { .presentation(id: $0.id) }
    }

    /// The level holding the entry with this id and the entry's position in its path.
    public func pathEntry(id: String) -> (level: NavigationLevel, position: Int, entry: PathEntry)? {
        for level in levels {
            let entries = path(of: level)
            if let position = entries.firstIndex(where: { $0.id == id }) {
                return (level, position, entries[position])
            }
        }
        return nil
    }
}
