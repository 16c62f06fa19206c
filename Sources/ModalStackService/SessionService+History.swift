import ModalStackCore
import ModalStackStore

extension SessionService {
    /// The session as it was at `version`, rebuilt from the log by the store (see
    /// ``SessionStore/session(id:at:)``); nil when the log no longer holds the change that made it.
    /// Committed state only, as every read: a version is in the log once its commit is.
    public func session(id: String, at version: Int64) throws(StoreError) -> Session? {
        try store.session(id: id, at: version)
    }
}
