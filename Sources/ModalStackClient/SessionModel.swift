import Foundation
import Observation

/// One session as an app shows it: the state the server confirmed, the changes this app sent and
/// is waiting for shown as if done, and what each level of the view hierarchy presents.
///
/// ```swift
/// let model = ModalStackSession(sessionID: "user-42", client: client)
/// Task { await model.follow() }      // the server's changes, as they happen
/// model.present(PresentRequest(destination: "settings"))
/// model.userDismissed(level: 0)      // the user swiped the sheet down
/// ```
///
/// Every intent (``present(_:)``, ``dismiss(_:)``, ``answer(buttonID:)``, ``userDismissed(level:)``)
/// changes ``state`` at once, as the app predicts it, sends the change, and then shows what the
/// server answered; a refusal takes the prediction back and sets ``lastError``. The prediction
/// knows the shape of a change (what is pushed, queued or removed), not the rules: whether a
/// present may go on the stack or a locked sheet may go is the server's answer.
///
/// All the logic a SwiftUI binding needs is here, so that it can be tested where SwiftUI does not
/// exist; `View.modalStack(_:content:)` only reads it.
@MainActor
@Observable
public final class ModalStackSession {
    public let sessionID: String
    @ObservationIgnored public let client: ModalStackClient
    /// The newest state the server confirmed, from an answer or from the event stream.
    public private(set) var confirmed: Session?
    /// What to show: ``confirmed`` with the changes still waiting for their answer applied.
    public private(set) var state: Session?
    /// The last refusal or failure of an intent, until the next intent is sent.
    public private(set) var lastError: (any Error)?
    /// Where following the session is (see ``follow()``).
    public private(set) var connection: LiveUpdateStatus?
    /// The changes sent and not yet answered, oldest first.
    private var pending: [PendingChange] = []

    public init(sessionID: String, client: ModalStackClient) {
        self.sessionID = sessionID
        self.client = client
    }

    // MARK: What to show

    /// What each level of the view hierarchy presents, bottom first: level 0 is presented by the
    /// root view, level 1 by level 0's view, and so on. Sheets, full-screen covers and popovers
    /// only; an alert-like entry is ``alert``.
    public var levels: [Presentation] {
        guard let stack = state?.stack else { return [] }
        return stack.last?.style.kind.isAlertLike == true ? Array(stack.dropLast()) : stack
    }

    /// The alert, confirmation dialog, custom dialog or progress dialog on top, if any: presented by
    /// the view at depth ``levels``.count (the root view when no level is presented).
    public var alert: Presentation? {
        guard let top = state?.stack.last, top.style.kind.isAlertLike else { return nil }
        return top
    }

    /// The presentations waiting, the next first.
    public var queue: [Presentation] { state?.queue ?? [] }

    /// The entry level `level` presents, if it is presented as `kind` (what one `.sheet(item:)`,
    /// `.fullScreenCover(item:)` or `.popover(item:)` modifier of that level shows).
    public func presentation(atLevel level: Int, as kind: ModalStyle.Kind) -> Presentation? {
        let levels = levels
        guard levels.indices.contains(level), levels[level].style.kind == kind else { return nil }
        return levels[level]
    }

    // MARK: Following the server

    /// Reads the session once.
    public func refresh() async throws {
        confirm(try await client.session(sessionID))
    }

    /// Shows the server's changes as they happen, until the task is cancelled or the session is
    /// deleted (then ``state`` is `nil`); see ``ModalStackClient/updates(of:resumingFrom:onStatus:)``.
    public func follow() async {
        let updates = client.updates(of: sessionID, resumingFrom: confirmed) { status in
            Task { @MainActor [weak self] in self?.connection = status }
        }
        do {
            for try await session in updates { confirm(session) }
        } catch LiveUpdateError.sessionDeleted {
            confirmed = nil
            pending = []
            state = nil
        } catch {
            lastError = error
        }
    }

    // MARK: Intents

    /// Presents `request` (on top, or in the queue when something alert-like is on top or others wait).
    @discardableResult
    public func present(_ request: PresentRequest) -> Task<Void, Never> {
        send(.present(request)) { client, id in try await client.present(request, in: id).session }
    }

    /// Dismisses what `request` says: the top by default.
    @discardableResult
    public func dismiss(_ request: DismissRequest = DismissRequest()) -> Task<Void, Never> {
        send(.dismiss(request)) { client, id in try await client.dismiss(request, in: id).session }
    }

    /// The user tapped the button `buttonID` of the alert or confirmation dialog on top: it is
    /// dismissed with `{"buttonId": buttonID}` as its result. Nothing is sent when no such alert is on top.
    @discardableResult
    public func answer(buttonID: String) -> Task<Void, Never> {
        guard let alert, alert.style.buttons.contains(where: { $0.id == buttonID }) else { return Task {} }
        return dismiss(DismissRequest(.presentation(alert.id), result: .object(["buttonId": .string(buttonID)])))
    }

    /// The user closed level `level` (swiped a sheet down, for one): it goes with everything above
    /// it. Nothing is sent when the level is not presented.
    @discardableResult
    public func userDismissed(level: Int) -> Task<Void, Never> {
        let levels = levels
        guard levels.indices.contains(level) else { return Task {} }
        return dismiss(DismissRequest(.presentation(levels[level].id)))
    }

    // MARK: Reconciling

    private struct PendingChange {
        let id: UUID
        let intent: Intent
    }

    /// What an intent predicts.
    enum Intent {
        case present(PresentRequest)
        case dismiss(DismissRequest)
    }

    /// Shows `intent` as done, sends it with `operation`, then shows the answer or takes the prediction back.
    private func send(
        _ intent: Intent, _ operation: @escaping @Sendable (ModalStackClient, String) async throws -> Session
    ) -> Task<Void, Never> {
        let change = PendingChange(id: UUID(), intent: intent)
        pending.append(change)
        lastError = nil
        recompute()
        let client = client
        let sessionID = sessionID
        return Task {
            do {
                let session = try await operation(client, sessionID)
                settle(change, with: session, error: nil)
            } catch {
                settle(change, with: nil, error: error)
            }
        }
    }

    private func settle(_ change: PendingChange, with session: Session?, error: (any Error)?) {
        pending.removeAll { $0.id == change.id }
        if let error { lastError = error }
        if let session { confirm(session) } else { recompute() }
    }

    private func confirm(_ session: Session) {
        if session.version > confirmed?.version ?? 0 { confirmed = session }
        recompute()
    }

    private func recompute() {
        state = pending.reduce(confirmed) { state, change in state.map { $0.predicting(change.intent) } }
    }
}

extension Session {
    /// The session as `intent` would leave it by its shape alone (no rule is checked, nothing is
    /// promoted, the version stays): what to show until the server answers.
    func predicting(_ intent: ModalStackSession.Intent) -> Session {
        var next = self
        switch intent {
        case .present(let request):
            let key = request.key ?? request.destination
            if var top = stack.last, top.key == key {
                top.style = ModalStyle(request.style)
                top.payload = request.payload ?? top.payload
                next.stack[next.stack.count - 1] = top
            } else if !stack.contains(where: { $0.key == key }), !queue.contains(where: { $0.key == key }) {
                var presentation = Presentation(
                    id: "pending-" + UUID().uuidString, destination: request.destination,
                    style: ModalStyle(request.style), key: key, state: .presented, locked: request.locked ?? false,
                    payload: request.payload ?? [:], requestedAt: Date())
                if stack.last?.style.kind.isAlertLike == true || !queue.isEmpty {
                    presentation.state = .queued
                    next.queue.append(presentation)
                } else {
                    presentation.presentedAt = presentation.requestedAt
                    next.stack.append(presentation)
                }
            }
        case .dismiss(let request):
            switch request.target {
            case .top: next.stack = Array(stack.dropLast())
            case .count(let count): next.stack = Array(stack.dropLast(max(0, count)))
            case .all: next.stack = []
            case .to(let id):
                if let index = stack.firstIndex(where: { $0.id == id }) { next.stack = Array(stack[...index]) }
            case .presentation(let id):
                if let index = stack.firstIndex(where: { $0.id == id }) { next.stack = Array(stack[..<index]) }
                next.queue.removeAll { $0.id == id }
            }
        }
        next.top = next.stack.last
        return next
    }
}

extension ModalStyle {
    /// The style the server makes of a requested one, with the server's defaults.
    public init(_ requested: PresentRequest.Style) {
        func buttons(_ requested: [AlertButtonRequest]) -> [AlertButton] {
            requested.map { AlertButton(id: $0.id, label: $0.label, role: $0.role ?? .default) }
        }
        switch requested {
        case .sheet(let detents, let interactiveDismissDisabled):
            self = .sheet(detents: detents ?? [], interactiveDismissDisabled: interactiveDismissDisabled ?? false)
        case .fullScreenCover: self = .fullScreenCover
        case .popover: self = .popover
        case .alert(let title, let message, let requested):
            self = .alert(
                title: title, message: message,
                buttons: requested.map(buttons) ?? [AlertButton(id: "ok", label: "OK", role: .default)])
        case .confirmationDialog(let title, let message, let requested):
            self = .confirmationDialog(title: title, message: message, buttons: buttons(requested))
        case .dialog: self = .dialog
        case .progress(let message, let total, let completed):
            self = .progress(message: message, total: total, completed: completed ?? 0)
        }
    }

}
