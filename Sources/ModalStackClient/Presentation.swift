import Foundation

/// How a presentation is shown, with the fields of its style (the spec's `style` and the
/// style-specific members, which sit beside it in the presentation's object).
public enum ModalStyle: Sendable, Hashable {
    /// A sheet: the heights it may rest at (`[]` leaves the choice to the app), and whether a swipe may not close it.
    case sheet(detents: [ModalStyle.Detent], interactiveDismissDisabled: Bool)
    /// A full-screen cover.
    case fullScreenCover
    /// A popover.
    case popover
    /// An alert; `message` only when one was given.
    case alert(title: String, message: String?, buttons: [AlertButton])
    /// A confirmation dialog (an action sheet); `message` only when one was given.
    case confirmationDialog(title: String, message: String?, buttons: [AlertButton])
    /// A custom dialog whose content is the payload.
    case dialog
    /// A progress dialog: `completed` of `total` done; `message` only when one was given.
    case progress(message: String?, total: Double, completed: Double)

    /// The style's name on the wire (the spec's `ModalStyle` enum). A copy of the server's
    /// `ModalStyle` (ModalStackCore, which this library does not import); `StyleKindTests` holds
    /// the two equal, alert-likeness included.
    public enum Kind: String, Codable, Sendable, Hashable, CaseIterable {
        case sheet, fullScreenCover, popover, alert, confirmationDialog, dialog, progress

        /// Alert-like styles interrupt: one at a time, always the top-most entry.
        public var isAlertLike: Bool {
            switch self {
            case .alert, .confirmationDialog, .dialog, .progress: true
            case .sheet, .fullScreenCover, .popover: false
            }
        }
    }

    /// The buttons of an alert or a confirmation dialog; `[]` for other styles.
    public var buttons: [AlertButton] {
        switch self {
        case .alert(_, _, let buttons), .confirmationDialog(_, _, let buttons): buttons
        case .sheet, .fullScreenCover, .popover, .dialog, .progress: []
        }
    }

    /// The style's name.
    public var kind: Kind {
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

extension ModalStyle: Codable {
    private enum CodingKeys: String, CodingKey {
        case style, detents, interactiveDismissDisabled, title, message, buttons, total, completed
    }

    /// Reads `style` and its fields from the enclosing object.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(Kind.self, forKey: .style) {
        case .sheet:
            self = .sheet(
                detents: try container.decode([ModalStyle.Detent].self, forKey: .detents),
                interactiveDismissDisabled: try container.decode(Bool.self, forKey: .interactiveDismissDisabled))
        case .fullScreenCover: self = .fullScreenCover
        case .popover: self = .popover
        case .alert:
            self = .alert(
                title: try container.decode(String.self, forKey: .title),
                message: try container.decodeIfPresent(String.self, forKey: .message),
                buttons: try container.decode([AlertButton].self, forKey: .buttons))
        case .confirmationDialog:
            self = .confirmationDialog(
                title: try container.decode(String.self, forKey: .title),
                message: try container.decodeIfPresent(String.self, forKey: .message),
                buttons: try container.decode([AlertButton].self, forKey: .buttons))
        case .dialog: self = .dialog
        case .progress:
            self = .progress(
                message: try container.decodeIfPresent(String.self, forKey: .message),
                total: try container.decode(Double.self, forKey: .total),
                completed: try container.decode(Double.self, forKey: .completed))
        }
    }

    /// Writes `style` and its fields into the enclosing object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .style)
        switch self {
        case .sheet(let detents, let interactiveDismissDisabled):
            try container.encode(detents, forKey: .detents)
            try container.encode(interactiveDismissDisabled, forKey: .interactiveDismissDisabled)
        case .alert(let title, let message, let buttons), .confirmationDialog(let title, let message, let buttons):
            try container.encode(title, forKey: .title)
            try container.encodeIfPresent(message, forKey: .message)
            try container.encode(buttons, forKey: .buttons)
        case .progress(let message, let total, let completed):
            try container.encodeIfPresent(message, forKey: .message)
            try container.encode(total, forKey: .total)
            try container.encode(completed, forKey: .completed)
        case .fullScreenCover, .popover, .dialog:
            break
        }
    }
}

extension ModalStyle {
    /// A height a sheet may rest at: `medium`, `large`, `fraction:x` or `height:x`, kept as written.
    public struct Detent: RawRepresentable, Codable, Sendable, Hashable, ExpressibleByStringLiteral {
        /// The detent as written: `medium`, `large`, `fraction:x` or `height:x`.
        public var rawValue: String
        /// The detent written `rawValue`; the server checks its shape and range.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The detent written as the literal, such as `"fraction:0.3"`.
        public init(stringLiteral value: String) { self.rawValue = value }
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// The medium height.
        public static let medium: Detent = "medium"
        /// The full height.
        public static let large: Detent = "large"
        /// A share of the screen, 0 < `share` ≤ 1.
        public static func fraction(_ share: Double) -> Detent { Detent(rawValue: "fraction:" + shortest(share)) }
        /// A height in points, 0 < `points` ≤ 100000.
        public static func height(_ points: Double) -> Detent { Detent(rawValue: "height:" + shortest(points)) }

        /// The number as the server writes it back: the shortest decimal, without a trailing `.0`.
        private static func shortest(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
    }
}

extension AlertButton {
    /// A button's role: `cancel` is the answer a dismiss without one records.
    public enum Role: String, Codable, Sendable, Hashable, CaseIterable {
        case `default`, cancel, destructive
    }
}

/// One button of an alert or confirmation dialog, as served.
public struct AlertButton: Codable, Sendable, Hashable, Identifiable {
    /// Unique among its alert's buttons; the `buttonId` of the answer.
    public var id: String
    /// The text the button shows: 1–100 characters.
    public var label: String
    /// `default`, `cancel` (the answer a dismiss without one records) or `destructive`.
    public var role: AlertButton.Role

    /// A button as the server serves it; `role` defaults to `default`.
    public init(id: String, label: String, role: AlertButton.Role = .default) {
        self.id = id
        self.label = label
        self.role = role
    }
}

/// Where a presentation is in its life.
public enum PresentationState: String, Codable, Sendable, Hashable, CaseIterable {
    case queued, presented, dismissed
}

/// One modal of a session: on its stack, in its queue, or dismissed.
public struct Presentation: Sendable, Hashable, Identifiable {
    /// Made by the server: 24 base64url characters.
    public var id: String
    /// The screen name the app maps to a view.
    public var destination: String
    /// The style and its fields.
    public var style: ModalStyle
    /// The identity in the session, unique across the stack and the queue.
    public var key: String
    /// Whether it waits in the queue, is on the stack, or has left the session.
    public var state: PresentationState
    /// Only a dismiss or replacement that says `force` removes a locked presentation.
    public var locked: Bool
    /// What the destination needs to show.
    public var payload: JSONObject
    /// The screens pushed inside it, the first pushed first; always `[]` for an alert-like style,
    /// which has no path, and for a queued presentation. A dismissed one keeps the path it had.
    public var path: [PathEntry]
    /// When the present was asked for.
    public var requestedAt: Date
    /// When it went on the stack; `nil` while queued, and for a queued presentation that was cancelled.
    public var presentedAt: Date?
    /// When it left the session; `nil` unless `state` is `dismissed`.
    public var dismissedAt: Date?
    /// The answer it was dismissed with (`{"buttonId": …}` for an alert); `nil` for none or `null`.
    public var result: JSONValue?

    /// A presentation with these members, as the server would serve it.
    public init(
        id: String, destination: String, style: ModalStyle, key: String, state: PresentationState,
        locked: Bool = false, payload: JSONObject = [:], path: [PathEntry] = [], requestedAt: Date,
        presentedAt: Date? = nil, dismissedAt: Date? = nil, result: JSONValue? = nil
    ) {
        self.id = id
        self.destination = destination
        self.style = style
        self.key = key
        self.state = state
        self.locked = locked
        self.payload = payload
        self.path = path
        self.requestedAt = requestedAt
        self.presentedAt = presentedAt
        self.dismissedAt = dismissedAt
        self.result = result
    }

    /// The payload read as the app's own type, with the server's date form (see
    /// ``JSONValue/decode(as:)``).
    ///
    /// ```swift
    /// struct Profile: Codable { var userId: Int }
    /// let profile = try presentation.payload(as: Profile.self)
    /// ```
    ///
    /// - Throws: `DecodingError` when the payload does not fit `type`.
    public func payload<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try payload.decode(as: type)
    }

    /// The `buttonId` of an alert's or confirmation dialog's answer, if any.
    public var answeredButtonID: String? {
        if case .object(let object) = result, case .string(let id) = object["buttonId"] { id } else { nil }
    }
}

extension Presentation: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, destination, key, state, locked, payload, path, requestedAt, presentedAt, dismissedAt, result
    }

    /// A container's JSON has `path` (required); an alert-like one's has none, and it is `[]`.

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        destination = try container.decode(String.self, forKey: .destination)
        style = try ModalStyle(from: decoder)
        key = try container.decode(String.self, forKey: .key)
        state = try container.decode(PresentationState.self, forKey: .state)
        locked = try container.decode(Bool.self, forKey: .locked)
        payload = try container.decode(JSONObject.self, forKey: .payload)
        path = style.kind.isAlertLike ? [] : try container.decode([PathEntry].self, forKey: .path)
        requestedAt = try container.decode(Date.self, forKey: .requestedAt)
        presentedAt = try container.decode(Date?.self, forKey: .presentedAt)
        dismissedAt = try container.decode(Date?.self, forKey: .dismissedAt)
        // Required, but may be `null`: decoding `JSONValue?` maps `null` to nil.
        guard container.contains(.result) else {
            throw DecodingError.keyNotFound(
                CodingKeys.result, .init(codingPath: container.codingPath, debugDescription: "result is required"))
        }
        result = try container.decode(JSONValue?.self, forKey: .result)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(destination, forKey: .destination)
        try style.encode(to: encoder)
        try container.encode(key, forKey: .key)
        try container.encode(state, forKey: .state)
        try container.encode(locked, forKey: .locked)
        try container.encode(payload, forKey: .payload)
        if !style.kind.isAlertLike { try container.encode(path, forKey: .path) }
        try container.encode(requestedAt, forKey: .requestedAt)
        try container.encode(presentedAt, forKey: .presentedAt)
        try container.encode(dismissedAt, forKey: .dismissedAt)
        try container.encode(result, forKey: .result)
    }
}
