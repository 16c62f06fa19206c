import Foundation

/// The modal navigation state of one app session.
public struct Session: Sendable, Hashable, Identifiable {
    public var id: String
    /// 1 when first written, +1 on every change; the entity tag is `"<version>"`.
    public var version: Int64
    public var createdAt: Date
    /// The time of the last change.
    public var updatedAt: Date
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

    public init(
        id: String, version: Int64, createdAt: Date, updatedAt: Date, stack: [Presentation], queue: [Presentation],
        ttl: Int64, expiresAt: Date
    ) {
        self.id = id
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.stack = stack
        self.top = stack.last
        self.queue = queue
        self.ttl = ttl
        self.expiresAt = expiresAt
    }
}

extension Session: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, version, createdAt, updatedAt, stack, top, queue, ttl, expiresAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        version = try container.decode(Int64.self, forKey: .version)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
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
        try container.encode(stack, forKey: .stack)
        try container.encode(top, forKey: .top)
        try container.encode(queue, forKey: .queue)
        try container.encode(ttl, forKey: .ttl)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}
