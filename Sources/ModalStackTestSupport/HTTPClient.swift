import Glibc
import ModalStackHTTP

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
///
/// A plain enum of codes, unlike `HTTPServerError`, whose struct can take new cases later: only
/// this package's tests use the client, and their switches over the codes may as well be exhaustive.
public struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable {
        /// No connection could be made.
        case connectFailed
        /// Nothing arrived within the receive timeout.
        case timedOut
        /// The server closed the connection before a complete response.
        case connectionClosed
        /// The response is not valid HTTP/1.x.
        case malformedResponse
        /// A socket call failed.
        case ioFailed
    }

    /// The kind of failure.
    public let code: Code
    /// What happened.
    public let message: String

    public var description: String { message }
}

/// A small blocking HTTP/1.1 client over one keep-alive TCP connection, for tests.
///
/// One instance is one connection, opened on first use and reopened when the server closed it.
/// Not thread-safe: use one client per thread.
///
/// Streamed responses (Server-Sent Events) are read as they arrive: ``openStream(method:path:headers:)``
/// reads the head, then ``readChunk(timeout:)`` or ``readLine(timeout:)`` read the body piece by piece
/// until they return `nil` at its end.
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
    /// The body being read by ``readChunk(timeout:)`` and ``readLine(timeout:)``, if any.
    private var stream: OpenStream?

    private struct OpenStream {
        enum Framing {
            case chunked
            case length(remaining: Int)
            case untilClose
        }

        var framing: Framing
        /// Whether the connection closes at the end of the body (`Connection: close`, HTTP/1.0).
        let closesConnection: Bool
        /// Body bytes received but not yet returned (the rest of a line read).
        var pending: [UInt8] = []
    }

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
        try exchange(method: method, path: path, headers: headers, body: body) { () throws(HTTPClientError) in
            try readResponse(method: method)
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
                throw HTTPClientError(code: .ioFailed, message: message)
            }
            offset += written
        }
    }

    /// Reads one response (skipping `1xx` interim ones). `method` tells whether a body follows
    /// (`HEAD` has none). Closes the connection when the response says so.
    public func readResponse(method: String = "GET") throws(HTTPClientError) -> HTTPClientResponse {
        var (response, closesConnection) = try readHead()
        switch try framing(of: response, method: method) {
        case nil:
            response.body = []
        case .chunked:
            response.body = try readChunkedBody()
        case .length(let remaining):
            response.body = try readBytes(remaining)
        case .untilClose:
            response.body = try readToEnd()
        }

        responsesOnConnection += 1
        if closesConnection {
            close()
        }
        return response
    }

    // MARK: Streamed responses

    /// Sends a request and reads only the head of its response; read the body as it arrives with
    /// ``readChunk(timeout:)`` or ``readLine(timeout:)``. For streamed responses (Server-Sent Events).
    ///
    /// Once those return `nil` (the end of the body), the connection takes the next request unless
    /// the response closed it. A request sent before the end closes the connection first, dropping the
    /// rest of the body; so does ``close()`` (how a test makes the client go away).
    /// - Returns: The status and headers; `body` is empty.
    public func openStream(
        method: String = "GET",
        path: String,
        headers: HTTPHeaders = [:]
    ) throws(HTTPClientError) -> HTTPClientResponse {
        try exchange(method: method, path: path, headers: headers, body: []) { () throws(HTTPClientError) in
            try readStreamHead(method: method)
        }
    }

    /// Reads the head of the response to a request sent with ``sendRaw(_:)`` and leaves its body
    /// to be read as it arrives, as ``openStream(method:path:headers:)`` does.
    public func readStreamHead(method: String = "GET") throws(HTTPClientError) -> HTTPClientResponse {
        let head = try readHead()
        if let framing = try framing(of: head.response, method: method) {
            stream = OpenStream(framing: framing, closesConnection: head.closesConnection)
        } else {
            responsesOnConnection += 1
            if head.closesConnection { close() }
        }
        return head.response
    }

    /// Whether a body opened by ``openStream(method:path:headers:)`` has not been read to its end.
    public var isStreamOpen: Bool { stream != nil }

    /// The next part of the open stream's body, as it arrives: one chunk of a chunked body (what the
    /// server sent at once — several of its writes may arrive together), or the bytes that arrived of a
    /// body delimited otherwise.
    /// - Parameter timeout: Seconds to wait for data; by default ``timeoutSeconds``.
    /// - Returns: Bytes (never empty), or `nil` at the end of the body or when no stream is open.
    /// - Throws: ``HTTPClientError/Code/timedOut`` when nothing (complete) arrived in time — the stream
    ///   stays open and can be read again; any other error closes the connection.
    public func readChunk(timeout: Double? = nil) throws(HTTPClientError) -> [UInt8]? {
        guard let open = stream else { return nil }
        if !open.pending.isEmpty {
            stream?.pending = []
            return open.pending
        }
        return try receiveBodyPart(until: Deadline(seconds: timeout ?? timeoutSeconds))
    }

    /// The next line of the open stream's body (ended by LF or CR LF, returned without them), e.g. a
    /// Server-Sent Events field, or the empty line that ends an event. A last line without a line end
    /// is returned before the end of the body.
    /// - Parameter timeout: Seconds to wait for the whole line; by default ``timeoutSeconds``.
    /// - Returns: The line, or `nil` at the end of the body or when no stream is open.
    /// - Throws: As ``readChunk(timeout:)``; after a timeout the partial line is kept for the next read.
    public func readLine(timeout: Double? = nil) throws(HTTPClientError) -> String? {
        let deadline = Deadline(seconds: timeout ?? timeoutSeconds)
        while let open = stream {
            if let end = open.pending.firstIndex(of: UInt8(ascii: "\n")) {
                var line = open.pending[..<end]
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                stream?.pending = Array(open.pending[(end + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            guard let part = try receiveBodyPart(until: deadline) else {
                return open.pending.isEmpty ? nil : String(decoding: open.pending, as: UTF8.self)
            }
            stream?.pending += part
        }
        return nil
    }

    /// Reads the next part of the open body from the connection; `nil` (and the stream is over) at
    /// its end.
    private func receiveBodyPart(until deadline: Deadline) throws(HTTPClientError) -> [UInt8]? {
        while let open = stream {
            switch open.framing {
            case .chunked:
                switch try takeChunk() {
                case .data(let data):
                    return data
                case .end:
                    endStream()
                    return nil
                case .incomplete:
                    break
                }
            case .length(let remaining):
                if remaining == 0 {
                    endStream()
                    return nil
                }
                let count = min(buffer.count - bufferStart, remaining)
                if count > 0 {
                    stream?.framing = .length(remaining: remaining - count)
                    defer { bufferStart += count }
                    return Array(buffer[bufferStart..<(bufferStart + count)])
                }
            case .untilClose:
                if buffer.count > bufferStart {
                    defer { bufferStart = buffer.count }
                    return Array(buffer[bufferStart...])
                }
            }
            guard try fillUnlessEnd(until: deadline) else {
                guard case .untilClose = open.framing else {
                    throw fail(.connectionClosed, "the server closed the connection before the end of the body")
                }
                endStream()
                return nil
            }
        }
        return nil
    }

    private enum ChunkParse {
        case data([UInt8])
        case end
        case incomplete
    }

    /// Takes one whole chunk (or the last chunk and the trailers) from the buffer; takes nothing when
    /// it has not fully arrived, so that a timeout leaves the body readable. Bodies read whole and
    /// bodies read as they arrive are both parsed here.
    private func takeChunk() throws(HTTPClientError) -> ChunkParse {
        let newline = UInt8(ascii: "\n")
        let carriageReturn = UInt8(ascii: "\r")
        guard let lineEnd = buffer[bufferStart...].firstIndex(of: newline) else {
            guard buffer.count - bufferStart < 1 << 20 else {
                throw fail(.malformedResponse, "a chunk size line is longer than 1 MiB")
            }
            return .incomplete
        }
        let line = String(decoding: buffer[bufferStart..<lineEnd], as: UTF8.self)
        var sizeText = line.prefix { $0 != ";" }
        while sizeText.first == " " || sizeText.first == "\t" { sizeText = sizeText.dropFirst() }
        while sizeText.last == " " || sizeText.last == "\t" || sizeText.last == "\r" { sizeText = sizeText.dropLast() }
        guard let size = Int(sizeText, radix: 16), size >= 0 else {
            throw fail(.malformedResponse, "malformed chunk size \"\(line)\"")
        }
        if size == 0 {
            // The trailers (usually none) end with an empty line.
            var position = lineEnd + 1
            while let end = buffer[position...].firstIndex(of: newline) {
                let isEmpty = end == position || (end == position + 1 && buffer[position] == carriageReturn)
                position = end + 1
                if isEmpty {
                    bufferStart = position
                    return .end
                }
            }
            return .incomplete
        }
        let dataStart = lineEnd + 1
        let dataEnd = dataStart + size
        guard buffer.count > dataEnd else { return .incomplete }
        var next = dataEnd + 1
        if buffer[dataEnd] == carriageReturn {
            guard buffer.count > dataEnd + 1 else { return .incomplete }
            guard buffer[dataEnd + 1] == newline else { throw fail(.malformedResponse, "chunk not followed by CRLF") }
            next += 1
        } else if buffer[dataEnd] != newline {
            throw fail(.malformedResponse, "chunk not followed by CRLF")
        }
        let data = Array(buffer[dataStart..<dataEnd])
        bufferStart = next
        return .data(data)
    }

    /// The open body was read to its end: the connection is free for the next request, or closed.
    private func endStream() {
        guard let open = stream else { return }
        stream = nil
        responsesOnConnection += 1
        if open.closesConnection { close() }
    }

    /// A new request while a body is unread: its rest would be taken for the next response.
    private func abandonStream() {
        if stream != nil { close() }
    }

    /// Closes the connection (dropping the rest of an open stream); the next request opens a new one.
    public func close() {
        if socket >= 0 {
            Glibc.close(socket)
            socket = -1
        }
        buffer.removeAll(keepingCapacity: true)
        bufferStart = 0
        responsesOnConnection = 0
        stream = nil
    }

    // MARK: Connection

    /// Sends a request (dropping an unread stream first) and reads its answer with `read`. When a
    /// reused connection turns out to be closed before any byte of the answer arrived (the server
    /// may close an idle keep-alive connection at any moment), does both once more on a new one.
    private func exchange<Answer>(
        method: String,
        path: String,
        headers: HTTPHeaders,
        body: [UInt8],
        reading read: () throws(HTTPClientError) -> Answer
    ) throws(HTTPClientError) -> Answer {
        abandonStream()
        let request = encode(method: method, path: path, headers: headers, body: body)
        dropConnectionIfClosedByPeer()
        let reused = isConnected
        let receivedBefore = bytesReceived
        do {
            try sendRaw(request)
            return try read()
        } catch let error
            where reused && bytesReceived == receivedBefore
            && (error.code == .connectionClosed || error.code == .ioFailed)
        {
            close()
            try sendRaw(request)
            return try read()
        }
    }

    private func connectIfNeeded() throws(HTTPClientError) {
        guard socket < 0 else { return }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw HTTPClientError(
                code: .connectFailed, message: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
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
                return
            }
            lastError = errno
            Glibc.close(fd)
        }
        throw HTTPClientError(
            code: .connectFailed, message: "cannot connect to \(host):\(port): \(String(cString: strerror(lastError)))")
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

    /// Reads more bytes into the buffer, waiting until `deadline`; false at end-of-file. A timeout
    /// leaves the connection open.
    private func fillUnlessEnd(until deadline: Deadline) throws(HTTPClientError) -> Bool {
        var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while true {
            let milliseconds = Int32(clamping: Int((deadline.remainingSeconds * 1000).rounded(.up)))
            let count = poll(&ready, 1, max(0, milliseconds))
            if count > 0 { break }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw fail(.ioFailed, "poll failed: \(String(cString: strerror(errno)))") }
            throw HTTPClientError(code: .timedOut, message: "no data from \(host):\(port) within the timeout")
        }
        return try fillUnlessEnd()
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

    /// Reads a status line and headers, skipping `1xx` interim responses; also tells whether the
    /// connection closes after this response.
    private func readHead() throws(HTTPClientError) -> (response: HTTPClientResponse, closesConnection: Bool) {
        var response: HTTPClientResponse
        var statusLine: String
        repeat {
            statusLine = try readWireLine()
            response = try Self.parseStatusLine(statusLine)
            response.headers = try readHeaders()
        } while (100...199).contains(response.status) && response.status != 101
        let connectionHeader = response.headers["Connection"]?.lowercased() ?? ""
        let http10 = statusLine.hasPrefix("HTTP/1.0")
        return (response, connectionHeader.contains("close") || (http10 && !connectionHeader.contains("keep-alive")))
    }

    /// How the body of `response` to `method` is delimited; `nil` when it has none.
    private func framing(
        of response: HTTPClientResponse,
        method: String
    ) throws(HTTPClientError) -> OpenStream.Framing? {
        if method == "HEAD" || (100...199).contains(response.status) || response.status == 204
            || response.status == 304
        {
            return nil
        }
        if response.headers["Transfer-Encoding"]?.lowercased().hasSuffix("chunked") == true {
            return .chunked
        }
        if let length = response.headers["Content-Length"] {
            guard let count = Int(length), count >= 0 else {
                throw fail(.malformedResponse, "invalid Content-Length \"\(length)\"")
            }
            return .length(remaining: count)
        }
        return .untilClose
    }

    private func readWireLine() throws(HTTPClientError) -> String {
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
            let line = try readWireLine()
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
            switch try takeChunk() {
            case .data(let data): body += data
            case .end: return body
            case .incomplete: try fill()
            }
        }
    }

    private static func parseStatusLine(_ line: String) throws(HTTPClientError) -> HTTPClientResponse {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw HTTPClientError(code: .malformedResponse, message: "malformed status line \"\(line)\"")
        }
        return HTTPClientResponse(
            status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: [:], body: [])
    }

    /// Closes the connection (its state is unknown after a failure) and returns the error to throw.
    private func fail(_ code: HTTPClientError.Code, _ message: String) -> HTTPClientError {
        close()
        return HTTPClientError(code: code, message: message)
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

/// A point in time that reads wait until.
private struct Deadline {
    private let end: ContinuousClock.Instant

    init(seconds: Double) {
        end = ContinuousClock.now.advanced(by: .milliseconds(Int64((max(0, seconds) * 1000).rounded())))
    }

    var remainingSeconds: Double {
        let left = ContinuousClock.now.duration(to: end).components
        return max(0, Double(left.seconds) + Double(left.attoseconds) / 1e18)
    }
}
