import ModalStackHTTP

/// API keys: when any are configured, every `/v1` request (and, if asked, the health and metrics
/// endpoints) needs `Authorization: Bearer <key>`. Several keys may be valid at once, for rotation.
struct Authentication: HTTPResponder {
    let next: any HTTPResponder
    private let keys: [[UInt8]]
    private let protectsOperations: Bool

    static let operationsPaths: Set<String> = ["/livez", "/readyz", "/metrics"]

    init(next: any HTTPResponder, keys: [String], protectsOperations: Bool) {
        self.next = next
        self.keys = keys.map { Array($0.utf8) }
        self.protectsOperations = protectsOperations
    }

    func respond(to request: HTTPRequest, reply: HTTPReply) {
        guard needsKey(request.path), !isAuthorized(request) else {
            next.respond(to: request, reply: reply)
            return
        }
        reply.send(Problem.unauthorized(keyGiven: request.headers["Authorization"] != nil).response)
    }

    private func needsKey(_ path: String) -> Bool {
        guard !keys.isEmpty else { return false }
        return path == "/v1" || path.hasPrefix("/v1/") || (protectsOperations && Self.operationsPaths.contains(path))
    }

    private func isAuthorized(_ request: HTTPRequest) -> Bool {
        guard let header = request.headers["Authorization"] else { return false }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return false }
        let presented = Array(parts[1].utf8)
        // Every key is compared in full, so the time taken says nothing about which bytes matched.
        var matched = false
        for key in keys where Self.constantTimeEqual(key, presented) {
            matched = true
        }
        return matched
    }

    /// Compares without stopping at the first difference.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count)
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}
