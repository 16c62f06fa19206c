import ModalStackAPI
import Settings

/// Everything `modalstack` is started with: the server's settings and the storage's, in one table
/// of flags and `MODALSTACK_*` variables. The executable and the in-process test server read it.
public struct LaunchConfiguration: Sendable, Equatable {
    public var server = ServerConfiguration()
    public var storage = StorageOptions()

    public init() {}

    public static let settings =
        ServerConfiguration.settings.on(\LaunchConfiguration.server) + StorageOptions.settings.on(\.storage)

    /// Reads the command line (without the program name) over the environment.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError)
        -> LaunchConfiguration
    {
        try settings.parse(arguments: arguments, environment: environment, defaults: LaunchConfiguration())
    }

    /// The text of `modalstack --help`.
    public static var helpText: String {
        let lines =
            [
                "usage: modalstack [options]",
                "",
                "ModalStack serves the modal navigation state of apps, per session, over HTTP.",
                "Every option may also be given as its environment variable; options win.",
                "A true/false option given alone means true.",
                "",
            ] + settings.helpLines(defaults: LaunchConfiguration()) + ["  --help", "      print this text and exit"]
        return lines.joined(separator: "\n")
    }
}
