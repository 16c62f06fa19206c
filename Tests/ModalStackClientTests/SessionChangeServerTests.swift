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
        case 0..<36:
            return try Self.send(client, "POST", "\(base)/presentations", body: randomPresent())
        case 36..<42:
            // The top's key, destination and style again: updated in place, with other fields.
            guard let top = current.top else { return try sendRandomRequest() }
            var request = PresentRequest(
                destination: top.destination, style: randomStyle(like: top.style.kind), key: top.key,
                payload: randomPayload())
            request.whenBlocked = .queue
            return try Self.send(client, "POST", "\(base)/presentations", body: request)
        case 42..<56:
            guard let target = pick(stack + queue) else { return try sendRandomRequest() }
            var update = UpdateRequest()
            if case .progress(_, let total, _) = target.style, chance(60) {
                update.completed = Double(Int.random(in: 0...Int(total) + 1, using: &random))
                if chance(30) { update.message = "step \(Int.random(in: 0..<5, using: &random))" }
            } else {
                update.payload = randomPayload() ?? [:]
            }
            return try Self.send(client, "PATCH", "\(base)/presentations/\(target.id)", body: update)
        case 56..<80:
            return try Self.send(client, "POST", "\(base)/dismiss", body: randomDismiss())
        case 80..<85:
            guard let target = pick(stack + queue) else { return try sendRandomRequest() }
            let force = chance(50) ? "?force=true" : ""
            return try Self.send(client, "DELETE", "\(base)/presentations/\(target.id)\(force)", body: nil as Int?)
        default:
            return try Self.send(client, "PUT", "\(base)/stack", body: randomReplacement())
        }
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

/// The events `GET …/events` lists for one version.
private struct LoggedChange {
    var version: Int64
    var at: Date
    var events: [SessionEvent]
}

/// Pages through `GET …/events` from the start: the logged events, grouped by version.
private func loggedChanges(_ client: HTTPClient, sessionID: String) throws -> [LoggedChange] {
    var changes: [LoggedChange] = []
    var next: String? = "/v1/sessions/\(sessionID)/events?after=0&limit=50"
    while let path = next {
        let response = try client.send(method: "GET", path: path)
        let page = try ModalStackJSON.makeDecoder().decode(EventsPage.self, from: Data(response.body))
        for logged in page.events {
            if changes.last?.version == logged.version {
                changes[changes.count - 1].events.append(logged.event)
            } else {
                changes.append(LoggedChange(version: logged.version, at: logged.at, events: [logged.event]))
            }
        }
        next = page.next
    }
    return changes
}

@Suite("Session.applying(_:) against the server")
struct SessionChangeServerTests {
    @Test("each change applied to the session before it gives the session after it, unless it is nil")
    func differential() throws {
        let seed = SeededGenerator.seed()
        let server = try ServerProcess(arguments: ["--max-depth", "4", "--queue-size", "4"])
        let sessionID = "derive-\(seed)"
        var driver = try Driver(server: server, sessionID: sessionID, seed: seed)
        for _ in 0..<400 { try driver.step() }
        let sessions = driver.sessions
        let last = driver.current.version
        #expect(Set(sessions.keys) == Set(1...last), "seed \(seed)")

        // The paged log has no stack per change: the stream's `change` events carry it, and they
        // are what a client applies. The log must tell the same events.
        let changes = try streamedChanges(server, sessionID: sessionID, through: last)
        #expect(changes.map(\.version) == Array(1...last))
        let logged = try loggedChanges(driver.client, sessionID: sessionID)
        #expect(logged.map(\.version) == changes.map(\.version))
        for (change, logged) in zip(changes, logged) {
            #expect(change.events == logged.events && change.at == logged.at, "version \(change.version)")
        }
        #expect(changes.first?.events == [.sessionCreated])

        var derived = 0
        var notDerived = 0
        var silentlyEdited = 0
        var kindsDerived: Set<String> = []
        for change in changes.dropFirst() {
            let before = try #require(sessions[change.version - 1])
            let after = try #require(sessions[change.version])
            let result = before.applying(change)
            if let result {
                derived += 1
                kindsDerived.formUnion(change.events.map(\.type))
                #expect(result == after, "version \(change.version), seed \(seed)")
            } else {
                notDerived += 1
                let keepsPresentations = change.events.contains {
                    if case .replaced(let stack) = $0 { !stack.isEmpty } else { false }
                }
                #expect(keepsPresentations, "version \(change.version) not derived, seed \(seed)")
                // What a derivation from the events alone would have missed: a kept presentation
                // whose payload or style fields changed.
                let old = Dictionary(uniqueKeysWithValues: before.stack.map { ($0.id, $0) })
                if after.stack.contains(where: { entry in old[entry.id].map { $0 != entry } ?? false }) {
                    silentlyEdited += 1
                }
            }
            if let older = sessions[change.version - 2] { #expect(older.applying(change) == nil) }
        }
        print("seed \(seed): \(changes.count) changes, \(derived) derived, \(notDerived) not (replacements)")
        print("  \(silentlyEdited) replacements changed a kept presentation; derived: \(kindsDerived.sorted())")
        #expect(derived * 5 > (changes.count - 1) * 4, "seed \(seed)")
        #expect(kindsDerived.isSuperset(of: ["presented", "queued", "promoted", "updated", "dismissed"]))
        #expect(silentlyEdited > 0)
    }
}
