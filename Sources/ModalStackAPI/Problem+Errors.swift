import ModalStackCore
import ModalStackHTTP
import ModalStackService
import ModalStackStore

/// The problems for what the layers below refuse or fail with.
extension Problem {
    /// The problem for a command the rules refused: its kind's type, with the rules' own detail,
    /// field errors and context.
    init(_ error: ModalError) {
        self.init(
            ProblemType(error.kind), detail: error.detail, fieldErrors: error.fieldErrors, extensions: error.context)
    }

    /// The problem for a storage failure; nothing was changed.
    init(_ error: StoreError) {
        switch error.kind {
        case .full:
            self.init(
                .storageFull, detail: "no space left to store the change; nothing was changed",
                headers: ["Retry-After": "30"])
        case .unavailable:
            self.init(
                .storageUnavailable, detail: "the database cannot be used right now; nothing was changed",
                headers: ["Retry-After": "5"])
        case .corrupt, .failed:
            self.init(.storageFailed, detail: "the database failed; nothing was changed")
        }
    }

    /// The problem for a change the service did not commit.
    init(_ refusal: ChangeRefusal) {
        self =
            switch refusal {
            case .sessionNotFound(let id): .sessionNotFound(id)
            case .versionMismatch(let current): .preconditionFailed(currentVersion: current)
            case .idempotencyKeyInUse: .idempotencyKeyInUse()
            case .idempotencyKeyReused: .idempotencyKeyReused()
            case .rejected(let error): Problem(error)
            case .storeFailed(let error): Problem(error)
            }
    }
}
