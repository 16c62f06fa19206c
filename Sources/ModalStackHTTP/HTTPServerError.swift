/// Why ``HTTPServer/start()`` failed.
public struct HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidHost, addressInUse, addressNotAvailable, permissionDenied, socketFailed, daemonFailed
            case alreadyStarted
        }

        private let value: Value

        /// The host is not an IPv4/IPv6 literal (or `localhost`).
        public static let invalidHost = Code(value: .invalidHost)
        /// Another socket is bound to the address and port.
        public static let addressInUse = Code(value: .addressInUse)
        /// The address is not one of this machine's.
        public static let addressNotAvailable = Code(value: .addressNotAvailable)
        /// The port needs privileges.
        public static let permissionDenied = Code(value: .permissionDenied)
        /// Creating, configuring or listening on the socket failed.
        public static let socketFailed = Code(value: .socketFailed)
        /// libmicrohttpd refused to start (threads, epoll, options).
        public static let daemonFailed = Code(value: .daemonFailed)
        /// `start()` was called on a server that was already started (servers are not restartable).
        public static let alreadyStarted = Code(value: .alreadyStarted)

        public var description: String { "\(value)" }
    }

    /// The kind of failure.
    public let code: Code
    /// A message naming the address and the cause.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
