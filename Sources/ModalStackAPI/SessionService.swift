import Glibc
import ModalStackCore
import ModalStackStore
import Synchronization

/// Runs commands against stored sessions: load, apply the core's rules, commit, in that order,
/// one write at a time so that two changes to a session never interleave.
final class SessionService: Sendable {
    private let store: any SessionStore
    private let rules: SessionRules
    private let writeLock = Mutex(())

    init(store: any SessionStore, rules: SessionRules) {
        self.store = store
        self.rules = rules
    }

    func session(id: String) throws -> Session {
        guard let session = try store.session(id: id) else { throw Problem.sessionNotFound(id) }
        return session
    }

    /// Creates the session if it does not exist; `created` says which happened.
    func createSession(id: String) throws -> (session: Session, created: Bool) {
        try writeLock.withLock { _ in
            if let existing = try store.session(id: id) { return (existing, false) }
            let session = Session.created(id: id, at: Clock.now())
            try store.commit([.save(session)])
            return (session, true)
        }
    }

    func deleteSession(id: String) throws {
        try writeLock.withLock { _ in
            guard try store.session(id: id) != nil else { throw Problem.sessionNotFound(id) }
            try store.commit([.delete(sessionID: id)])
        }
    }

    /// Applies `command` to the session and commits the result before returning it.
    /// - Parameter createIfMissing: a first write creates the session instead of failing with 404.
    func execute(_ command: Command, onSession id: String, createIfMissing: Bool) throws -> CommandOutcome {
        try writeLock.withLock { _ in
            let now = Clock.now()
            let current: Session
            if let stored = try store.session(id: id) {
                current = stored
            } else if createIfMissing {
                current = Session.unwritten(id: id, at: now)
            } else {
                throw Problem.sessionNotFound(id)
            }
            let context = CommandContext(now: now, rules: rules, makePresentationID: RandomID.make)
            let outcome = try current.applying(command, in: context)
            if outcome.changed {
                try store.commit([.save(outcome.session)])
            }
            return outcome
        }
    }

    func checkHealth() throws {
        try store.checkHealth()
    }
}

/// The wall clock, in the core's terms.
enum Clock {
    static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(millisecondsSinceEpoch: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }
}

/// Unguessable, URL-safe identifiers: 144 random bits from the system's CSPRNG as 24 base64url characters.
enum RandomID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var characters: [UInt8] = []
        characters.reserveCapacity(24)
        // Six groups of three random bytes, each written as four 6-bit characters.
        for _ in 0..<6 {
            let group = UInt32(generator.next() as UInt8) << 16 | UInt32(generator.next() as UInt8) << 8
                | UInt32(generator.next() as UInt8)
            for shift in [18, 12, 6, 0] {
                characters.append(alphabet[Int(group >> UInt32(shift) & 0x3F)])
            }
        }
        return String(decoding: characters, as: UTF8.self)
    }
}
