import ModalStackAPI
import ModalStackLaunch
import ModalStackSQLite
import ModalStackStore
import Settings
import Testing

/// The one table of flags and variables `modalstack` reads: the server's settings and every engine's.
@Suite("Launch configuration")
struct LaunchConfigurationTests {
    @Test("defaults apply when nothing is set")
    func defaults() throws {
        let configuration = try LaunchConfiguration.parse(arguments: [], environment: [:])
        #expect(configuration == LaunchConfiguration())
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.server.port == 8080)
        #expect(configuration.storage.sqlite.path == "./data/modalstack.sqlite")
        #expect(configuration.server.maxDepth == 8)
        #expect(configuration.storage.store.durability == .normal)
    }

    @Test("environment variables set values and flags win over them")
    func precedence() throws {
        let environment = [
            "MODALSTACK_PORT": "9000", "MODALSTACK_DB": "/tmp/x.sqlite", "MODALSTACK_MAX_DEPTH": "4", "OTHER": "1",
        ]
        let fromEnvironment = try LaunchConfiguration.parse(arguments: [], environment: environment)
        #expect(fromEnvironment.server.port == 9000)
        #expect(fromEnvironment.storage.sqlite.path == "/tmp/x.sqlite")
        #expect(fromEnvironment.server.maxDepth == 4)
        let withFlags = try LaunchConfiguration.parse(
            arguments: ["--port", "9100", "--max-depth=5", "--durability", "full"], environment: environment)
        #expect(withFlags.server.port == 9100)
        #expect(withFlags.server.maxDepth == 5)
        #expect(withFlags.storage.store.durability == .full)
        #expect(withFlags.storage.sqlite.path == "/tmp/x.sqlite")
    }

    @Test(
        "an invalid value fails naming the setting",
        arguments: [
            (["--port", "70000"], [:], "--port"),
            (["--max-depth", "0"], [:], "--max-depth"),
            ([], ["MODALSTACK_MAX_DEPTH": "many"], "MODALSTACK_MAX_DEPTH"),
            (["--durability", "sometimes"], [:], "--durability"),
            (["--unknown"], [:], "--unknown"),
            (["--port"], [:], "--port"),
        ] as [([String], [String: String], String)])
    func invalid(arguments: [String], environment: [String: String], named: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(arguments: arguments, environment: environment)
        }
        #expect(error?.description.contains(named) == true)
    }

    @Test("a boolean option alone means true: at the end, or before another option")
    func booleanAlone() throws {
        #expect(
            try LaunchConfiguration.parse(arguments: ["--require-if-match"], environment: [:]).server.requireIfMatch)
        #expect(
            try LaunchConfiguration.parse(arguments: ["--auth-operations"], environment: [:]).server
                .authenticateOperations)
        let before = try LaunchConfiguration.parse(
            arguments: ["--require-if-match", "--port", "9000"], environment: [:])
        #expect(before.server.requireIfMatch && before.server.port == 9000)
        let last = try LaunchConfiguration.parse(arguments: ["--port", "9000", "--auth-operations"], environment: [:])
        #expect(last.server.authenticateOperations && last.server.port == 9000)
    }

    @Test("a boolean option still takes true or false, as the next argument or after =")
    func booleanWithValue() throws {
        let on = ["MODALSTACK_REQUIRE_IF_MATCH": "true"]
        #expect(
            try !LaunchConfiguration.parse(arguments: ["--require-if-match", "false"], environment: on).server
                .requireIfMatch)
        #expect(
            try !LaunchConfiguration.parse(arguments: ["--require-if-match=false"], environment: on).server
                .requireIfMatch)
        #expect(
            try LaunchConfiguration.parse(arguments: ["--require-if-match", "true"], environment: [:]).server
                .requireIfMatch)
        #expect(
            try LaunchConfiguration.parse(arguments: ["--require-if-match=true"], environment: [:]).server
                .requireIfMatch)
        let then = try LaunchConfiguration.parse(
            arguments: ["--auth-operations", "false", "--port", "9000"], environment: [:])
        #expect(!then.server.authenticateOperations && then.server.port == 9000)
    }

    @Test(
        "a word after a boolean option is its value, refused unless true or false",
        arguments: [
            ["--require-if-match", "yes"], ["--require-if-match", "1"], ["--auth-operations", "TRUE"],
            ["--require-if-match="],
        ])
    func booleanRefusesOtherWords(arguments: [String]) {
        let error = #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(arguments: arguments, environment: [:])
        }
        let flag = String(arguments[0].prefix { $0 != "=" })
        #expect(
            error?.description.hasPrefix("invalid \(flag) ") == true
                && error?.description.contains("expected true or false") == true)
    }

    @Test("every option --help shows as [true|false] may stand alone for true")
    func everyBooleanMayStandAlone() throws {
        let booleans = LaunchConfiguration.helpText.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.count == 2 && words[1] == "[true|false]" ? String(words[0]) : nil
        }
        #expect(booleans.contains("--require-if-match") && booleans.contains("--auth-operations"))
        for flag in booleans {
            let alone = try LaunchConfiguration.parse(arguments: [flag], environment: [:])
            #expect(alone == (try LaunchConfiguration.parse(arguments: [flag, "true"], environment: [:])), "\(flag)")
            #expect(alone != (try LaunchConfiguration.parse(arguments: [flag, "false"], environment: [:])), "\(flag)")
        }
    }

    @Test("--help lists every flag with its variable and default")
    func help() {
        let text = LaunchConfiguration.helpText
        for fragment in [
            "--host", "MODALSTACK_HOST", "--port", "default 8080", "--db", "MODALSTACK_DB", "--max-depth", "default 8",
            "--durability", "default normal",
        ] {
            #expect(text.contains(fragment), "help is missing \(fragment)")
        }
    }

    @Test("an empty environment variable counts as unset: the default holds")
    func emptyVariable() throws {
        let configuration = try LaunchConfiguration.parse(
            arguments: [], environment: ["MODALSTACK_REQUIRE_IF_MATCH": "", "MODALSTACK_PORT": ""])
        #expect(configuration == LaunchConfiguration())
        #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(arguments: ["--require-if-match="], environment: [:])
        }
    }

    @Test(
        "--host takes an IPv4 or IPv6 address or localhost, nothing else",
        arguments: ["127.0.0.1", "::", "::1", "[::1]", "localhost", "0.0.0.0"])
    func validHost(host: String) throws {
        #expect(try LaunchConfiguration.parse(arguments: ["--host", host], environment: [:]).server.host == host)
    }

    @Test("an invalid --host is refused like any bad option", arguments: ["example.com", "256.1.1.1", "::g", ""])
    func invalidHost(host: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(arguments: ["--host=\(host)"], environment: [:])
        }
        #expect(error?.description.contains("--host") == true)
    }

    @Test(
        "--cors-origins takes origins as browsers send them, or *",
        arguments: [
            "*", "https://app.example", "http://localhost:3000", "https://a.example,https://b.example:8443",
            "http://[::1]:8080", "capacitor://localhost",
        ])
    func validOrigins(origins: String) throws {
        let configuration = try LaunchConfiguration.parse(arguments: ["--cors-origins", origins], environment: [:])
        #expect(configuration.server.corsOrigins == origins.split(separator: ",").map(String.init))
    }

    @Test(
        "--cors-origins refuses what can never equal a browser's Origin",
        arguments: [
            "app.example", "https://app.example/", "https://App.example", "https://app.example/path",
            "https://app.example:port", "https://", "://app.example", "https://user@app.example",
        ])
    func invalidOrigins(origins: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(
                arguments: ["--cors-origins", "https://ok.example," + origins], environment: [:])
        }
        #expect(error?.description.contains("is not an origin") == true)
    }

    @Test("a rule across engines is the table's: --max-db-size with a PostgreSQL database is refused")
    func quotaIsForSQLite() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try LaunchConfiguration.parse(
                arguments: ["--max-db-size", "1000000"], environment: ["MODALSTACK_DATABASE_URL": "postgresql://db/x"])
        }
        #expect(error?.description.contains("--max-db-size is for the SQLite file") == true)
        let sqlite = try LaunchConfiguration.parse(arguments: ["--max-db-size", "1000000"], environment: [:])
        #expect(sqlite.storage.sqlite.maxSizeBytes == 1_000_000)
    }

    @Test("each part's settings are in the one table once, and --help shows a database URL only as set")
    func oneTable() throws {
        let flags = LaunchConfiguration.settings.settings.map(\.flag)
        #expect(Set(flags).count == flags.count)
        for flag in ["host", "catalog", "db", "max-db-size", "database-url", "database-pool-size", "durability"] {
            #expect(flags.contains(flag), "--\(flag) is missing")
        }
        let withURL = try LaunchConfiguration.parse(
            arguments: ["--database-url", "postgresql://user:hunter2@db/x"], environment: [:])
        let help = LaunchConfiguration.settings.helpLines(defaults: withURL).joined(separator: "\n")
        #expect(help.contains("env MODALSTACK_DATABASE_URL, default set)") && !help.contains("hunter2"))
    }
}
