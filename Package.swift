// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

var package = Package(
    name: "ModalStack",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "modalstack", targets: ["modalstack"])
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
        .target(name: "Locking"),
        .target(name: "Timekeeping"),
        .target(name: "ModalStackCore"),
        .target(name: "ModalStackStore", dependencies: ["ModalStackCore", "CSQLite", "Locking", "Timekeeping"]),
        .target(name: "ModalStackHTTP", dependencies: ["CMicroHTTPD", "Locking", "Timekeeping"]),
        .target(
            name: "ModalStackAPI",
            dependencies: ["ModalStackCore", "ModalStackStore", "ModalStackHTTP", "Locking"],
            resources: [.embedInCode("Resources/openapi.yaml")]
        ),
        .executableTarget(name: "modalstack", dependencies: ["ModalStackAPI"]),
        // For the test targets only: no product and no other target depends on it.
        .target(name: "ModalStackTestSupport", dependencies: ["ModalStackHTTP", "Locking", "Timekeeping"]),

        .testTarget(name: "ModalStackCoreTests", dependencies: ["ModalStackCore", "ModalStackTestSupport"]),
        .testTarget(name: "ModalStackStoreTests", dependencies: ["ModalStackStore", "ModalStackTestSupport"]),
        .testTarget(name: "ModalStackHTTPTests", dependencies: ["ModalStackHTTP", "ModalStackTestSupport", "Locking"]),
        .testTarget(
            name: "ModalStackAPITests",
            dependencies: ["ModalStackAPI", "ModalStackCore", "ModalStackStore", "ModalStackHTTP"]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["ModalStackCore", "ModalStackHTTP", "ModalStackTestSupport", "Locking", "modalstack"]
        ),
        .testTarget(name: "ModalStackTestSupportTests", dependencies: ["ModalStackTestSupport", "ModalStackHTTP"]),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
