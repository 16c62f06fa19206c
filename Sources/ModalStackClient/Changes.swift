import Foundation

/// One change to a session, as ``ModalStack/apply(_:in:options:)`` sends it: each case is
/// the request of the client method of the same name.
public enum Change: Sendable, Hashable {
    /// ``ModalStack/present(_:in:options:)``.
    case present(PresentRequest)
    /// ``ModalStack/dismiss(_:in:options:)``.
    case dismiss(DismissRequest)
    /// ``ModalStack/deletePresentation(_:in:force:options:)``.
    case deletePresentation(String, force: Bool)
    /// ``ModalStack/update(_:in:with:options:)``: the presentation's id and the update.
    case update(String, UpdateRequest)
    /// ``ModalStack/replaceStack(_:in:options:)``.
    case replaceStack(ReplaceStackRequest)
    /// ``ModalStack/push(_:in:options:)``.
    case push(PushRequest)
    /// ``ModalStack/pop(_:in:options:)``.
    case pop(PopRequest)
    /// ``ModalStack/navigate(to:in:options:)``.
    case navigate(NavigationRequest)
    /// ``ModalStack/open(url:in:options:)``.
    case open(URL)
}

/// How one change is sent.
public struct ChangeOptions: Sendable, Hashable {
    /// The version the change is based on, sent as `If-Match`: the server refuses it with
    /// ``ModalStackError/preconditionFailed(currentVersion:_:)`` when the session has moved on.
    /// `nil`: the last version this client saw when ``ModalStack/Configuration/sendsIfMatch``
    /// is on, else none.
    public var expectedVersion: Int64?
    /// The `Idempotency-Key` of a `POST` or `PATCH` (1–255 visible ASCII characters). The server
    /// keeps the answer under it (for its `--idempotency-ttl`), so the same change sent again with
    /// the same key, even from a relaunched app, is applied once and answered the same. `nil`: a
    /// fresh key per call, which makes the client's own retries safe but not a caller's.
    public var idempotencyKey: String?

    /// Options for one change.
    public init(expectedVersion: Int64? = nil, idempotencyKey: String? = nil) {
        self.expectedVersion = expectedVersion
        self.idempotencyKey = idempotencyKey
    }
}

/// The small answer to a change (``ModalStack/apply(_:in:options:)``, `Prefer: return=minimal`).
public struct ChangeReceipt: Sendable, Hashable {
    /// The HTTP status: `201` presented or pushed, `202` queued, `200` otherwise.
    public var status: Int
    /// The session's version after the change.
    public var version: Int64
    /// The steps from the state before to the state after.
    public var transition: [TransitionStep]

    /// A receipt, as the server answered.
    public init(status: Int, version: Int64, transition: [TransitionStep]) {
        self.status = status
        self.version = version
        self.transition = transition
    }
}
