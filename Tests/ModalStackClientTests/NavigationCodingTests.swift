import Foundation
import ModalStackClient
import Testing

// The values of issue 28's navigation as the wire contract writes them: decoded, and written back
// as they came.

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try ModalStackJSON.makeDecoder().decode(type, from: Data(json.utf8))
}

/// `value` encoded, as a JSON value (member order aside).
private func encoded(_ value: some Encodable) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: ModalStackJSON.makeEncoder().encode(value))
}

private func json(_ text: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
}

/// Decodes `text` as `type`, and checks that it encodes back to the same JSON.
private func roundTrip<T: Codable>(_ type: T.Type, _ text: String, sourceLocation: SourceLocation = #_sourceLocation)
    throws -> T
{
    let value = try decode(type, text)
    #expect(try encoded(value) == json(text), sourceLocation: sourceLocation)
    return value
}

private let pushedAt = ModalStackJSON.Timestamp.parse("2026-12-03T07:20:21.123Z")!
private let entryJSON = """
    {"id": "AAAAAAAAAAAAAAAAAAAAAAAA", "destination": "privacy", "key": "privacy", "payload": {"tab": 2},
     "pushedAt": "2026-12-03T07:20:21.123Z"}
    """
private let entry = PathEntry(
    id: "AAAAAAAAAAAAAAAAAAAAAAAA", destination: "privacy", payload: ["tab": 2], pushedAt: pushedAt)

private func sheetJSON(id: String = "BBBBBBBBBBBBBBBBBBBBBBBB", path: String? = "[\(entryJSON)]") -> String {
    """
    {"id": "\(id)", "destination": "settings", "style": "sheet", "detents": [], "interactiveDismissDisabled": false,
     "key": "settings", "state": "presented", "locked": false, "payload": {}\(path.map { ", \"path\": \($0)" } ?? ""),
     "requestedAt": "2026-12-03T07:20:20.000Z", "presentedAt": "2026-12-03T07:20:20.000Z", "dismissedAt": null,
     "result": null}
    """
}

private let alertJSON = """
    {"id": "CCCCCCCCCCCCCCCCCCCCCCCC", "destination": "deleteConfirm", "style": "alert", "title": "Delete?",
     "buttons": [{"id": "ok", "label": "OK", "role": "default"}], "key": "deleteConfirm", "state": "presented",
     "locked": false, "payload": {}, "requestedAt": "2026-12-03T07:20:20.000Z",
     "presentedAt": "2026-12-03T07:20:20.000Z", "dismissedAt": null, "result": null}
    """

@Suite("Navigation values on the wire")
struct NavigationCodingTests {
    @Test("a path entry has id, destination, key, payload and pushedAt, all required")
    func pathEntry() throws {
        #expect(try roundTrip(PathEntry.self, entryJSON) == entry)
        #expect(entry.key == "privacy", "the key defaults to the destination")
        #expect(throws: DecodingError.self) {
            try decode(PathEntry.self, #"{"id": "A", "destination": "privacy", "key": "privacy", "payload": {}}"#)
        }
    }

    @Test("a level is root or a presentation id")
    func levels() throws {
        #expect(
            try decode([NavigationLevel].self, #"["root", "BBBBBBBBBBBBBBBBBBBBBBBB"]"#)
                == [.root, .presentation("BBBBBBBBBBBBBBBBBBBBBBBB")])
        #expect(try encoded(NavigationLevel.root) == "root")
        #expect(NavigationLevel.presentation("x").description == "x")
    }

    @Test("a session has the root path; its containers have theirs, alert-like presentations none")
    func sessionWithPaths() throws {
        let text = """
            {"id": "demo", "version": 3, "createdAt": "2026-12-03T07:20:20.000Z",
             "updatedAt": "2026-12-03T07:20:21.123Z", "path": [\(entryJSON)], "stack": [\(sheetJSON()), \(alertJSON)],
             "top": \(alertJSON), "queue": [], "ttl": 604800, "expiresAt": "2026-12-10T07:20:21.123Z"}
            """
        let session = try roundTrip(Session.self, text)
        #expect(session.path == [entry])
        #expect(session.stack.map(\.path) == [[entry], []])
        #expect(session.path(of: .root) == [entry])
        #expect(session.path(of: .presentation("BBBBBBBBBBBBBBBBBBBBBBBB")) == [entry])
        #expect(session.path(of: .presentation("CCCCCCCCCCCCCCCCCCCCCCCC")) == nil, "an alert has no path")
        #expect(session.path(of: .presentation("gone")) == nil)
        #expect(
            session.defaultLevel == .presentation("BBBBBBBBBBBBBBBBBBBBBBBB"), "the top-most container, under an alert")
        #expect(Session.unwritten("s").defaultLevel == .root)

        let withoutPath = text.replacingOccurrences(of: #""path": [\#(entryJSON)], "#, with: "")
        #expect(withoutPath != text)
        #expect(throws: DecodingError.self) { try decode(Session.self, withoutPath) }
    }

    @Test("a container without path does not decode; an alert's path is empty and not written")
    func presentationPaths() throws {
        #expect(try roundTrip(Presentation.self, sheetJSON(path: "[]")).path == [])
        #expect(throws: DecodingError.self) { try decode(Presentation.self, sheetJSON(path: nil)) }
        let alert = try roundTrip(Presentation.self, alertJSON)
        #expect(alert.path == [])
        guard case .object(let object) = try encoded(alert) else { throw Mismatch("not an object") }
        #expect(object["path"] == nil)
    }

    @Test("each event decodes as the contract writes it, and encodes back the same")
    func events() throws {
        let sheet = try decode(Presentation.self, sheetJSON())
        let cases: [(String, SessionEvent)] = [
            (#"{"type": "sessionCreated", "ttl": 3600}"#, .sessionCreated(ttl: 3600)),
            (
                #"{"type": "pushed", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON), "level": "root"}"#,
                .pushed(entry, level: .root)
            ),
            (
                #"{"type": "popped", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON), "level": "BBBBBBBBBBBBBBBBBBBBBBBB", "result": {"saved": true}}"#,
                .popped(entry, level: .presentation("BBBBBBBBBBBBBBBBBBBBBBBB"), result: ["saved": true])
            ),
            (
                #"{"type": "popped", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON), "level": "root"}"#,
                .popped(entry, level: .root, result: nil)
            ),
            (
                #"{"type": "popped", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON), "level": "root", "result": null}"#,
                .popped(entry, level: .root, result: .null)
            ),
            (
                #"{"type": "entryUpdated", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON), "level": "root"}"#,
                .entryUpdated(entry, level: .root)
            ),
            (#"{"type": "navigated"}"#, .navigated(url: nil, route: nil)),
            (
                #"{"type": "navigated", "url": "myapp://downloads/42", "route": "/downloads/{itemId}"}"#,
                .navigated(url: "myapp://downloads/42", route: "/downloads/{itemId}")
            ),
            (
                #"{"type": "updated", "presentationId": "BBBBBBBBBBBBBBBBBBBBBBBB", "presentation": \#(sheetJSON())}"#,
                .updated(sheet)
            ),
        ]
        for (text, event) in cases {
            #expect(try roundTrip(SessionEvent.self, text) == event, "\(text)")
        }
        #expect(SessionEvent.pushed(entry, level: .root).entry == entry)
        #expect(SessionEvent.popped(entry, level: .root, result: nil).level == .root)
        #expect(SessionEvent.updated(sheet).entry == nil && SessionEvent.updated(sheet).level == nil)

        // What does not hold together does not decode.
        #expect(throws: DecodingError.self) { try decode(SessionEvent.self, #"{"type": "sessionCreated"}"#) }
        #expect(throws: DecodingError.self) {
            try decode(
                SessionEvent.self, #"{"type": "pushed", "entryId": "other", "entry": \#(entryJSON), "level": "root"}"#)
        }
        #expect(throws: DecodingError.self) {
            try decode(
                SessionEvent.self, #"{"type": "pushed", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \#(entryJSON)}"#
            )
        }
    }

    @Test("transition steps: dismiss and present name a modal, pop and push an entry and its level")
    func transitionSteps() throws {
        let text = """
            [{"dismiss": "b"}, {"pop": "e2", "level": "a"}, {"push": "e3", "level": "root"}, {"present": "c"},
             {"push": "e4", "level": "c"}]
            """
        #expect(
            try roundTrip([TransitionStep].self, text) == [
                .dismiss("b"), .pop("e2", level: .presentation("a")), .push("e3", level: .root), .present("c"),
                .push("e4", level: .presentation("c")),
            ])
        for bad in [
            #"{"pop": "e2"}"#, #"{"dismiss": "b", "level": "root"}"#, #"{"push": "e", "pop": "e", "level": "root"}"#,
            "{}",
        ] {
            #expect(throws: DecodingError.self, "\(bad)") { try decode(TransitionStep.self, bad) }
        }
    }

    @Test("a change record carries the stack, the root path and every container's path, by ids")
    func changeRecord() throws {
        let text = """
            {"version": 4, "at": "2026-12-03T07:20:21.123Z",
             "events": [{"type": "pushed", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA", "entry": \(entryJSON), "level": "root"}],
             "stack": ["BBBBBBBBBBBBBBBBBBBBBBBB"], "path": ["AAAAAAAAAAAAAAAAAAAAAAAA"],
             "paths": {"BBBBBBBBBBBBBBBBBBBBBBBB": []}}
            """
        let change = try roundTrip(SessionChange.self, text)
        #expect(change.path == ["AAAAAAAAAAAAAAAAAAAAAAAA"])
        #expect(change.paths == ["BBBBBBBBBBBBBBBBBBBBBBBB": []])
        #expect(throws: DecodingError.self) {
            try decode(SessionChange.self, text.replacingOccurrences(of: #""paths""#, with: #""other""#))
        }
    }

    @Test("an events page lists its changes' ids; sessionChanges joins them with their events")
    func eventsPage() throws {
        let text = """
            {"after": 0, "events": [
               {"version": 1, "at": "2026-12-03T07:20:20.000Z", "type": "sessionCreated", "ttl": 60},
               {"version": 1, "at": "2026-12-03T07:20:20.000Z", "type": "pushed", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA",
                "entry": \(entryJSON), "level": "root"},
               {"version": 2, "at": "2026-12-03T07:20:21.123Z", "type": "popped", "entryId": "AAAAAAAAAAAAAAAAAAAAAAAA",
                "entry": \(entryJSON), "level": "root", "result": 7}],
             "changes": [
               {"version": 1, "at": "2026-12-03T07:20:20.000Z", "stack": [], "path": ["AAAAAAAAAAAAAAAAAAAAAAAA"], "paths": {}},
               {"version": 2, "at": "2026-12-03T07:20:21.123Z", "stack": [], "path": [], "paths": {}}],
             "version": 2, "next": null}
            """
        let page = try roundTrip(EventsPage.self, text)
        let changes = page.sessionChanges
        #expect(changes.map(\.version) == [1, 2])
        #expect(changes[0].events == [.sessionCreated(ttl: 60), .pushed(entry, level: .root)])
        #expect(changes[1].events == [.popped(entry, level: .root, result: 7)])
        #expect(changes[0].path == ["AAAAAAAAAAAAAAAAAAAAAAAA"] && changes[1].path == [])

        // Folded from the unwritten session, the page gives each version.
        let first = try #require(Session.unwritten("demo").applying(changes[0]))
        #expect(
            first.path == [entry] && first.ttl == 60
                && first.createdAt == ModalStackJSON.Timestamp.parse("2026-12-03T07:20:20.000Z"))
        let second = try #require(first.applying(changes[1]))
        #expect(second.path == [] && second.version == 2)
        #expect(second.expiresAt == ModalStackJSON.Timestamp.parse("2026-12-03T07:21:21.123Z"))
    }

    @Test("push, pop and navigation bodies send only what was set")
    func requestBodies() throws {
        #expect(try encoded(PushRequest(destination: "privacy")) == json(#"{"destination": "privacy"}"#))
        #expect(
            try encoded(
                PushRequest(destination: "profile", payload: ["userId": 7], key: "p7", level: .presentation("B")))
                == json(#"{"destination": "profile", "payload": {"userId": 7}, "key": "p7", "level": "B"}"#))
        let pops: [(PopRequest, String)] = [
            (PopRequest(), "{}"),
            (PopRequest(.count(2), level: .root), #"{"level": "root", "count": 2}"#),
            (PopRequest(.to("e1"), result: ["ok": true]), #"{"to": "e1", "result": {"ok": true}}"#),
            (PopRequest(.all, result: .null), #"{"all": true, "result": null}"#),
        ]
        for (request, text) in pops {
            #expect(try encoded(request) == json(text))
            #expect(try decode(PopRequest.self, text) == request)
        }
        #expect(throws: DecodingError.self) { try decode(PopRequest.self, #"{"count": 1, "all": true}"#) }
        #expect(throws: DecodingError.self) { try decode(PopRequest.self, #"{"all": false}"#) }

        let navigation = NavigationRequest(
            path: [PathEntryRequest(destination: "home")],
            stack: [
                .init(PresentRequest(destination: "onboarding")),
                .init(
                    PresentRequest(destination: "downloads", style: .fullScreenCover),
                    path: [PathEntryRequest(destination: "downloadItem", payload: ["itemId": 42], key: "item")]),
                .init(PresentRequest(destination: "confirm", style: .alert(title: "Sure?"))),
            ], force: true)
        let text = """
            {"path": [{"destination": "home"}],
             "stack": [{"destination": "onboarding", "style": "sheet"},
                       {"destination": "downloads", "style": "fullScreenCover",
                        "path": [{"destination": "downloadItem", "payload": {"itemId": 42}, "key": "item"}]},
                       {"destination": "confirm", "style": "alert", "title": "Sure?"}],
             "force": true}
            """
        #expect(try encoded(navigation) == json(text))
        #expect(try decode(NavigationRequest.self, text) == navigation)
        #expect(try encoded(NavigationRequest()) == json(#"{"path": [], "stack": []}"#))
    }

    @Test("answers of push, pop, navigation, links and entry reads decode")
    func answers() throws {
        let session = """
            {"id": "demo", "version": 2, "createdAt": "2026-12-03T07:20:20.000Z",
             "updatedAt": "2026-12-03T07:20:21.123Z", "path": [\(entryJSON)], "stack": [], "top": null, "queue": [],
             "ttl": 604800, "expiresAt": "2026-12-10T07:20:21.123Z"}
            """
        let push = try roundTrip(
            PushResponse.self,
            """
            {"entry": \(entryJSON), "level": "root", "transition": [{"push": "AAAAAAAAAAAAAAAAAAAAAAAA", "level": "root"}],
             "session": \(session)}
            """)
        #expect(push.entry == entry && push.level == .root && push.session.path == [entry])
        let pop = try roundTrip(
            PopResponse.self,
            """
            {"popped": [\(entryJSON)], "level": "root", "transition": [{"pop": "AAAAAAAAAAAAAAAAAAAAAAAA", "level": "root"}],
             "session": \(session)}
            """)
        #expect(pop.popped == [entry] && pop.transition == [.pop(entry.id, level: .root)])
        let link = try roundTrip(
            LinkResponse.self,
            """
            {"route": {"name": "download-item", "url": "/downloads/{itemId}"}, "action": "navigate", "dismissed": [],
             "promoted": [], "transition": [], "session": \(session)}
            """)
        #expect(link.route == LinkRoute(name: "download-item", url: "/downloads/{itemId}") && link.action == .navigate)
        let place = try roundTrip(
            PathEntryPlace.self, #"{"level": "BBBBBBBBBBBBBBBBBBBBBBBB", "position": 0, "entry": \#(entryJSON)}"#)
        #expect(place.level == .presentation("BBBBBBBBBBBBBBBBBBBBBBBB") && place.position == 0)
    }

    @Test("a resolved link carries the request of its action")
    func linkResolutions() throws {
        let cases: [(String, LinkResolution.Request)] = [
            (
                #"{"path": [], "stack": [{"destination": "onboarding", "style": "sheet"}, {"destination": "downloads", "style": "sheet", "path": [{"destination": "downloadItem", "payload": {"itemId": 42}}]}]}"#,
                .navigate(
                    NavigationRequest(stack: [
                        .init(PresentRequest(destination: "onboarding")),
                        .init(
                            PresentRequest(destination: "downloads"),
                            path: [PathEntryRequest(destination: "downloadItem", payload: ["itemId": 42])]),
                    ]))
            ),
            (
                #"{"destination": "profile", "payload": {"userId": 7}}"#,
                .push(PushRequest(destination: "profile", payload: ["userId": 7]))
            ),
            (
                #"{"destination": "help", "style": "sheet", "payload": {"text": "billing"}}"#,
                .present(PresentRequest(destination: "help", payload: ["text": "billing"]))
            ),
            (#"{"path": [{"destination": "privacy"}]}"#, .replacePath([PathEntryRequest(destination: "privacy")])),
        ]
        for (request, expected) in cases {
            let text = """
                {"route": {"url": "/x"}, "action": "\(expected.action.rawValue)", "clear": false, "request": \(request)}
                """
            let resolution = try roundTrip(LinkResolution.self, text)
            #expect(resolution.request == expected && resolution.action == expected.action)
            #expect(resolution.route == LinkRoute(url: "/x") && !resolution.clear)
        }
        #expect(throws: DecodingError.self) {
            try decode(
                LinkResolution.self, #"{"route": {"url": "/x"}, "action": "teleport", "clear": false, "request": {}}"#)
        }
    }

    @Test("a catalog destination may allow push beside its modal styles")
    func catalogPush() throws {
        let destination = try roundTrip(
            CatalogDestination.self, #"{"name": "profile", "styles": ["sheet", "push"], "summary": "A user's profile"}"#
        )
        #expect(destination.styles == [.sheet] && destination.allowsPush)
        let modalOnly = try roundTrip(
            CatalogDestination.self, #"{"name": "help", "styles": ["sheet", "fullScreenCover"]}"#)
        #expect(modalOnly.styles == [.sheet, .fullScreenCover] && !modalOnly.allowsPush)
        let pushOnly = try roundTrip(CatalogDestination.self, #"{"name": "privacy", "styles": ["push"]}"#)
        #expect(pushOnly.styles.isEmpty && pushOnly.allowsPush)
        #expect(throws: DecodingError.self) {
            try decode(CatalogDestination.self, #"{"name": "x", "styles": ["carousel"]}"#)
        }
    }

    @Test("the problems of paths and links are typed errors with their members")
    func problems() throws {
        func error(_ slug: String, _ extensions: JSONObject) -> ModalStackError {
            ModalStackError(
                ModalStackError.Problem(
                    type: "/problems/\(slug)", title: "T", status: 409, detail: "d", extensions: extensions))
        }
        guard
            case .alreadyPushed(let entryID, let level, let position, _) = error(
                "already-pushed", ["entryId": "e1", "level": "root", "position": 1])
        else { throw Mismatch("already-pushed") }
        #expect(entryID == "e1" && level == .root && position == 1)
        guard case .pathFull(let maxPathDepth, _) = error("path-full", ["maxPathDepth": 16]) else {
            throw Mismatch("path-full")
        }
        #expect(maxPathDepth == 16)
        guard case .nothingToPop(let emptyLevel, _) = error("nothing-to-pop", ["level": "root"]) else {
            throw Mismatch("nothing-to-pop")
        }
        #expect(emptyLevel == .root)
        guard case .levelNotFound(let missing, _) = error("level-not-found", ["level": "B"]) else {
            throw Mismatch("level-not-found")
        }
        #expect(missing == .presentation("B"))
        guard case .entryNotFound(let entry, _) = error("entry-not-found", ["entryId": "e9"]) else {
            throw Mismatch("entry-not-found")
        }
        #expect(entry == "e9")
        guard case .noRoute(let url, _) = error("no-route", ["url": "myapp://nowhere"]) else {
            throw Mismatch("no-route")
        }
        #expect(url == "myapp://nowhere")
        for slug in ["already-pushed", "path-full", "nothing-to-pop", "level-not-found", "entry-not-found", "no-route"]
        {
            #expect(error(slug, [:]).slug == slug && error(slug, [:]).status == 409)
        }
    }
}

private struct Mismatch: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
