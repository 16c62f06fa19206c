/// A presentation's style together with the fields only that style has, so that a sheet cannot
/// carry buttons and an alert cannot carry detents: invalid combinations are unrepresentable.
public enum ModalContent: Sendable, Hashable {
    case sheet(SheetOptions)
    case fullScreenCover
    case popover
    case alert(AlertContent)
    case confirmationDialog(AlertContent)
    /// A custom dialog; its content is the presentation's payload.
    case dialog
    case progress(ProgressContent)

    public var style: ModalStyle {
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

    /// The buttons of an alert or confirmation dialog; empty for other styles.
    public var buttons: [AlertButton] {
        switch self {
        case .alert(let content), .confirmationDialog(let content): content.buttons
        default: []
        }
    }
}

/// How a sheet may be sized and whether a swipe may close it.
public struct SheetOptions: Sendable, Hashable {
    public var detents: [Detent]
    public var interactiveDismissDisabled: Bool

    public init(detents: [Detent] = [], interactiveDismissDisabled: Bool = false) {
        self.detents = detents
        self.interactiveDismissDisabled = interactiveDismissDisabled
    }
}

/// A height a sheet may rest at: `medium`, `large`, `fraction:0<x≤1`, `height:<points>`.
public enum Detent: Sendable, Hashable {
    case medium
    case large
    case fraction(Double)
    case height(Double)

    /// Parses the wire form; nil when it is not one of the four shapes or out of range.
    public init?(_ text: String) {
        switch text {
        case "medium": self = .medium
        case "large": self = .large
        default:
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, Self.isUnsignedDecimal(parts[1]), let value = Double(parts[1]) else { return nil }
            switch parts[0] {
            case "fraction" where value > 0 && value <= 1: self = .fraction(value)
            case "height" where value > 0 && value <= 100_000: self = .height(value)
            default: return nil
            }
        }
    }

    public var text: String {
        switch self {
        case .medium: "medium"
        case .large: "large"
        case .fraction(let value): "fraction:\(Self.number(value))"
        case .height(let value): "height:\(Self.number(value))"
        }
    }

    /// Digits and a point with an optional exponent, as a JSON number without its sign.
    /// `Double(_:)` alone would also take "0x1p-1", "inf" and "nan". The exponent is accepted
    /// because servers used to write tiny numbers as `1e-07`, and stored sessions and clients
    /// still hold that form.
    private static func isUnsignedDecimal(_ text: Substring) -> Bool {
        let isDigit = { (character: Character) in character.isASCII && character.isNumber }
        let mantissa = text.prefix { $0 != "e" && $0 != "E" }
        var exponent = text.dropFirst(mantissa.count)
        if !exponent.isEmpty {
            exponent = exponent.dropFirst()
            if exponent.first == "+" || exponent.first == "-" { exponent = exponent.dropFirst() }
            guard !exponent.isEmpty, exponent.allSatisfy(isDigit) else { return false }
        }
        return mantissa.contains(where: isDigit) && mantissa.allSatisfy { isDigit($0) || $0 == "." }
    }

    /// The shortest digits that read back as `value`, as a plain decimal: `String(_:)` would
    /// write `1e-07`, and a detent has one written form, without an exponent (`0.0000001`).
    private static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        let text = String(value)
        guard let e = text.firstIndex(of: "e"), let exponent = Int(text[text.index(after: e)...]) else { return text }
        let sign = text.hasPrefix("-") ? "-" : ""
        let mantissa = text[..<e].drop { $0 == "-" }
        let digits = String(mantissa.filter { $0 != "." })
        let point =
            (mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count)
            + exponent
        if point <= 0 { return sign + "0." + String(repeating: "0", count: -point) + digits }
        if point >= digits.count { return sign + digits + String(repeating: "0", count: point - digits.count) }
        return sign + digits.prefix(point) + "." + digits.dropFirst(point)
    }
}

/// The text and buttons of an alert or a confirmation dialog.
public struct AlertContent: Sendable, Hashable {
    public static let maxTitleLength = 200
    public static let maxMessageLength = 2000
    public static let maxButtons = 16
    /// What an alert without buttons gets: a single OK.
    public static let defaultButtons = [AlertButton(id: "ok", label: "OK", role: .default)]

    public var title: String
    public var message: String?
    public var buttons: [AlertButton]

    public init(title: String, message: String? = nil, buttons: [AlertButton] = AlertContent.defaultButtons) {
        self.title = title
        self.message = message
        self.buttons = buttons
    }
}

public struct AlertButton: Sendable, Hashable {
    public enum Role: String, Sendable, Hashable, CaseIterable {
        case `default`
        case cancel
        case destructive
    }

    public static let maxIDLength = 64
    public static let maxLabelLength = 100

    public var id: String
    public var label: String
    public var role: Role

    public init(id: String, label: String, role: Role = .default) {
        self.id = id
        self.label = label
        self.role = role
    }
}

/// A progress dialog's state: `completed` out of `total`, with a message.
public struct ProgressContent: Sendable, Hashable {
    public var message: String?
    public var total: Double
    public var completed: Double

    public init(message: String? = nil, total: Double, completed: Double = 0) {
        self.message = message
        self.total = total
        self.completed = completed
    }
}
