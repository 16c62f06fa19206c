import ModalStackCore
import ModalStackService

/// Reads as the endpoints need them: a session that does not exist is a 404 problem.
extension SessionService {
    func existingSession(id: String) throws -> Session {
        guard let session = try session(id: id) else { throw Problem.sessionNotFound(id) }
        return session
    }
}
