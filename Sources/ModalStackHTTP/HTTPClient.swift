import Glibc

/// A response read by ``HTTPClient``.
public struct HTTPClientResponse: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The reason phrase as sent.
    public var reason: String
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body, de-chunked.
    public var body: [UInt8]

    /// The body decoded as UTF-8.
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// Why an ``HTTPClient`` call failed.
public struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case connectFailed, timedOut, connectionClosed, malformedResponse, ioFailed
        }

        private let value: Value

        /// No connection could be made.
        public static let connectFailed = Code(value: .connectFailed)
        /// Nothing arrived within the receive timeout.
        public static let timedOut = Code(value: .timedOut)
        /// The server closed the connection before a complete response.
        public static let connectionClosed = Code(value: .connectionClosed)
        /// The response is not valid HTTP/1.x.
        public static let malformedResponse = Code(value: .malformedResponse)
        /// A socket call failed.
        public static let ioFailed = Code(value: .ioFailed)

        public var description: String { "\(value)" }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// A small blocking HTTP/1.1 client over one keep-alive TCP connection, for tests and health checks.
///
/// One instance is one connection, opened on first use and reopened when the server closed it.
/// Not thread-safe: use one client per thread.
public final class HTTPClient {
    /// The server's host (a name or IP literal).
    public let host: String
    /// The server's port.
    public let port: UInt16
    /// How long a read may wait for data before failing with ``HTTPClientError/Code/timedOut``.
    public let timeoutSeconds: Double
    /// How many TCP connections this client has opened: stays at 1 while keep-alive works.
    public private(set) var connectCount = 0
    /// How many responses were read on the current connection.
    public private(set) var responsesOnConnection = 0

    private var socket: Int32 = -1
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    private var bytesReceived = 0

    /// Creates a client; nothing is connected until the first request.
    public init(host: String = "127.0.0.1", port: UInt16, timeoutSeconds: Double = 10) {
        self.host = host
        self.port = port
        self.timeoutSeconds = timeoutSeconds
    }

    deinit {
        close()
    }

    /// Whether a connection is open (the server may still have closed its end).
    public var isConnected: Bool { socket >= 0 }

    /// Sends a request and reads its response. Adds `Host` and, when there is a body or the method
    /// usually has one, `Content-Length`, unless given. Retries once on a fresh connection when a
    /// reused one turns out to be closed before any response byte arrived.
    public func send(
        method: String = "GET",
        path: String,
        headers: HTTPHeaders = [:],
        body: [UInt8] = []
    ) throws(HTTPClientError) -> HTTPClientResponse {
        let request = encode(method: method, path: path, headers: headers, body: body)
        dropConnectionIfClosedByPeer()
        let reused = isConnected
        let receivedBefore = bytesReceived
        do {
            try sendRaw(request)
            return try readResponse(method: method)
        } catch let error where reused && bytesReceived == receivedBefore
            && (error.code == .connectionClosed || error.code == .ioFailed)
        {
            close()
            try sendRaw(request)
            return try readResponse(method: method)
        }
    }

    /// Writes bytes as they are (connecting first if needed): for malformed and hand-framed requests.
    public func sendRaw(_ bytes: [UInt8]) throws(HTTPClientError) {
        try connectIfNeeded()
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { chunk in
                Glibc.send(socket, chunk.baseAddress, chunk.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                let message = "write failed: \(String(cString: strerror(errno)))"
                close()
                throw HTTPClientError(.ioFailed, message)
            }
            offset += written
        }
    }

    /// Reads one response (skipping `1xx` interim ones). `method` tells whether a body follows
    /// (`HEAD` has none). Closes the connection when the response says so.
    public func readResponse(method: String = "GET") throws(HTTPClientError) -> HTTPClientResponse {
        var response: HTTPClientResponse
        var statusLine: String
        repeat {
            statusLine = try readLine()
            response = try Self.parseStatusLine(statusLine)
            response.headers = try readHeaders()
        } while (100...199).contains(response.status) && response.status != 101

        let transferEncoding = response.headers["Transfer-Encoding"]?.lowercased()
        if method == "HEAD" || (100...199).contains(response.status) || response.status == 204
            || response.status == 304
        {
            response.body = []
        } else if let transferEncoding, transferEncoding.hasSuffix("chunked") {
            response.body = try readChunkedBody()
        } else if let length = response.headers["Content-Length"] {
            guard let count = Int(length), count >= 0 else {
                throw fail(.malformedResponse, "invalid Content-Length \"\(length)\"")
            }
            response.body = try readBytes(count)
        } else {
            response.body = try readToEnd()
        }

        responsesOnConnection += 1
        let connectionHeader = response.headers["Connection"]?.lowercased() ?? ""
        let http10 = statusLine.hasPrefix("HTTP/1.0")
        if connectionHeader.contains("close") || (http10 && !connectionHeader.contains("keep-alive")) {
            close()
        }
        return response
    }

    /// Closes the connection; the next request opens a new one.
    public func close() {
        if socket >= 0 {
            Glibc.close(socket)
            socket = -1
        }
        buffer.removeAll(keepingCapacity: true)
        bufferStart = 0
        responsesOnConnection = 0
    }

    // MARK: Connection

    private func connectIfNeeded() throws(HTTPClientError) {
        guard socket < 0 else { return }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw HTTPClientError(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = list
        while let info = candidate {
            candidate = info.pointee.ai_next
            let type = info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue)
            let fd = Glibc.socket(info.pointee.ai_family, type, info.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                configure(fd)
                socket = fd
                connectCount += 1
                responsesOnConnection = 0
                buffer.removeAll(keepingCapacity: true)
                bufferStart = 0
                return
            }
            lastError = errno
            Glibc.close(fd)
        }
        throw HTTPClientError(
            .connectFailed, "cannot connect to \(host):\(port): \(String(cString: strerror(lastError)))")
    }

    private func configure(_ fd: Int32) {
        let seconds = timeoutSeconds.rounded(.towardZero)
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((timeoutSeconds - seconds) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// An idle keep-alive connection the server has closed reads as end-of-file: reconnect up front.
    private func dropConnectionIfClosedByPeer() {
        guard socket >= 0, bufferStart == buffer.count else { return }
        var probe = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&probe, 1, 0) > 0 else { return }
        var byte: UInt8 = 0
        let peeked = recv(socket, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            close()
        }
    }

    // MARK: Reading

    /// Reads more bytes into the buffer; throws on end-of-file.
    private func fill() throws(HTTPClientError) {
        guard try fillUnlessEnd() else { throw fail(.connectionClosed, "the server closed the connection") }
    }

    /// Reads more bytes into the buffer; false at end-of-file.
    private func fillUnlessEnd() throws(HTTPClientError) -> Bool {
        if bufferStart > 0 && (bufferStart == buffer.count || bufferStart > 64 * 1024) {
            buffer.removeSubrange(..<bufferStart)
            bufferStart = 0
        }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                bytesReceived += count
                buffer.append(contentsOf: chunk[..<count])
                return true
            }
            if count == 0 { return false }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw fail(.timedOut, "no data from \(host):\(port) within \(timeoutSeconds) s")
            default: throw fail(.ioFailed, "read failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    private func readLine() throws(HTTPClientError) -> String {
        var scanned = 0
        while true {
            if let end = buffer[(bufferStart + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                var lineEnd = end
                if lineEnd > bufferStart && buffer[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                let line = String(decoding: buffer[bufferStart..<lineEnd], as: UTF8.self)
                bufferStart = end + 1
                return line
            }
            scanned = buffer.count - bufferStart
            guard scanned < 1 << 20 else {
                throw fail(.malformedResponse, "a response line is longer than 1 MiB")
            }
            try fill()
        }
    }

    private func readBytes(_ count: Int) throws(HTTPClientError) -> [UInt8] {
        while buffer.count - bufferStart < count {
            try fill()
        }
        let bytes = Array(buffer[bufferStart..<(bufferStart + count)])
        bufferStart += count
        return bytes
    }

    private func readToEnd() throws(HTTPClientError) -> [UInt8] {
        while try fillUnlessEnd() {}
        let bytes = Array(buffer[bufferStart...])
        bufferStart = buffer.count
        close()
        return bytes
    }

    private func readHeaders() throws(HTTPClientError) -> HTTPHeaders {
        var headers = HTTPHeaders()
        while true {
            let line = try readLine()
            if line.isEmpty { return headers }
            guard let colon = line.firstIndex(of: ":") else {
                throw fail(.malformedResponse, "malformed header line \"\(line)\"")
            }
            headers.add(
                String(line[..<colon]),
                String(line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })))
            guard headers.count <= 1000 else { throw fail(.malformedResponse, "more than 1000 header fields") }
        }
    }

    private func readChunkedBody() throws(HTTPClientError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            var sizeText = line.prefix { $0 != ";" }
            while sizeText.first == " " || sizeText.first == "\t" { sizeText = sizeText.dropFirst() }
            while sizeText.last == " " || sizeText.last == "\t" { sizeText = sizeText.dropLast() }
            guard let size = Int(sizeText, radix: 16), size >= 0 else {
                throw fail(.malformedResponse, "malformed chunk size \"\(line)\"")
            }
            if size == 0 {
                _ = try readHeaders()  // trailers
                return body
            }
            body += try readBytes(size)
            guard try readLine().isEmpty else { throw fail(.malformedResponse, "chunk not followed by CRLF") }
        }
    }

    private static func parseStatusLine(_ line: String) throws(HTTPClientError) -> HTTPClientResponse {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw HTTPClientError(.malformedResponse, "malformed status line \"\(line)\"")
        }
        return HTTPClientResponse(
            status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: [:], body: [])
    }

    /// Closes the connection (its state is unknown after a failure) and returns the error to throw.
    private func fail(_ code: HTTPClientError.Code, _ message: String) -> HTTPClientError {
        close()
        return HTTPClientError(code, message)
    }

    // MARK: Writing

    private func encode(method: String, path: String, headers: HTTPHeaders, body: [UInt8]) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if !headers.contains("Host") {
            head += host.contains(":") ? "Host: [\(host)]:\(port)\r\n" : "Host: \(host):\(port)\r\n"
        }
        for (name, value) in headers {
            head += "\(name): \(value)\r\n"
        }
        let framed = headers.contains("Content-Length") || headers.contains("Transfer-Encoding")
        if !framed && (!body.isEmpty || ["POST", "PUT", "PATCH"].contains(method)) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}
