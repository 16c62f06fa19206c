import ModalStackResources

extension [UInt8] {
    /// A copy of a file compiled into the binary.
    init(_ file: EmbeddedFile) {
        self.init(UnsafeBufferPointer(start: file.bytes, count: file.count))
    }
}
