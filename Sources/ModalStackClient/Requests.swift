import Foundation

/// One button of an alert or confirmation dialog, as asked for; `role` defaults to `default`.
public struct AlertButtonRequest: Codable, Sendable, Hashable {
    /// The button's id: 1–64 characters, unique among its alert's buttons; the answer's `buttonId` names it.
    public var id: String
    /// The text the button shows: 1–100 characters, no control characters.
    public var label: String
    /// `default`, `cancel` or `destructive`; `nil` sends none, and the server makes it `default`.
    public var role: AlertButton.Role?

    /// A button to ask for; without a `role` the server makes it `default`.
    public init(id: String, label: String, role: AlertButton.Role? = nil) {
        self.id = id
        self.label = label
        self.role = role
    }
}

/// What to show: the body of `POST …/presentations`, and an entry of a stack replacement.
///
/// Optional members left `nil` are not sent, so the server applies its defaults.
public struct PresentRequest: Sendable, Hashable {
    /// The style to present with and its fields; `nil` members take the server's defaults.
    public enum Style: Sendable, Hashable {
        /// Detents default to `[]`, `interactiveDismissDisabled` to `false`.
        case sheet(detents: [ModalStyle.Detent]? = nil, interactiveDismissDisabled: Bool? = nil)
        case fullScreenCover
        case popover
        /// Without `buttons` the alert gets one: OK, role `default`.
        case alert(title: String, message: String? = nil, buttons: [AlertButtonRequest]? = nil)
        case confirmationDialog(title: String, message: String? = nil, buttons: [AlertButtonRequest])
        case dialog
        /// `completed` defaults to 0.
        case progress(message: String? = nil, total: Double, completed: Double? = nil)

        /// The style's name.
        public var kind: ModalStyle.Kind {
            switch self {
            case .sheet: .sheet
            case .fullScreenCover: .fullScreenCover
            case .popover: .popover
            case .alert: .alert
            case .confirmationDialog: .confirmationDialog
            case .dialog: .dialog
            case .progress: .progress
            }
        }
    }

    /// What `POST …/presentations` does when the stacking rules block the present.
    public enum WhenBlocked: String, Codable, Sendable, Hashable {
        /// Wait in the session's queue (`202`), the default.
        case queue
        /// Refuse with the `409` naming the rule.
        case reject
    }

    /// The screen name the app maps to a view: 1–64 characters matching `^[A-Za-z][A-Za-z0-9._-]*$`.
    public var destination: String
    /// The style; a request without `style` on the wire is a sheet, and one is always sent.
    public var style: Style
    /// The identity in the session; defaults to `destination`.
    public var key: String?
    /// Defaults to `{}`.
    public var payload: JSONObject?
    /// Defaults to `false`.
    public var locked: Bool?
    /// Defaults to `queue`.
    public var whenBlocked: WhenBlocked?

    /// A present of `destination` in `style`, a sheet by default; `nil` members take the server's defaults.
    public init(
        destination: String, style: Style = .sheet(), key: String? = nil, payload: JSONObject? = nil,
        locked: Bool? = nil, whenBlocked: WhenBlocked? = nil
    ) {
        self.destination = destination
        self.style = style
        self.key = key
        self.payload = payload
        self.locked = locked
        self.whenBlocked = whenBlocked
    }

    /// A present whose payload is the app's own type, encoded with the server's date form (see
    /// ``JSONObject/init(encoding:)``).
    ///
    /// ```swift
    /// struct Profile: Codable { var userId: Int }
    /// let request = try PresentRequest(destination: "profile", payload: Profile(userId: 42))
    /// ```
    ///
    /// (It yields to the initializer taking a ``JSONObject``, so a dictionary literal or a
    /// `JSONObject` still makes its request without `try`.)
    ///
    /// - Throws: `EncodingError` when `payload` cannot be encoded, or encodes to something other
    ///   than a JSON object.
    @_disfavoredOverload
    public init(
        destination: String, style: Style = .sheet(), key: String? = nil, payload: some Encodable,
        locked: Bool? = nil, whenBlocked: WhenBlocked? = nil
    ) throws {
        self.destination = destination
        self.style = style
        self.key = key
        self.payload = try JSONObject(encoding: payload)
        self.locked = locked
        self.whenBlocked = whenBlocked
    }
}

extension PresentRequest: Codable {
    private enum CodingKeys: String, CodingKey {
        case destination, style, key, payload, locked, whenBlocked
        case detents, interactiveDismissDisabled, title, message, buttons, total, completed
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        destination = try container.decode(String.self, forKey: .destination)
        key = try container.decodeIfPresent(String.self, forKey: .key)
        payload = try container.decodeIfPresent(JSONObject.self, forKey: .payload)
        locked = try container.decodeIfPresent(Bool.self, forKey: .locked)
        whenBlocked = try container.decodeIfPresent(WhenBlocked.self, forKey: .whenBlocked)
        switch try container.decodeIfPresent(ModalStyle.Kind.self, forKey: .style) ?? .sheet {
        case .sheet:
            style = .sheet(
                detents: try container.decodeIfPresent([ModalStyle.Detent].self, forKey: .detents),
                interactiveDismissDisabled: try container.decodeIfPresent(
                    Bool.self, forKey: .interactiveDismissDisabled))
        case .fullScreenCover: style = .fullScreenCover
        case .popover: style = .popover
        case .alert:
            style = .alert(
                title: try container.decode(String.self, forKey: .title),
                message: try container.decodeIfPresent(String.self, forKey: .message),
                buttons: try container.decodeIfPresent([AlertButtonRequest].self, forKey: .buttons))
        case .confirmationDialog:
            style = .confirmationDialog(
                title: try container.decode(String.self, forKey: .title),
                message: try container.decodeIfPresent(String.self, forKey: .message),
                buttons: try container.decode([AlertButtonRequest].self, forKey: .buttons))
        case .dialog: style = .dialog
        case .progress:
            style = .progress(
                message: try container.decodeIfPresent(String.self, forKey: .message),
                total: try container.decode(Double.self, forKey: .total),
                completed: try container.decodeIfPresent(Double.self, forKey: .completed))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(destination, forKey: .destination)
        try container.encode(style.kind, forKey: .style)
        try container.encodeIfPresent(key, forKey: .key)
        try container.encodeIfPresent(payload, forKey: .payload)
        try container.encodeIfPresent(locked, forKey: .locked)
        try container.encodeIfPresent(whenBlocked, forKey: .whenBlocked)
        switch style {
        case .sheet(let detents, let interactiveDismissDisabled):
            try container.encodeIfPresent(detents, forKey: .detents)
            try container.encodeIfPresent(interactiveDismissDisabled, forKey: .interactiveDismissDisabled)
        case .alert(let title, let message, let buttons):
            try container.encode(title, forKey: .title)
            try container.encodeIfPresent(message, forKey: .message)
            try container.encodeIfPresent(buttons, forKey: .buttons)
        case .confirmationDialog(let title, let message, let buttons):
            try container.encode(title, forKey: .title)
            try container.encodeIfPresent(message, forKey: .message)
            try container.encode(buttons, forKey: .buttons)
        case .progress(let message, let total, let completed):
            try container.encodeIfPresent(message, forKey: .message)
            try container.encode(total, forKey: .total)
            try container.encodeIfPresent(completed, forKey: .completed)
        case .fullScreenCover, .popover, .dialog:
            break
        }
    }
}

/// The body of `PATCH …/presentations/{id}`: absent (`nil`) members keep their value.
public struct UpdateRequest: Codable, Sendable, Hashable {
    /// Replaces the whole payload.
    public var payload: JSONObject?
    /// Progress only.
    public var message: String?
    /// Progress only.
    public var total: Double?
    /// Progress only; at most `total` once applied.
    public var completed: Double?

    /// An update of the members given; those left `nil` are not sent and keep their value.
    public init(payload: JSONObject? = nil, message: String? = nil, total: Double? = nil, completed: Double? = nil) {
        self.payload = payload
        self.message = message
        self.total = total
        self.completed = completed
    }

    /// An update that replaces the payload with the app's own type, encoded with the server's
    /// date form (see ``JSONObject/init(encoding:)``).
    ///
    /// (It yields to the initializer taking a ``JSONObject``, so a dictionary literal or a
    /// `JSONObject` still makes its request without `try`.)
    ///
    /// - Throws: `EncodingError` when `payload` cannot be encoded, or encodes to something other
    ///   than a JSON object.
    @_disfavoredOverload
    public init(payload: some Encodable, message: String? = nil, total: Double? = nil, completed: Double? = nil)
        throws
    {
        self.payload = try JSONObject(encoding: payload)
        self.message = message
        self.total = total
        self.completed = completed
    }
}

/// The body of `POST …/dismiss`: what to dismiss, with an optional answer and `force`.
public struct DismissRequest: Sendable, Hashable {
    /// What to remove.
    public enum Target: Sendable, Hashable {
        /// The top presentation (no member sent).
        case top
        /// This many from the top.
        case count(Int)
        /// Everything above this presentation id, which becomes the top.
        case to(String)
        /// This presentation and everything above it, or this queued presentation alone.
        case presentation(String)
        /// The whole stack.
        case all
    }

    /// What to remove: `.top` sends no member, the others one of `count`, `to`, `presentation` or `all`.
    public var target: Target
    /// The answer; `nil` sends none, `.null` sends `null`. For an alert, `{"buttonId": …}`.
    public var result: JSONValue?
    /// Remove locked presentations too; `nil` sends nothing (the server's default is `false`).
    public var force: Bool?

    /// A dismiss of `target`, the top by default, with an optional answer and `force`.
    public init(_ target: Target = .top, result: JSONValue? = nil, force: Bool? = nil) {
        self.target = target
        self.result = result
        self.force = force
    }
}

extension DismissRequest: Codable {
    private enum CodingKeys: String, CodingKey {
        case count, to, presentation, all, result, force
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var targets: [Target] = []
        if let count = try container.decodeIfPresent(Int.self, forKey: .count) { targets.append(.count(count)) }
        if let id = try container.decodeIfPresent(String.self, forKey: .to) { targets.append(.to(id)) }
        if let id = try container.decodeIfPresent(String.self, forKey: .presentation) {
            targets.append(.presentation(id))
        }
        if let all = try container.decodeIfPresent(Bool.self, forKey: .all) {
            guard all else {
                throw DecodingError.dataCorruptedError(
                    forKey: .all, in: container, debugDescription: "all may only be true")
            }
            targets.append(.all)
        }
        guard targets.count <= 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "at most one of count, to, presentation, all")
            )
        }
        target = targets.first ?? .top
        result = container.contains(.result) ? try container.decode(JSONValue.self, forKey: .result) : nil
        force = try container.decodeIfPresent(Bool.self, forKey: .force)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch target {
        case .top: break
        case .count(let count): try container.encode(count, forKey: .count)
        case .to(let id): try container.encode(id, forKey: .to)
        case .presentation(let id): try container.encode(id, forKey: .presentation)
        case .all: try container.encode(true, forKey: .all)
        }
        try container.encodeIfPresent(result, forKey: .result)
        try container.encodeIfPresent(force, forKey: .force)
    }
}

/// The body of `PUT …/stack`: the new stack, bottom first.
public struct ReplaceStackRequest: Codable, Sendable, Hashable {
    /// The new stack, bottom first: keys unique, an alert-like entry only last, at most the server's max depth.
    public var stack: [PresentRequest]
    /// Remove locked presentations too; `nil` sends nothing.
    public var force: Bool?

    /// A replacement of the whole stack by `stack`, bottom first.
    public init(stack: [PresentRequest], force: Bool? = nil) {
        self.stack = stack
        self.force = force
    }
}

/// A screen to push, as `PUT …/navigation` and a route's `replacePath` list them: an entry of a path.
public struct PathEntryRequest: Codable, Sendable, Hashable {
    /// The screen name the app maps to a view; with a catalog, one that allows `push`.
    public var destination: String
    /// Defaults to `{}`.
    public var payload: JSONObject?
    /// The identity in its path; defaults to `destination`.
    public var key: String?

    /// An entry of `destination`; `nil` members take the server's defaults.
    public init(destination: String, payload: JSONObject? = nil, key: String? = nil) {
        self.destination = destination
        self.payload = payload
        self.key = key
    }

    /// An entry whose payload is the app's own type, encoded with the server's date form (see
    /// ``JSONObject/init(encoding:)``).
    ///
    /// (It yields to the initializer taking a ``JSONObject``, so a dictionary literal or a
    /// `JSONObject` still makes its request without `try`.)
    ///
    /// - Throws: `EncodingError` when `payload` cannot be encoded, or encodes to something other
    ///   than a JSON object.
    @_disfavoredOverload
    public init(destination: String, payload: some Encodable, key: String? = nil) throws {
        self.destination = destination
        self.payload = try JSONObject(encoding: payload)
        self.key = key
    }
}

/// The body of `POST …/path`: a screen to push onto a level's path.
public struct PushRequest: Codable, Sendable, Hashable {
    /// The screen name to push; with a catalog, one that allows the style `push`.
    public var destination: String
    /// Defaults to `{}`.
    public var payload: JSONObject?
    /// The identity in its path; defaults to `destination`. Pushing the key of the level's last
    /// entry with the same destination updates that entry in place.
    public var key: String?
    /// Where to push; `nil` for the top-most container on the stack (beneath an alert-like top),
    /// else the root.
    public var level: NavigationLevel?

    /// A push of `destination`; `nil` members take the server's defaults.
    public init(destination: String, payload: JSONObject? = nil, key: String? = nil, level: NavigationLevel? = nil) {
        self.destination = destination
        self.payload = payload
        self.key = key
        self.level = level
    }

    /// A push whose payload is the app's own type, encoded with the server's date form (see
    /// ``JSONObject/init(encoding:)``).
    ///
    /// ```swift
    /// struct Item: Codable { var itemId: Int }
    /// let request = try PushRequest(destination: "downloadItem", payload: Item(itemId: 7))
    /// ```
    ///
    /// (It yields to the initializer taking a ``JSONObject``, so a dictionary literal or a
    /// `JSONObject` still makes its request without `try`.)
    ///
    /// - Throws: `EncodingError` when `payload` cannot be encoded, or encodes to something other
    ///   than a JSON object.
    @_disfavoredOverload
    public init(
        destination: String, payload: some Encodable, key: String? = nil, level: NavigationLevel? = nil
    ) throws {
        self.destination = destination
        self.payload = try JSONObject(encoding: payload)
        self.key = key
        self.level = level
    }
}

/// The body of `POST …/path/pop`: what to pop from a level's path, with an optional answer.
public struct PopRequest: Sendable, Hashable {
    /// What to pop.
    public enum Target: Sendable, Hashable {
        /// The last entry pushed (no member sent).
        case top
        /// This many entries from the top.
        case count(Int)
        /// Every entry above this entry id, which becomes the last.
        case to(String)
        /// The whole path.
        case all
    }

    /// Where to pop from; `nil` for the top-most container on the stack, else the root.
    public var level: NavigationLevel?
    /// What to pop: `.top` sends no member, the others one of `count`, `to` or `all`.
    public var target: Target
    /// The answer handed back for the top-most entry popped, in its `popped` event; `nil` sends
    /// none, `.null` sends `null`.
    public var result: JSONValue?

    /// A pop of `target`, the last entry by default, from `level`, with an optional answer.
    public init(_ target: Target = .top, level: NavigationLevel? = nil, result: JSONValue? = nil) {
        self.target = target
        self.level = level
        self.result = result
    }
}

extension PopRequest: Codable {
    private enum CodingKeys: String, CodingKey { case level, count, to, all, result }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        level = try container.decodeIfPresent(NavigationLevel.self, forKey: .level)
        var targets: [Target] = []
        if let count = try container.decodeIfPresent(Int.self, forKey: .count) { targets.append(.count(count)) }
        if let id = try container.decodeIfPresent(String.self, forKey: .to) { targets.append(.to(id)) }
        if let all = try container.decodeIfPresent(Bool.self, forKey: .all) {
            guard all else {
                throw DecodingError.dataCorruptedError(
                    forKey: .all, in: container, debugDescription: "all may only be true")
            }
            targets.append(.all)
        }
        guard targets.count <= 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "at most one of count, to, all"))
        }
        target = targets.first ?? .top
        result = container.contains(.result) ? try container.decode(JSONValue.self, forKey: .result) : nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(level, forKey: .level)
        switch target {
        case .top: break
        case .count(let count): try container.encode(count, forKey: .count)
        case .to(let id): try container.encode(id, forKey: .to)
        case .all: try container.encode(true, forKey: .all)
        }
        try container.encodeIfPresent(result, forKey: .result)
    }
}

/// The body of `PUT …/navigation`: the whole navigation to go to in one change, the root path and
/// the stack of modals, each container with its own path.
public struct NavigationRequest: Codable, Sendable, Hashable {
    /// A modal of the new stack: what `POST …/presentations` takes, and its path.
    public struct Modal: Sendable, Hashable {
        /// The modal, as `POST …/presentations` takes it; its members sit beside `path` in one object.
        public var presentation: PresentRequest
        /// The screens pushed inside it, the first first; `nil` sends none (an empty path). An
        /// alert-like modal has no path.
        public var path: [PathEntryRequest]?

        /// A modal of the new stack with the screens pushed inside it.
        public init(_ presentation: PresentRequest, path: [PathEntryRequest]? = nil) {
            self.presentation = presentation
            self.path = path
        }
    }

    /// The root path, the first pushed first.
    public var path: [PathEntryRequest]
    /// The modals, bottom first.
    public var stack: [Modal]
    /// Remove locked presentations too; `nil` sends nothing.
    public var force: Bool?

    /// A navigation to `path` and `stack`; with the defaults it clears both.
    public init(path: [PathEntryRequest] = [], stack: [Modal] = [], force: Bool? = nil) {
        self.path = path
        self.stack = stack
        self.force = force
    }
}

extension NavigationRequest.Modal: Codable {
    private enum CodingKeys: String, CodingKey { case path }

    /// The present request's members and `path`, in one object.
    public init(from decoder: any Decoder) throws {
        presentation = try PresentRequest(from: decoder)
        path = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([PathEntryRequest].self, forKey: .path)
    }

    public func encode(to encoder: any Encoder) throws {
        try presentation.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(path, forKey: .path)
    }
}

/// The body of `POST …/links`: a deep link to open.
public struct LinkRequest: Codable, Sendable, Hashable {
    /// An absolute URL, 1–2048 characters.
    public var url: String

    /// A request to open `url`.
    public init(url: String) { self.url = url }
}

/// The body of `PUT /v1/sessions/{id}`; applies only when the request creates the session.
public struct CreateSessionRequest: Codable, Sendable, Hashable {
    /// Seconds the session lives after its last change (1 to 30 days); `nil` for the server's default.
    public var ttl: Int?

    /// Options for the session being created; a `nil` `ttl` takes the server's default session TTL.
    public init(ttl: Int? = nil) { self.ttl = ttl }
}

/// What a client token lets its holder do with its session.
public enum TokenScope: String, Codable, Sendable, Hashable, CaseIterable {
    case read
    case write
    case readWrite = "read write"
}

/// The body of `POST …/tokens`; `nil` members take the server's defaults (both scopes, an hour).
public struct TokenRequest: Codable, Sendable, Hashable {
    /// `read`, `write` or `read write`, words in any order.
    public var scope: String?
    /// Seconds the token lives.
    public var ttl: Int?

    /// A token request; `nil` members take the server's defaults (both scopes, an hour).
    public init(scope: TokenScope? = nil, ttl: Int? = nil) {
        self.scope = scope?.rawValue
        self.ttl = ttl
    }
}
