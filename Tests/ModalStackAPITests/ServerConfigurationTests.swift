import ModalStackAPI
import ModalStackStore
import Testing

@Suite("Server configuration")
struct ServerConfigurationTests {
    @Test("defaults apply when nothing is set")
    func defaults() throws {
        let configuration = try ServerConfiguration.parse(arguments: [], environment: [:])
        #expect(configuration == ServerConfiguration())
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 8080)
        #expect(configuration.databasePath == "./data/modalstack.sqlite")
        #expect(configuration.maxDepth == 8)
        #expect(configuration.durability == .normal)
    }

    @Test("environment variables set values and flags win over them")
    func precedence() throws {
        let environment = ["MODALSTACK_PORT": "9000", "MODALSTACK_DB": "/tmp/x.sqlite", "MODALSTACK_MAX_DEPTH": "4", "OTHER": "1"]
        let fromEnvironment = try ServerConfiguration.parse(arguments: [], environment: environment)
        #expect(fromEnvironment.port == 9000)
        #expect(fromEnvironment.databasePath == "/tmp/x.sqlite")
        #expect(fromEnvironment.maxDepth == 4)
        let withFlags = try ServerConfiguration.parse(arguments: ["--port", "9100", "--max-depth=5", "--durability", "full"], environment: environment)
        #expect(withFlags.port == 9100)
        #expect(withFlags.maxDepth == 5)
        #expect(withFlags.durability == .full)
        #expect(withFlags.databasePath == "/tmp/x.sqlite")
    }

    @Test("an invalid value fails naming the setting", arguments: [
        (["--port", "70000"], [:], "--port"),
        (["--max-depth", "0"], [:], "--max-depth"),
        ([], ["MODALSTACK_MAX_DEPTH": "many"], "MODALSTACK_MAX_DEPTH"),
        (["--durability", "sometimes"], [:], "--durability"),
        (["--unknown"], [:], "--unknown"),
        (["--port"], [:], "--port"),
    ] as [([String], [String: String], String)])
    func invalid(arguments: [String], environment: [String: String], named: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.parse(arguments: arguments, environment: environment)
        }
        #expect(error?.description.contains(named) == true)
    }

    @Test("--help lists every flag with its variable and default")
    func help() {
        let text = ServerConfiguration.helpText
        for fragment in ["--host", "MODALSTACK_HOST", "--port", "default 8080", "--db", "MODALSTACK_DB", "--max-depth", "default 8", "--durability", "default normal"] {
            #expect(text.contains(fragment), "help is missing \(fragment)")
        }
    }
}
