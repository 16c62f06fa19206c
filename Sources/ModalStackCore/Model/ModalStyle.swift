/// How a presentation is shown.
///
/// Containers (`sheet`, `fullScreenCover`, `popover`) stack over each other, like SwiftUI's
/// `.sheet(item:)` and `.fullScreenCover(item:)` driven by one enum. Alert-like styles (`alert`,
/// `confirmationDialog`, `dialog`, `progress`) interrupt: one at a time, always top-most.
///
/// The one list of styles: the inspector reads it from `/inspect/styles.json`, and the client's
/// `ModalStyle.Kind`, a copy, is held to it by a test (`StyleKindTests`).
public enum ModalStyle: String, Sendable, Hashable, CaseIterable {
    case sheet
    case fullScreenCover
    case popover
    case alert
    case confirmationDialog
    case dialog
    case progress

    /// The style used when a present request names none.
    public static let `default`: ModalStyle = .sheet

    /// Alert-like styles must be the top-most entry, and at most one is on a stack.
    public var isAlertLike: Bool {
        switch self {
        case .sheet, .fullScreenCover, .popover: false
        case .alert, .confirmationDialog, .dialog, .progress: true
        }
    }
}
