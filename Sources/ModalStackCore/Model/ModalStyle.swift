/// How a presentation is shown. Every style here is a stackable container: sheets and
/// full-screen covers stack over each other like SwiftUI's `.sheet(item:)` and
/// `.fullScreenCover(item:)` driven by one enum.
public enum ModalStyle: String, Sendable, Hashable, CaseIterable {
    case sheet
    case fullScreenCover

    /// The style used when a present request names none.
    public static let `default`: ModalStyle = .sheet
}
