// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

var package = Package(
    name: "ModalStack",
    // The server needs macOS 15; the client (the library an app adds) asks no more than
    // `@Observable` does, checked on Linux by scripts/check-client-availability.
    platforms: [.macOS(.v15), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .executable(name: "modalstack", targets: ["modalstack"]),
        // What an app adds: Foundation only, no other target of this package.
        .library(name: "ModalStackClient", targets: ["ModalStackClient"]),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(name: "Locking"),
        .target(name: "Timekeeping"),
        .target(name: "Settings"),
        .target(name: "ModalStackCore"),
        // The store protocol and its values; each engine is a target of its own.
        .target(name: "ModalStackStore", dependencies: ["ModalStackCore", "Settings", "Timekeeping"]),
        .target(
            name: "ModalStackSQLite",
            dependencies: ["ModalStackCore", "ModalStackStore", "CSQLite", "Locking", "Settings", "Timekeeping"]
        ),
        .target(
            name: "ModalStackPostgres",
            dependencies: ["ModalStackCore", "ModalStackStore", "CLibPQ", "Locking", "Settings", "Timekeeping"]
        ),
        .target(
            name: "ModalStackService",
            dependencies: ["ModalStackCore", "ModalStackStore", "Locking", "Timekeeping"]
        ),
        .target(name: "ModalStackTokens", dependencies: ["CCrypto", "ModalStackCore", "Timekeeping"]),
        .target(name: "ModalStackHTTP", dependencies: ["CMicroHTTPD", "Locking", "Timekeeping"]),
        .target(
            name: "ModalStackAPI",
            dependencies: [
                "ModalStackCore", "ModalStackStore", "ModalStackService", "ModalStackHTTP", "ModalStackTokens",
                "Locking", "Settings", "Timekeeping", "ModalStackResources",
            ]
        ),
        // openapi.yaml and the inspector's files, compiled in with C23's #embed.
        .target(name: "ModalStackResources", exclude: ["inspector"]),
        // The settings of every part in one table, and the engine they choose: what the executable and
        // the in-process test server start from.
        .target(
            name: "ModalStackLaunch",
            dependencies: [
                "ModalStackAPI", "ModalStackStore", "ModalStackSQLite", "ModalStackPostgres", "Settings", "Timekeeping",
            ]
        ),
        .executableTarget(
            name: "modalstack",
            dependencies: ["ModalStackAPI", "ModalStackLaunch", "Timekeeping"]
        ),
        .target(name: "ModalStackClient"),
        // For the test targets only: no product and no other target depends on it.
        .target(
            name: "ModalStackTestSupport",
            dependencies: [
                "ModalStackHTTP", "ModalStackCore", "ModalStackStore", "ModalStackService", "ModalStackAPI",
                "ModalStackLaunch", "Locking", "Timekeeping",
            ]
        ),

        .testTarget(name: "ModalStackCoreTests", dependencies: ["ModalStackCore", "ModalStackTestSupport"]),
        .testTarget(
            name: "ModalStackSQLiteTests",
            dependencies: ["ModalStackSQLite", "ModalStackStore", "ModalStackTestSupport"]
        ),
        // One suite over every engine: what any SessionStore promises.
        .testTarget(
            name: "ModalStackStoreContractTests",
            dependencies: [
                "ModalStackStore", "ModalStackCore", "ModalStackSQLite", "ModalStackPostgres", "ModalStackTestSupport",
                "Timekeeping",
            ]
        ),
        .testTarget(
            name: "ModalStackPostgresTests",
            dependencies: [
                "ModalStackPostgres", "ModalStackStore", "ModalStackCore", "ModalStackTestSupport", "Locking",
                "Timekeeping",
            ]
        ),
        .testTarget(
            name: "ModalStackServiceTests",
            dependencies: [
                "ModalStackService", "ModalStackSQLite", "ModalStackPostgres", "ModalStackStore", "ModalStackCore",
                "ModalStackTestSupport", "Locking",
            ]
        ),
        .testTarget(
            name: "ModalStackTokensTests",
            dependencies: ["ModalStackTokens", "ModalStackCore", "ModalStackTestSupport", "Timekeeping"]
        ),
        .testTarget(name: "ModalStackHTTPTests", dependencies: ["ModalStackHTTP", "ModalStackTestSupport", "Locking"]),
        .testTarget(
            name: "ModalStackAPITests",
            dependencies: [
                "ModalStackAPI", "ModalStackCore", "ModalStackStore", "ModalStackService", "ModalStackHTTP",
                "ModalStackSQLite", "ModalStackTokens", "ModalStackTestSupport", "Locking",
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["ModalStackCore", "ModalStackHTTP", "ModalStackTestSupport", "Locking", "modalstack"]
        ),
        .testTarget(
            name: "ModalStackClientTests",
            dependencies: [
                "ModalStackClient", "ModalStackCore", "ModalStackTestSupport", "ModalStackHTTP", "modalstack",
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "ModalStackLaunchTests",
            dependencies: ["ModalStackLaunch", "ModalStackAPI", "ModalStackSQLite", "ModalStackStore", "Settings"]
        ),
        .testTarget(
            name: "ModalStackTestSupportTests",
            dependencies: ["ModalStackTestSupport", "ModalStackHTTP", "ModalStackCore", "Locking", "Timekeeping"]
        ),
        // libFuzzer targets for every parser, run by scripts/fuzz. Built normally it is a replayer
        // (`ModalStackFuzz json FILE…`); scripts/fuzz builds it with `-sanitize=fuzzer` and `-DFUZZING`,
        // and libFuzzer brings `main`.
        .executableTarget(
            name: "ModalStackFuzz",
            dependencies: [
                "ModalStackCore", "ModalStackHTTP", "ModalStackAPI", "ModalStackStore", "ModalStackTokens",
                "ModalStackClient", "ModalStackTestSupport", "Timekeeping",
            ],
            path: "Tests/Fuzz",
            exclude: ["Corpus", "Dictionaries"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
