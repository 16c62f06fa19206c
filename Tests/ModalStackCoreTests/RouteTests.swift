import ModalStackCore
import Testing

@Suite("Deep links: routes, matching and captures")
struct RouteTests {
    let catalog: Catalog

    init() throws {
        catalog = try Catalog(json: [
            "destinations": [
                "onboarding": ["styles": ["sheet"]],
                "downloads": ["styles": ["sheet"]],
                "item": [
                    "styles": ["push"],
                    "payload": [
                        "type": "object", "properties": ["id": ["type": "integer"], "ref": ["type": "string"]],
                    ],
                ],
                "help": [
                    "styles": ["sheet"], "payload": ["type": "object", "properties": ["text": ["type": "string"]]],
                ],
            ],
            "routes": [
                [
                    "name": "item", "url": "/onboarding/downloads/{id}?ref={ref}",
                    "navigate": [
                        "stack": [
                            ["destination": "onboarding"],
                            [
                                "destination": "downloads",
                                "path": [["destination": "item", "payload": ["id": "{id}", "ref": "{ref}"]]],
                            ],
                        ]
                    ],
                ],
                [
                    "url": "https://example.com/help/{topic}",
                    "present": ["destination": "help", "payload": ["text": "About {topic}"]],
                ],
                [
                    "url": "/items/{id}",
                    "push": ["destination": "item", "key": "item-{id}", "payload": ["id": "{id}"]],
                ],
            ],
        ])
    }

    @Test("captures are typed by the destination's schema; an absent query capture leaves its member out")
    func typedCaptures() throws {
        let link = try catalog.resolve("myapp://onboarding/downloads/42?ref=mail%20x")
        #expect(link.route.name == "item")
        guard case .navigate(let request) = link.action else {
            Issue.record("not a navigation")
            return
        }
        #expect(request.stack.map(\.present.destination) == ["onboarding", "downloads"])
        #expect(request.stack[1].path?.first?.payload == ["id": 42, "ref": "mail x"])
        let noRef = try catalog.resolve("/onboarding/downloads/7/")
        #expect(noRef.request["stack"]?.arrayValue?[1]["path"]?.arrayValue?[0]["payload"] == ["id": 7])
        do {
            _ = try catalog.resolve("/onboarding/downloads/seven")
            Issue.record("a capture that is not an integer was accepted")
        } catch {
            #expect(error.kind == .validationFailed)
            #expect(error.fieldErrors.map(\.pointer) == ["/url"])
        }
    }

    @Test("scheme and host match only when the route names them; routes are tried in order")
    func schemesAndHosts() throws {
        let help = try catalog.resolve("HTTPS://Example.com/help/billing")
        guard case .present(let present, clear: false) = help.action else {
            Issue.record("not a present")
            return
        }
        #expect(present.payload == ["text": "About billing"])
        for url in ["https://other.com/help/billing", "/help/billing", "/nothing", "/items"] {
            #expect(throws: ModalError.self) { _ = try catalog.resolve(url) }
            do { _ = try catalog.resolve(url) } catch { #expect(error.kind == .noRoute, "\(url)") }
        }
        let push = try catalog.resolve("https://anything.example/items/3")
        guard case .push(let request, clear: false) = push.action else {
            Issue.record("not a push")
            return
        }
        #expect(request.key == "item-3")
        #expect(request.payload == ["id": 3])
    }

    @Test("links that are not URLs are validation errors at /url")
    func badLinks() {
        for url in ["", "downloads/4", "/a/%zz", String(repeating: "a", count: 3000), "/a b"] {
            do {
                _ = try catalog.resolve(url)
                Issue.record("\(url) was resolved")
            } catch {
                #expect(error.kind == .validationFailed && error.fieldErrors.map(\.pointer) == ["/url"], "\(url)")
            }
        }
    }

    @Test("a catalog whose routes name unknown destinations, styles or captures is refused, saying where")
    func loadErrors() {
        let destinations: JSONValue = ["a": ["styles": ["sheet"]], "b": ["styles": ["push"]]]
        let cases: [(JSONValue, String)] = [
            (["url": "/x", "present": ["destination": "zz"]], "/routes/0/present/destination"),
            (
                ["url": "/x", "present": ["destination": "a", "style": "alert", "title": "t"]],
                "/routes/0/present/style"
            ),
            (["url": "/x", "push": ["destination": "a"]], "/routes/0/push/destination"),
            (
                ["url": "/x", "navigate": ["stack": [["destination": "a", "path": [["destination": "a"]]]]]],
                "/routes/0/navigate/stack/0/path/0/destination"
            ),
            (
                ["url": "/x/{id}", "push": ["destination": "b", "payload": ["id": "{other}"]]],
                "/routes/0/push/payload/id"
            ),
            (["url": "/x/{id", "push": ["destination": "b"]], "/routes/0/url"),
            (["url": "/x", "push": ["destination": "b"], "present": ["destination": "a"]], "/routes/0"),
            (["url": "/x", "replacePath": [["destination": "a"]]], "/routes/0/replacePath/0/destination"),
            (["url": "/x", "navigate": [:], "clear": true], "/routes/0/clear"),
        ]
        for (route, path) in cases {
            do {
                _ = try Catalog(json: ["destinations": destinations, "routes": [route]])
                Issue.record("\(route) was loaded")
            } catch {
                #expect(error.path == path, "\(error)")
            }
        }
    }

    @Test("push is a style a destination may list; the listing writes it back")
    func pushStyle() throws {
        #expect(catalog.destination(named: "item")?.allowsPush == true)
        #expect(catalog.destination(named: "item")?.styles == [])
        #expect(catalog.destination(named: "help")?.allowsPush == false)
        let listed = try Catalog(json: catalog.json)
        #expect(listed.destinations == catalog.destinations)
    }
}
