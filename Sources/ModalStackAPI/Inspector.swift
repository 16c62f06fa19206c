import ModalStackCore
import ModalStackHTTP
import ModalStackResources

/// The inspector: a page that draws the sessions' modals live, served from files compiled into
/// the binary. The page holds no data and no credential; what it shows it asks the API for, with
/// the credential its user types in.
enum Inspector {
    /// The files, by path; every page path gets the same HTML, and the script finds its view in the URL.
    static func register(on router: inout Router) {
        let page = response([UInt8](modalstack_inspector_html()), type: "text/html; charset=utf-8")
        for path in ["/inspect", "/inspect/sessions/{sessionId}"] {
            router.add("GET", path) { _ in page }
        }
        let script = response([UInt8](modalstack_inspector_js()), type: "text/javascript; charset=utf-8")
        router.add("GET", "/inspect/inspector.js") { _ in script }
        let style = response([UInt8](modalstack_inspector_css()), type: "text/css; charset=utf-8")
        router.add("GET", "/inspect/inspector.css") { _ in style }
        let styles = response(styleKinds.serialized(), type: "application/json")
        router.add("GET", "/inspect/styles.json") { _ in styles }
    }

    /// Every style and whether it is alert-like, from `ModalStyle` itself, so that the page has no
    /// list of its own: `{"styles": [{"name": "sheet", "alertLike": false}, …]}`.
    private static var styleKinds: JSONValue {
        [
            "styles": .array(
                ModalStyle.allCases.map { ["name": .string($0.rawValue), "alertLike": .bool($0.isAlertLike)] })
        ]
    }

    /// No inline script or style, no eval, nothing from elsewhere, never in a frame.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    private static func response(_ body: [UInt8], type: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Content-Type", type)
        headers.set("Content-Security-Policy", contentSecurityPolicy)
        headers.set("X-Content-Type-Options", "nosniff")
        headers.set("Referrer-Policy", "no-referrer")
        headers.set("X-Frame-Options", "DENY")
        headers.set("Cache-Control", "no-cache")
        return HTTPResponse(status: 200, headers: headers, body: body)
    }
}
