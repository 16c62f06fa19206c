import Foundation
// HTTPClient's headers; a dependency of ModalStackTestSupport.
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@testable import ModalStackClient

/// Drives one session of a real server with random requests, keeping the session after each.
private struct Driver {
    let client: HTTPClient
    let base: String
    var random: SeededGenerator
    /// The session as `GET` gave it at each version: the truth the derivations are checked against.
    var sessions: [Int64: Session] = [:]
    var current: Session

    init(server: ServerProcess, sessionID: String, seed: UInt64) throws {
        client = server.client()
        base = "/v1/sessions/\(sessionID)"
        random = SeededGenerator(seed: seed)
        _ = try Self.send(client, "PUT", base, body: CreateSessionRequest())
        current = try Self.read(client, base)
        sessions[current.version] = current
    }

    @discardableResult
    static func send(_ client: HTTPClient, _ method: String, _ path: String, body: (some Encodable)?) throws -> Int {
        let bytes = try body.map { Array(try ModalStackJSON.makeEncoder().encode($0)) } ?? []
        return try client.send(
            method: method, path: path, headers: bytes.isEmpty ? [:] : ["Content-Type": "application/json"], body: bytes
        ).status
    }

    static func read(_ client: HTTPClient, _ path: String) throws -> Session {
        let response = try client.send(method: "GET", path: path)
        return try ModalStackJSON.makeDecoder().decode(Session.self, from: Data(response.body))
    }

    /// Sends one random request, then reads the session and keeps it by version.
    mutating func step() throws {
        let status = try sendRandomRequest()
        #expect((200..<300).contains(status) || [404, 409, 422].contains(status), "status \(status)")
        let session = try Self.read(client, base)
        // A refusal changes nothing; a success may change nothing either (a present or a
        // replacement that asks for what is there).
        let changed = session.version == current.version + 1
        #expect(session.version == current.version || (changed && (200..<300).contains(status)), "status \(status)")
        if let known = sessions[session.version] {
            #expect(known == session, "version \(session.version) read twice, differently")
        }
        sessions[session.version] = session
        current = session
    }

    private mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    private mutating func pick<T>(_ values: [T]) -> T? { values.randomElement(using: &random) }

    /// `value` or, half the time, `nil`: a member left to the server's default.
    private mutating func maybe<T>(_ value: T) -> T? { chance(50) ? value : nil }

    private mutating func sendRandomRequest() throws -> Int {
        let stack = current.stack
        let queue = current.queue
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<26:
            return try Self.send(client, "POST", "\(base)/presentations", body: randomPresent())
        case 26..<30:
            // The top's key, destination and style again: updated in place, with other fields.
            guard let top = current.top else { return try sendRandomRequest() }
            var request = PresentRequest(
                destination: top.destination, style: randomStyle(like: top.style.kind), key: top.key,
                payload: randomPayload())
            request.whenBlocked = .queue
            return try Self.send(client, "POST", "\(base)/presentations", body: request)
        case 30..<38:
            guard let target = pick(stack + queue) else { return try sendRandomRequest() }
            var update = UpdateRequest()
            if case .progress(_, let total, _) = target.style, chance(60) {
                update.completed = Double(Int.random(in: 0...Int(total) + 1, using: &random))
                if chance(30) { update.message = "step \(Int.random(in: 0..<5, using: &random))" }
            } else {
                update.payload = randomPayload() ?? [:]
            }
            return try Self.send(client, "PATCH", "\(base)/presentations/\(target.id)", body: update)
        case 38..<52:
            return try Self.send(client, "POST", "\(base)/dismiss", body: randomDismiss())
        case 52..<56:
            guard let target = pick(stack + queue) else { return try sendRandomRequest() }
            let force = chance(50) ? "?force=true" : ""
            return try Self.send(client, "DELETE", "\(base)/presentations/\(target.id)\(force)", body: nil as Int?)
        case 56..<62:
            return try Self.send(client, "PUT", "\(base)/stack", body: randomReplacement())
        case 62..<80:
            return try Self.send(client, "POST", "\(base)/path", body: randomPush())
        case 80..<92:
            return try Self.send(client, "POST", "\(base)/path/pop", body: randomPop())
        default:
            return try Self.send(client, "PUT", "\(base)/navigation", body: randomNavigation())
        }
    }

    /// A level to push onto or pop from: mostly the default, the root or a container of the stack;
    /// now and then one that is no container there (an alert, a queued presentation, an unknown id).
    private mutating func randomLevel() -> NavigationLevel? {
        let containers = current.stack.filter { !$0.style.kind.isAlertLike }
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<3: return nil
        case 3..<5: return .root
        case 5..<9: return pick(containers).map { .presentation($0.id) } ?? .root
        default: return pick(current.stack + current.queue).map { .presentation($0.id) } ?? .presentation("unknown")
        }
    }

    /// The path a push or pop at `level` would find (the default level's when nil).
    private func path(at level: NavigationLevel?) -> [PathEntry] {
        current.path(of: level ?? current.defaultLevel) ?? []
    }

    private mutating func randomPush() -> PushRequest {
        let level = randomLevel()
        // The last entry's key and destination again: updated in place, with this payload.
        if let last = path(at: level).last, chance(20) {
            return PushRequest(destination: last.destination, payload: randomPayload(), key: last.key, level: level)
        }
        return randomEntry(level: level)
    }

    private mutating func randomEntry(level: NavigationLevel? = nil) -> PushRequest {
        let destination = pick(Self.destinations)!
        return PushRequest(
            destination: destination, payload: randomPayload(),
            key: chance(50) ? nil : "\(destination)-\(Int.random(in: 0..<3, using: &random))", level: level)
    }

    private mutating func randomPop() -> PopRequest {
        let level = randomLevel()
        let path = path(at: level)
        let target: PopRequest.Target =
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1: .top
            case 2: .count(Int.random(in: 1...max(1, path.count + 1), using: &random))
            case 3: pick(path).map { .to($0.id) } ?? .to("unknown")
            default: .all
            }
        let result: JSONValue? = pick([nil, .null, ["saved": true], 3])!
        return PopRequest(target, level: level, result: result)
    }

    /// A path asked for again: a first part of `path` (the same keys and destinations, some with other
    /// payloads), then maybe new entries.
    private mutating func randomPath(from path: [PathEntry]) -> [PathEntryRequest] {
        let kept = path.prefix(Int.random(in: 0...path.count, using: &random)).map { entry in
            PathEntryRequest(
                destination: entry.destination, payload: chance(70) ? entry.payload : randomPayload(), key: entry.key)
        }
        var added: [PathEntryRequest] = []
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let entry = randomEntry()
            added.append(PathEntryRequest(destination: entry.destination, payload: entry.payload, key: entry.key))
        }
        return kept + added
    }

    /// A whole navigation: a first part of the stack asked for again with its paths changed, maybe
    /// new modals with paths of their own, sometimes an alert on top; and the root path changed.
    private mutating func randomNavigation() -> NavigationRequest {
        let replacement = randomReplacement()
        let stack = replacement.stack.enumerated().map { index, request in
            let old = current.stack.indices.contains(index) ? current.stack[index].path : []
            let path = request.style.kind.isAlertLike ? nil : randomPath(from: old)
            return NavigationRequest.Modal(request, path: path)
        }
        var modals = stack
        if chance(15) {
            modals.append(.init(PresentRequest(destination: "help", style: .alert(title: "Done"), key: "done-alert")))
        }
        return NavigationRequest(path: randomPath(from: current.path), stack: modals, force: replacement.force)
    }

    private static let destinations = ["home", "profile", "settings", "share", "pay", "help"]

    private mutating func randomPayload() -> JSONObject? {
        chance(25) ? nil : ["n": .number(Double(Int.random(in: 0..<4, using: &random)))]
    }

    private mutating func randomStyle(like kind: ModalStyle.Kind? = nil) -> PresentRequest.Style {
        let kind = kind ?? pick(ModalStyle.Kind.allCases)!
        switch kind {
        case .sheet:
            return .sheet(
                detents: maybe(pick([[], [.medium], [.medium, .large]])!), interactiveDismissDisabled: maybe(true))
        case .fullScreenCover: return .fullScreenCover
        case .popover: return .popover
        case .alert:
            return .alert(
                title: pick(["Sure?", "Done"])!, message: maybe("Really."),
                buttons: maybe([.init(id: "ok", label: "OK"), .init(id: "no", label: "No", role: .cancel)]))
        case .confirmationDialog:
            return .confirmationDialog(
                title: "Delete?", message: nil,
                buttons: [.init(id: "delete", label: "Delete", role: .destructive), .init(id: "keep", label: "Keep")])
        case .dialog: return .dialog
        case .progress:
            return .progress(message: maybe("Loading"), total: 4, completed: maybe(pick([0, 2])!))
        }
    }

    private mutating func randomPresent() -> PresentRequest {
        let destination = pick(Self.destinations)!
        // Mostly sheets and covers, so that the stack grows; alert-like ones block and fill the queue.
        let style =
            chance(65) ? randomStyle(like: pick([.sheet, .sheet, .fullScreenCover, .popover])!) : randomStyle()
        return PresentRequest(
            destination: destination, style: style,
            key: chance(50) ? nil : "\(destination)-\(Int.random(in: 0..<3, using: &random))",
            payload: randomPayload(), locked: chance(10) ? true : nil, whenBlocked: chance(85) ? .queue : .reject)
    }

    private mutating func randomDismiss() -> DismissRequest {
        let stack = current.stack
        let target: DismissRequest.Target =
            switch Int.random(in: 0..<7, using: &random) {
            case 0, 1: .top
            case 2: .count(Int.random(in: 1...max(1, stack.count + 1), using: &random))
            case 3: pick(stack).map { .to($0.id) } ?? .top
            case 4: pick(stack).map { .presentation($0.id) } ?? .top
            case 5: pick(current.queue).map { .presentation($0.id) } ?? .all
            default: .all
            }
        let result: JSONValue? = pick([nil, .null, ["buttonId": "ok"], ["buttonId": "delete"], ["value": 1]])!
        return DismissRequest(target, result: result, force: chance(40) ? true : nil)
    }

    /// A new stack: a bottom part of the current one, asked for again (with the same or other
    /// fields and payloads), then maybe new presentations; sometimes empty.
    private mutating func randomReplacement() -> ReplaceStackRequest {
        guard chance(75) else { return ReplaceStackRequest(stack: [], force: chance(60) ? true : nil) }
        let kept = current.stack.prefix(Int.random(in: 0...current.stack.count, using: &random)).map { entry in
            PresentRequest(
                destination: entry.destination,
                style: chance(60) ? Self.requestStyle(entry.style) : randomStyle(like: entry.style.kind),
                key: entry.key,
                payload: chance(60) ? entry.payload : randomPayload(), locked: entry.locked)
        }
        var added: [PresentRequest] = []
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            var request = randomPresent()
            request.whenBlocked = nil
            if request.style.kind.isAlertLike { request.style = .sheet() }
            added.append(request)
        }
        return ReplaceStackRequest(stack: kept + added, force: chance(60) ? true : nil)
    }

    /// The request that asks for `style` as it is.
    private static func requestStyle(_ style: ModalStyle) -> PresentRequest.Style {
        func buttons(_ buttons: [AlertButton]) -> [AlertButtonRequest] {
            buttons.map { AlertButtonRequest(id: $0.id, label: $0.label, role: $0.role) }
        }
        switch style {
        case .sheet(let detents, let disabled): return .sheet(detents: detents, interactiveDismissDisabled: disabled)
        case .fullScreenCover: return .fullScreenCover
        case .popover: return .popover
        case .alert(let title, let message, let list):
            return .alert(title: title, message: message, buttons: buttons(list))
        case .confirmationDialog(let title, let message, let list):
            return .confirmationDialog(title: title, message: message, buttons: buttons(list))
        case .dialog: return .dialog
        case .progress(let message, let total, let completed):
            return .progress(message: message, total: total, completed: completed)
        }
    }
}

/// Reads the session's whole event stream from the start (`Last-Event-ID: 0`), through the
/// change that made `version`, with ``ServerSentEventParser``.
private func streamedChanges(_ server: ServerProcess, sessionID: String, through version: Int64) throws
    -> [SessionChange]
{
    let client = server.client()
    defer { client.close() }
    let head = try client.openStream(path: "/v1/sessions/\(sessionID)/events/stream", headers: ["Last-Event-ID": "0"])
    #expect(head.status == 200)
    var parser = ServerSentEventParser()
    var changes: [SessionChange] = []
    while changes.last?.version != version, let chunk = try client.readChunk() {
        for event in parser.feed(Data(chunk)) {
            #expect(event.type == "change")
            let change = try ModalStackJSON.makeDecoder().decode(SessionChange.self, from: Data(event.data.utf8))
            #expect(event.lastEventID == String(change.version))
            changes.append(change)
        }
    }
    return changes
}

/// Pages through `GET …/events` from the start: the logged changes, each with its events.
private func loggedChanges(_ client: HTTPClient, sessionID: String) throws -> [SessionChange] {
    var changes: [SessionChange] = []
    var next: String? = "/v1/sessions/\(sessionID)/events?after=0&limit=50"
    while let path = next {
        let response = try client.send(method: "GET", path: path)
        let page = try ModalStackJSON.makeDecoder().decode(EventsPage.self, from: Data(response.body))
        #expect(Set(page.events.map(\.version)) == Set(page.changes.map(\.version)), "\(path)")
        changes += page.sessionChanges
        next = page.next
    }
    return changes
}

@Suite("Session.applying(_:) against the server")
struct SessionChangeServerTests {
    @Test("every change, streamed or logged, applied to the session before it gives the session after it")
    func differential() throws {
        let seed = SeededGenerator.seed()
        let server = try ServerProcess(arguments: ["--max-depth", "4", "--queue-size", "4", "--max-path-depth", "4"])
        let sessionID = "derive-\(seed)"
        var driver = try Driver(server: server, sessionID: sessionID, seed: seed)
        for _ in 0..<500 { try driver.step() }
        let sessions = driver.sessions
        let last = driver.current.version
        #expect(Set(sessions.keys) == Set(1...last), "seed \(seed)")

        // The stream's `change` events and the log's pages tell the same changes.
        let changes = try streamedChanges(server, sessionID: sessionID, through: last)
        #expect(changes.map(\.version) == Array(1...last))
        let logged = try loggedChanges(driver.client, sessionID: sessionID)
        #expect(logged == changes, "seed \(seed)")
        #expect(changes.first?.events.first == .sessionCreated(ttl: sessions[1]?.ttl ?? 0))

        // Folded from the unwritten session, every change gives exactly the session the server read.
        var state = Session.unwritten(sessionID)
        var kinds: Set<String> = []
        for change in changes {
            let after = try #require(sessions[change.version])
            guard let next = state.applying(change) else {
                Issue.record("version \(change.version) does not apply, seed \(seed): \(change.events.map(\.type))")
                state = after
                continue
            }
            #expect(next == after, "version \(change.version), seed \(seed)")
            kinds.formUnion(change.events.map(\.type))
            if let older = sessions[change.version - 2] { #expect(older.applying(change) == nil) }
            state = after
        }
        print("seed \(seed): \(changes.count) changes derived; kinds \(kinds.sorted())")
        #expect(
            kinds.isSuperset(of: [
                "sessionCreated", "presented", "queued", "promoted", "updated", "dismissed", "replaced", "pushed",
                "popped", "entryUpdated", "navigated",
            ]), "seed \(seed)")
    }
}
