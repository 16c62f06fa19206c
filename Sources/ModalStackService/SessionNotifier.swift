import Locking
import ModalStackCore

/// Tells whoever watches a session (long polls, event streams) that it changed, after the change
/// is committed. Listeners are called outside the lock, on the committing thread, and must not block.
public final class SessionNotifier: Sendable {
    public init() {}

    public enum Notification: Sendable {
        /// Committed here, or by another instance on the same database.
        case changed(Session)
        case deleted(sessionID: String)
        /// The server is stopping: long polls answer now, streams end.
        case shutdown
    }

    public typealias Listener = @Sendable (Notification) -> Void

    /// A registration, to be cancelled when the watcher is done.
    public struct Subscription: Sendable, Hashable {
        public let sessionID: String
        let token: UInt64
    }

    private struct State {
        var nextToken: UInt64 = 0
        var listeners: [String: [UInt64: Listener]] = [:]
    }

    private let state = LockedValue(State())

    public func subscribe(to sessionID: String, _ listener: @escaping Listener) -> Subscription {
        state.withLock { state in
            state.nextToken += 1
            state.listeners[sessionID, default: [:]][state.nextToken] = listener
            return Subscription(sessionID: sessionID, token: state.nextToken)
        }
    }

    public func cancel(_ subscription: Subscription) {
        state.withLock { state in
            state.listeners[subscription.sessionID]?.removeValue(forKey: subscription.token)
            if state.listeners[subscription.sessionID]?.isEmpty == true {
                state.listeners[subscription.sessionID] = nil
            }
        }
    }

    public func publish(_ notification: Notification) {
        let listeners = state.withLock { state in
            switch notification {
            case .changed(let session): Array((state.listeners[session.id] ?? [:]).values)
            case .deleted(let id): Array((state.listeners[id] ?? [:]).values)
            case .shutdown: state.listeners.values.flatMap(\.values)
            }
        }
        for listener in listeners {
            listener(notification)
        }
    }

    /// Whether anyone watches the session.
    public func isWatched(_ sessionID: String) -> Bool {
        state.withLock { $0.listeners[sessionID] != nil }
    }

    /// The sessions someone watches.
    public var watchedSessionIDs: [String] { state.withLock { Array($0.listeners.keys) } }
}
