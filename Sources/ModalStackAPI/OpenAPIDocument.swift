import ModalStackResources

/// The OpenAPI document served at `GET /openapi.yaml`, compiled into the binary from the
/// repository's openapi.yaml so that the server can never serve a different contract.
enum OpenAPIDocument {
    static let bytes: [UInt8] = [UInt8](modalstack_openapi_yaml())
}
