import ModalStackCore
import ModalStackStore

extension SessionService {
    /// The session as it was at `version`, rebuilt from the log by the store (see
    /// ``SessionStore/session(id:at:)``); nil when the log no longer holds the change that made it.
    /// Committed state only, as every read: a version is in the log once its commit is. `done`
    /// runs once, on the store's thread when a shared store is asked.
    public func session(
        id: String, at version: Int64, then done: @escaping @Sendable (Result<Session?, StoreError>) -> Void
    ) {
        counted(done) { done in store.session(id: id, at: version, then: done) }
    }
}
