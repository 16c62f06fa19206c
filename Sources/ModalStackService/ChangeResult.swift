import ModalStackCore
import ModalStackStore

/// How a change ended.
public enum ChangeResult<Answer: Sendable>: Sendable {
    /// Applied and committed, or changing nothing: the answer rendered from its outcome.
    case answered(Answer)
    /// A retry of a change already made with this idempotency key: the answer stored then.
    case replayed(StoredResponse)
    case refused(ChangeRefusal)
}

/// Why a change was not made. Nothing was changed.
public enum ChangeRefusal: Error, Sendable {
    case sessionNotFound(String)
    /// The session is not at the expected version; nil: it does not exist.
    case versionMismatch(current: Int64?)
    /// A request with the same idempotency key is still running.
    case idempotencyKeyInUse
    /// The idempotency key was used before for another request.
    case idempotencyKeyReused
    /// The core's rules refused the command.
    case rejected(ModalError)
    case storeFailed(StoreError)
}
