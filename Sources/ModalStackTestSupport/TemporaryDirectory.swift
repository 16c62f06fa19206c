import Foundation

/// A new, empty directory under the system's temporary directory, removed with everything in it
/// when the object goes away.
public final class TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates the directory.
    public init() throws {
        path = NSTemporaryDirectory() + "modalstack-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` in the directory.
    public func appending(_ name: String) -> String {
        path + "/" + name
    }
}
