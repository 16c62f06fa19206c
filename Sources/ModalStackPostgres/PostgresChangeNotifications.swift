import Locking

/// How instances on one database tell each other which sessions they changed: after each commit,
/// `NOTIFY` on one channel (delivered at commit, in commit order) with this instance's id and the
/// sessions' ids; each instance listens on a connection of its own and skips its own payloads.
/// A notification only says "read it again": the tables stay the truth.
final class PostgresChangeNotifications: Sendable {
    static let channel = "modalstack_changes"
    /// PostgreSQL refuses payloads of 8000 bytes or more; session ids are at most 128 bytes.
    static let payloadLimit = 7800

    /// Tells this store's own notifications from other instances'.
    let instanceID = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    private let listener = LockedValue<PostgresListener?>(nil)

    /// The payloads announcing `sessionIDs`: the instance id, then the ids, separated by spaces
    /// (ids never contain one), as few payloads as fit.
    func payloads(for sessionIDs: [String]) -> [String] {
        var payloads: [String] = []
        var payload = instanceID
        for id in sessionIDs {
            if payload.utf8.count + 1 + id.utf8.count > Self.payloadLimit {
                payloads.append(payload)
                payload = instanceID
            }
            payload += " " + id
        }
        if payload.utf8.count > instanceID.utf8.count { payloads.append(payload) }
        return payloads
    }

    /// Starts listening; `handler` gets each session id another instance announces, and nil
    /// after the listening connection was lost and restored (announcements may have been missed).
    func listen(connectionString: String, _ handler: @escaping @Sendable (String?) -> Void) {
        let instanceID = instanceID
        let started = PostgresListener(
            connectionString: connectionString, channel: Self.channel,
            onNotification: { payload in
                let words = payload.split(separator: " ")
                guard let sender = words.first, sender != instanceID else { return }
                for id in words.dropFirst() { handler(String(id)) }
            },
            onResubscribed: { handler(nil) })
        let previous = listener.withLock { listener in
            defer { listener = started }
            return listener
        }
        previous?.stop()
        started.start()
    }

    func stop() {
        listener.withLock { $0 }?.stop()
    }
}
