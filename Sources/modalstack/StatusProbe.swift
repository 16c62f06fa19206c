import Glibc

/// The status code of one `GET`, for `modalstack healthcheck`: a fresh connection, a fixed request
/// with `Connection: close`, and the status line of the answer; nothing after it is read.
///
/// Connecting, sending and reading share one deadline. A host that resolves to several addresses
/// (`localhost`: ::1 and 127.0.0.1) is tried address by address until one connects.
struct StatusProbe {
    /// Why no status code came back; the description is the message to log.
    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// A name, or an IPv4 or IPv6 literal.
    let host: String
    let port: UInt16
    /// How long the whole exchange may take.
    let timeoutSeconds: Double

    /// Sends `GET path`, with `Authorization: Bearer <key>` when a key is given, and returns the
    /// status code of the answer.
    func status(of path: String, key: String? = nil) throws(Failure) -> Int {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(timeoutSeconds * 1000)))
        let socket = try connect(until: deadline)
        defer { close(socket) }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let authorization = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let request = "GET \(path) HTTP/1.1\r\nHost: \(authority)\r\n\(authorization)Connection: close\r\n\r\n"
        try send(Array(request.utf8), on: socket, until: deadline)
        return try Self.status(ofStatusLine: readStatusLine(from: socket, until: deadline))
    }

    /// The code in an `HTTP/1.x` status line.
    static func status(ofStatusLine line: String) throws(Failure) -> Int {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw Failure("malformed status line \"\(line)\"")
        }
        return status
    }

    // MARK: Socket

    /// A non-blocking socket connected to the first address of `host` that accepts in time.
    private func connect(until deadline: ContinuousClock.Instant) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let list else {
            throw Failure("cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = list
        while let address = candidate?.pointee, lastError != ETIMEDOUT {
            candidate = address.ai_next
            let type = address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            let fd = socket(address.ai_family, type, address.ai_protocol)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            lastError = Glibc.connect(fd, address.ai_addr, address.ai_addrlen) == 0 ? 0 : errno
            if lastError == EINPROGRESS || lastError == EINTR {
                // The handshake goes on without us: its outcome is the socket's pending error.
                if try wait(fd, for: POLLOUT, until: deadline) {
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &lastError, &length)
                } else {
                    lastError = ETIMEDOUT
                }
            }
            if lastError == 0 { return fd }
            close(fd)
        }
        throw Failure("cannot connect to \(host):\(port): \(String(cString: strerror(lastError)))")
    }

    private func send(_ bytes: [UInt8], on fd: Int32, until deadline: ContinuousClock.Instant) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written >= 0 {
                offset += written
            } else {
                try prepareRetry(
                    of: "write", on: fd, after: errno, waitingFor: POLLOUT, until: deadline,
                    timeout: "cannot send to \(host):\(port) within \(timeoutSeconds) s")
            }
        }
    }

    /// Reads up to the end of the first line and returns it without its line end.
    private func readStatusLine(from fd: Int32, until deadline: ContinuousClock.Instant) throws(Failure) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                let line = received[..<end]
                return String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
            }
            guard received.count < 8192 else {
                throw Failure("malformed status line \"\(String(decoding: received.prefix(80), as: UTF8.self))…\"")
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
                continue
            }
            if count == 0 { throw Failure("the server closed the connection") }
            try prepareRetry(
                of: "read", on: fd, after: errno, waitingFor: POLLIN, until: deadline,
                timeout: "no data from \(host):\(port) within \(timeoutSeconds) s")
        }
    }

    /// After a `send` or `recv` that failed with `error`: returns once the call may be made again
    /// (it was interrupted, or the socket became ready in time); throws otherwise.
    private func prepareRetry(
        of operation: String,
        on fd: Int32,
        after error: Int32,
        waitingFor events: Int32,
        until deadline: ContinuousClock.Instant,
        timeout: String
    ) throws(Failure) {
        switch error {
        case EINTR:
            return
        case EAGAIN, EWOULDBLOCK:
            guard try wait(fd, for: events, until: deadline) else { throw Failure(timeout) }
        default:
            throw Failure("\(operation) failed: \(String(cString: strerror(error)))")
        }
    }

    /// Waits until `fd` is ready for `events`; false when the deadline passes first.
    private func wait(_ fd: Int32, for events: Int32, until deadline: ContinuousClock.Instant) throws(Failure) -> Bool {
        var ready = pollfd(fd: fd, events: Int16(events), revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline).components
            guard left.seconds > 0 || left.attoseconds > 0 else { return false }
            // Rounded up, so that a wait never ends just short of the deadline and spins.
            let milliseconds = left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000 + 1
            let count = poll(&ready, 1, Int32(clamping: milliseconds))
            if count > 0 { return true }
            if count < 0 && errno != EINTR {
                throw Failure("poll failed: \(String(cString: strerror(errno)))")
            }
        }
    }
}
