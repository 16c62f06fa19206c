import Foundation
import Observation

/// One session as an app shows it: the state the server confirmed, the changes this app sent and
/// is waiting for shown as if done, what each level of the view hierarchy presents, and the screens
/// pushed inside each level.
///
/// ```swift
/// let model = ModalStackSession(sessionID: "user-42", client: client)
/// Task { await model.follow() }      // the server's changes, as they happen
/// model.present(PresentRequest(destination: "settings"))
/// model.push(PushRequest(destination: "privacy"))   // inside the settings sheet
/// model.userPopped(level: .presentation(settingsID))  // the user swiped back
/// model.userDismissed(level: 0)      // the user swiped the sheet down
/// let session = try await model.answer(buttonID: "retry").value  // its own outcome, when needed
/// ```
///
/// Every intent (``present(_:)``, ``dismiss(_:)``, ``answer(buttonID:)``, ``userDismissed(level:)``,
/// ``push(_:)``, ``pop(_:)``, ``userPopped(level:count:)``) changes ``state`` at once, as the app
/// predicts it, sends the change, and then shows what the server answered; a refusal takes the
/// prediction back and sets ``lastError``. Each returns the task that sends it: its `value` is the
/// session the server answered, or throws that intent's own error (an intent with nothing to do
/// throws ``IntentError`` and sends nothing). The prediction knows the shape of a change (what is
/// presented, pushed, queued or removed), not the rules: whether a present may go on the stack, a
/// locked sheet may go or a pop finds its entries is the server's answer.
///
/// All the logic a SwiftUI binding needs is here, so that it can be tested where SwiftUI does not
/// exist; `View.modalStack(_:destination:dialog:)` only reads it.
@MainActor
@Observable
public final class ModalStackSession {
    /// The id of the session the model shows.
    public let sessionID: String
    /// The client the model sends its changes through and follows the session with.
    @ObservationIgnored public let client: ModalStack
    /// The newest state the server confirmed, from an answer or from the event stream.
    public private(set) var confirmed: Session?
    /// What to show: ``confirmed`` with the changes still waiting for their answer applied.
    public private(set) var state: Session?
    /// The last refusal or failure of an intent that was sent, until the app sets it to `nil` (an
    /// alert's dismissal, say). Which intent failed is its own task's error.
    public var lastError: (any Error)?
    /// Where following the session is while ``follow()`` runs; `nil` before and after.
    public private(set) var connection: LiveUpdateStatus?
    /// Why ``follow()`` last ended, when the server refused to go on (a `401`, `403`, a revoked
    /// token); `nil` while it runs and after it ended by cancellation.
    public private(set) var followError: (any Error)?
    /// The run of ``follow()`` going on, if any.
    @ObservationIgnored private var following: UUID?
    /// The changes sent and not yet answered, oldest first.
    private var pending: [PendingChange] = []

    /// A model of the session `sessionID` on `client`; ``state`` is `nil` until the server's first answer.
    public init(sessionID: String, client: ModalStack) {
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

    // MARK: Paths to show

    /// The screens pushed inside the root view, the first first: what the root's
    /// `NavigationStack(path:)` shows.
    public var rootPath: [PathEntry] { state?.path ?? [] }

    /// The screens pushed inside `level`, the first first: the root's, or those of the container
    /// presentation with that id (each of ``levels`` has its own); `[]` when it is not on the stack.
    public func path(at level: NavigationLevel) -> [PathEntry] {
        state?.path(of: level) ?? []
    }

    /// `level`'s path for a `NavigationStack(path:)`, bound as `Bindable(model)[dynamicMember: \.[pathOf: level]]`:
    /// it reads ``path(at:)``, and what the stack writes back is ``userSetPath(_:at:)``.
    subscript(pathOf level: NavigationLevel) -> [PathEntry] {
        get { path(at: level) }
        set { userSetPath(newValue, at: level) }
    }

    // MARK: Following the server

    /// Reads the session once.
    public func refresh() async throws {
        confirm(try await client.session(sessionID))
    }

    /// Shows the server's changes as they happen, until the task is cancelled or the server refuses
    /// to go on (then ``followError`` says why); see ``ModalStack/updates(of:resumingFrom:onStatus:)``.
    ///
    /// When the session is deleted or expires, ``state`` becomes `nil` (nothing shown) and
    /// following goes on: the session made next under the same id is shown from its version 1.
    public func follow() async {
        let run = UUID()
        following = run
        followError = nil
        defer {
            following = nil
            connection = nil
        }
        while !Task.isCancelled {
            let updates = client.updates(of: sessionID, resumingFrom: confirmed) { status in
                // A status can arrive after the follow ended: it is not shown then.
                Task { @MainActor [weak self] in if self?.following == run { self?.connection = status } }
            }
            do {
                for try await session in updates { confirm(session) }
                return
            } catch LiveUpdateError.sessionDeleted, LiveUpdateError.sessionExpired {
                confirmed = nil
                recompute()
            } catch is CancellationError {
                return
            } catch {
                followError = error
                return
            }
        }
    }

    // MARK: Intents

    /// Presents `request` (on top, or in the queue when something alert-like is on top or others wait).
    @discardableResult
    public func present(_ request: PresentRequest) -> Task<Session, any Error> {
        send(.present(request)) { client, id in try await client.present(request, in: id).session }
    }

    /// Dismisses what `request` says: the top by default.
    @discardableResult
    public func dismiss(_ request: DismissRequest = DismissRequest()) -> Task<Session, any Error> {
        send(.dismiss(request)) { client, id in try await client.dismiss(request, in: id).session }
    }

    /// The user tapped the button `buttonID` of the alert or confirmation dialog on top: it is
    /// dismissed with `{"buttonId": buttonID}` as its result. Nothing is sent when no alert is on
    /// top (``IntentError/nothingToAnswer``) or it has no such button (``IntentError/noSuchButton(_:)``).
    /// When another device answered first, the task throws ``IntentError/alreadyDismissed(_:)``
    /// with the alert as it left, its answer in `result`.
    @discardableResult
    public func answer(buttonID: String) -> Task<Session, any Error> {
        guard let alert else { return Task { throw IntentError.nothingToAnswer } }
        guard alert.style.buttons.contains(where: { $0.id == buttonID }) else {
            return Task { throw IntentError.noSuchButton(buttonID) }
        }
        let request = DismissRequest(.presentation(alert.id), result: .object(["buttonId": .string(buttonID)]))
        return send(.dismiss(request)) { client, id in
            do {
                return try await client.dismiss(request, in: id).session
            } catch let error as ModalStackError {
                // The alert may have left meanwhile (another device answered it): say so, with its
                // answer. Older servers call it not found.
                switch error {
                case .presentationDismissed, .presentationNotFound: break
                default: throw error
                }
                guard let left = try? await client.presentation(alert.id, in: id), left.state == .dismissed else {
                    throw error
                }
                throw IntentError.alreadyDismissed(left)
            }
        }
    }

    /// The user closed level `level` (swiped a sheet down, for one): it goes with everything above
    /// it. Nothing is sent when the level is not presented.
    @discardableResult
    public func userDismissed(level: Int) -> Task<Session, any Error> {
        let levels = levels
        guard levels.indices.contains(level) else { return Task { throw IntentError.notShown } }
        return dismiss(DismissRequest(.presentation(levels[level].id)))
    }

    /// Pushes a screen onto a level's path (by default the top-most container, else the root), or
    /// updates the level's last entry in place when it has the same key and destination.
    @discardableResult
    public func push(_ request: PushRequest) -> Task<Session, any Error> {
        send(.push(request)) { client, id in try await client.push(request, in: id).session }
    }

    /// Pops what `request` says: the last entry of the top-most container's path (else the root's)
    /// by default.
    @discardableResult
    public func pop(_ request: PopRequest = PopRequest()) -> Task<Session, any Error> {
        send(.pop(request)) { client, id in try await client.pop(request, in: id).session }
    }

    /// The user went back `count` screens in `level` (a back swipe, or the back button): shown at
    /// once, then sent as a pop. Nothing is sent when the level does not have that many entries.
    ///
    /// The pop names the entry the user went back to (`to`), or the whole path when they went
    /// back to the level's own screen: a screen another client pushed meanwhile, which the user
    /// did not see, goes too, rather than the one they saw staying. An entry whose push is still
    /// waiting for its answer has no id the server knows: then the pop counts.
    @discardableResult
    public func userPopped(level: NavigationLevel, count: Int = 1) -> Task<Session, any Error> {
        let path = path(at: level)
        guard count > 0, count <= path.count else { return Task { throw IntentError.notShown } }
        let target: PopRequest.Target =
            switch path.dropLast(count).last {
            case nil: .all
            case let kept? where kept.id.hasPrefix("pending-"): .count(count)
            case let kept?: .to(kept.id)
            }
        return pop(PopRequest(target, level: level))
    }

    /// What a `NavigationStack(path:)` bound to ``path(at:)`` writes back: a shorter path that
    /// begins the same is the user going back (``userPopped(level:count:)``). Anything else is not
    /// the user's to make and is ignored: the app pushes with ``push(_:)``.
    @discardableResult
    public func userSetPath(_ newPath: [PathEntry], at level: NavigationLevel) -> Task<Session, any Error> {
        let path = path(at: level)
        guard newPath.count < path.count, path.starts(with: newPath, by: { $0.id == $1.id }) else {
            return Task { throw IntentError.notShown }
        }
        return userPopped(level: level, count: path.count - newPath.count)
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
        case push(PushRequest)
        case pop(PopRequest)
    }

    /// Shows `intent` as done, sends it with `operation`, then shows the answer or takes the prediction back.
    private func send(
        _ intent: Intent, _ operation: @escaping @Sendable (ModalStack, String) async throws -> Session
    ) -> Task<Session, any Error> {
        let change = PendingChange(id: UUID(), intent: intent)
        pending.append(change)
        recompute()
        let client = client
        let sessionID = sessionID
        return Task {
            do {
                let session = try await operation(client, sessionID)
                settle(change, with: session)
                return session
            } catch {
                lastError = error
                settle(change, with: nil)
                // What the alert became is news to this model: show it rather than the alert.
                if case IntentError.alreadyDismissed = error { try? await refresh() }
                throw error
            }
        }
    }

    private func settle(_ change: PendingChange, with session: Session?) {
        pending.removeAll { $0.id == change.id }
        if let session { confirm(session) } else { recompute() }
    }

    /// Shows `session` if it is newer than the confirmed state: a later version, or the session
    /// made again under this id after the one shown expired or was deleted.
    private func confirm(_ session: Session) {
        if session.supersedes(confirmed) { confirmed = session }
        recompute()
    }

    private func recompute() {
        state = pending.reduce(confirmed) { state, change in state.map { $0.predicting(change.intent) } }
    }
}

extension ModalStackSession {
    /// Why an intent sent nothing, or what its refusal means for the app.
    public enum IntentError: Error, Sendable, Hashable {
        /// ``ModalStackSession/answer(buttonID:)`` with no alert or confirmation dialog on top.
        case nothingToAnswer
        /// ``ModalStackSession/answer(buttonID:)`` with a button id the alert on top does not have.
        case noSuchButton(String)
        /// The level, or the entries, the user went back from are not shown (any more).
        case notShown
        /// The alert was dismissed before this answer reached the server (another device answered
        /// it first): the alert as it left, with that answer in `result`.
        case alreadyDismissed(Presentation)
    }
}

extension Session {
    /// The session as `intent` would leave it by its shape alone (no rule is checked, nothing is
    /// promoted, the version stays): what to show until the server answers. What the server would
    /// refuse (a taken key, a level or entry that is not there) is predicted to change nothing.
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
        case .push(let request):
            let key = request.key ?? request.destination
            _ = next.editPath(of: request.level ?? defaultLevel) { path in
                if let last = path.last, last.key == key, last.destination == request.destination {
                    path[path.count - 1].payload = request.payload ?? [:]
                } else if !path.contains(where: { $0.key == key }) {
                    path.append(
                        PathEntry(
                            id: "pending-" + UUID().uuidString, destination: request.destination, key: key,
                            payload: request.payload ?? [:], pushedAt: Date()))
                }
                return true
            }
        case .pop(let request):
            _ = next.editPath(of: request.level ?? defaultLevel) { path in
                switch request.target {
                case .top: path = Array(path.dropLast())
                case .count(let count): if count <= path.count { path = Array(path.dropLast(max(0, count))) }
                case .to(let id):
                    if let index = path.firstIndex(where: { $0.id == id }) { path = Array(path[...index]) }
                case .all: path = []
                }
                return true
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
