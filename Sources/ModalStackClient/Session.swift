import Foundation

/// The navigation state of one app session: the modals on screen and waiting, and the screens pushed
/// inside the root view and inside each container modal.
public struct Session: Sendable, Hashable, Identifiable {
    /// The session's id, chosen by its client: 1–128 characters of `[A-Za-z0-9._~-]`.
    public var id: String
    /// 1 when first written, +1 on every change; the entity tag is `"<version>"`.
    public var version: Int64
    /// When the session was first written; one made again under its id after expiry or deletion has a later one.
    public var createdAt: Date
    /// The time of the last change.
    public var updatedAt: Date
    /// The root level's pushed screens, the first pushed first (``PathLevel/root``).
    public var path: [PathEntry]
    /// The presented entries, bottom first; at most one is alert-like, and then it is the last.
    public var stack: [Presentation]
    /// The last element of `stack`, what the user sees.
    public var top: Presentation?
    /// The presentations waiting, the next to be promoted first.
    public var queue: [Presentation]
    /// Seconds the session lives after its last change.
    public var ttl: Int64
    /// When the session expires unless it changes again.
    public var expiresAt: Date

    /// A session with these members; `top` is the last of `stack`.
    public init(
        id: String, version: Int64, createdAt: Date, updatedAt: Date, path: [PathEntry] = [], stack: [Presentation],
        queue: [Presentation], ttl: Int64, expiresAt: Date
    ) {
        self.id = id
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.path = path
        self.stack = stack
        self.top = stack.last
        self.queue = queue
        self.ttl = ttl
        self.expiresAt = expiresAt
    }
}

extension Session: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, version, createdAt, updatedAt, path, stack, top, queue, ttl, expiresAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        path = try container.decode([PathEntry].self, forKey: .path)
        stack = try container.decode([Presentation].self, forKey: .stack)
        top = try container.decode(Presentation?.self, forKey: .top)
        queue = try container.decode([Presentation].self, forKey: .queue)
        ttl = try container.decode(Int64.self, forKey: .ttl)
        expiresAt = try container.decode(Date.self, forKey: .expiresAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(path, forKey: .path)
        try container.encode(stack, forKey: .stack)
        try container.encode(top, forKey: .top)
        try container.encode(queue, forKey: .queue)
        try container.encode(ttl, forKey: .ttl)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}

extension Session {
    /// The path of `level`: the root's, or that of the container presentation with that id on the
    /// stack; `nil` when the stack holds no such container.
    public func path(of level: NavigationLevel) -> [PathEntry]? {
        switch level {
        case .root: path
        case .presentation(let id): stack.first { $0.id == id && !$0.style.kind.isAlertLike }?.path
        }
    }

    /// The level a push or a pop that names none goes to: the top-most container on the stack
    /// (beneath an alert-like top), else the root.
    public var defaultLevel: NavigationLevel {
        stack.last { !$0.style.kind.isAlertLike }.map { .presentation($0.id) } ?? .root
    }

    /// Runs `edit` on `level`'s path; false when there is no such level (see ``path(of:)``) or
    /// `edit` returns false.
    mutating func editPath(of level: NavigationLevel, _ edit: (inout [PathEntry]) -> Bool) -> Bool {
        switch level {
        case .root:
            return edit(&path)
        case .presentation(let id):
            guard let index = stack.firstIndex(where: { $0.id == id && !$0.style.kind.isAlertLike }) else {
                return false
            }
            return edit(&stack[index].path)
        }
    }
}

extension Session {
    /// Whether this state is newer than `other`: a later version of the same session, or a session
    /// made again under the same id after `other`'s expired or was deleted (a later `createdAt`,
    /// whatever its version). An older incarnation's state, arriving late, never replaces a newer one.
    public func supersedes(_ other: Session?) -> Bool {
        guard let other else { return true }
        guard createdAt == other.createdAt else { return createdAt > other.createdAt }
        return version > other.version
    }
}
