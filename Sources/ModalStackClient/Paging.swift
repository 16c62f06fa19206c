import Foundation

/// Where the next page of a listing starts: what a page's `nextPage` gives, to pass to
/// ``ModalStack/sessions(at:)`` or ``ModalStack/events(at:)``. Opaque: it is the
/// server's `next` link, kept as the server wrote it.
public struct PageCursor: Sendable, Hashable, CustomStringConvertible {
    /// The path and query of the next page, under the server's base URL.
    public let next: String

    /// The cursor of a `next` link (a page's JSON, kept from an earlier run).
    public init(next: String) { self.next = next }

    /// The `next` link, as the server wrote it.
    public var description: String { next }

    /// The request for the page.
    var call: ModalStack.Call {
        var components = URLComponents(string: next) ?? URLComponents()
        let query = components.queryItems ?? []
        components.queryItems = nil
        var call = ModalStack.Call(.get, components.percentEncodedPath)
        call.query = query
        return call
    }
}

extension SessionsPage {
    /// The next page's cursor; `nil` on the last page.
    public var nextPage: PageCursor? { next.map(PageCursor.init(next:)) }
}

extension EventsPage {
    /// The next page's cursor while the session has newer changes; `nil` when this page reaches
    /// the current version.
    public var nextPage: PageCursor? { next.map(PageCursor.init(next:)) }
}
