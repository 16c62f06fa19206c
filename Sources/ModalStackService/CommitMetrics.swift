import ModalStackCore

/// What the service measures about commits; the server's metrics implement it.
public protocol CommitMetrics: Sendable {
    func recordCommit(seconds: Double)
    func recordEvents(_ events: [SessionEvent])
}
