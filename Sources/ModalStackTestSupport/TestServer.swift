import Foundation
import ModalStackHTTP

/// What an endpoint test sends requests through: a socket (``HTTPClient``) or the application's
/// responder in this process (``InProcessClient``). A test written against it runs either way.
public protocol TestClient: AnyObject {
    /// Sends a request and returns its response.
    func send(method: String, path: String, headers: HTTPHeaders, body: [UInt8]) throws(HTTPClientError)
        -> HTTPClientResponse
    /// Ends the connection, if there is one.
    func close()
}

extension TestClient {
    /// ``send(method:path:headers:body:)`` with `GET`, no header and no body by default.
    public func send(method: String = "GET", path: String, headers: HTTPHeaders = [:], body: [UInt8] = [])
        throws(HTTPClientError) -> HTTPClientResponse
    {
        try send(method: method, path: path, headers: headers, body: body)
    }
}

/// A server a test talks to: the built binary (``ServerProcess``) or the application in this
/// process (``InProcessServer``).
public protocol TestServer: AnyObject, Sendable {
    associatedtype Client: TestClient
    func client() -> Client
}

extension HTTPClient: TestClient {}
extension ServerProcess: TestServer {}
extension InProcessServer: TestServer {}

/// The server an endpoint test that needs no process of its own talks to, configured by the
/// binary's own `arguments`:
/// - the running server `MODALSTACK_URL` names (a container), as ``ServerProcess`` attaches to it;
/// - the built binary when `MODALSTACK_TEST_SERVER=process` (to check that the binary answers
///   as the application does);
/// - otherwise the application in this process, with the system's clock and random ids.
public func endpointServer(arguments: [String] = []) throws -> any TestServer {
    if !ServerProcess.isLocal || ProcessInfo.processInfo.environment["MODALSTACK_TEST_SERVER"] == "process" {
        return try ServerProcess(arguments: arguments)
    }
    return try InProcessServer(arguments: arguments)
}
