import ModalStackResources

/// The OpenAPI document served at `GET /openapi.yaml`, compiled into the binary from the
/// repository's openapi.yaml so that the server can never serve a different contract.
enum OpenAPIDocument {
    static let bytes: [UInt8] = [UInt8](modalstack_openapi_yaml())
}

extension [UInt8] {
    /// A copy of a file compiled into the binary.
    init(_ file: EmbeddedFile) {
        self.init(UnsafeBufferPointer(start: file.bytes, count: file.count))
    }
}
