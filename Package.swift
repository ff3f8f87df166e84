// swift-tools-version:6.1
//
// ForgePush: Apple push notifications from Swift on Linux, over nghttp2 and OpenSSL.
//
// Layers, bottom up (a target only imports the ones above it in this list):
//   CForgeNGHTTP2, CForgeOpenSSL   system libraries + `static inline` shims (the only C)
//   ForgeSupport                   package-internal helpers (a pthread lock)
//   ForgeAPNsCore                  pure Swift model: types, payloads, headers, validation, responses
//   ForgeCrypto                    ES256 provider tokens over OpenSSL
//   ForgeHTTP2                     HTTP/2 client and server over nghttp2 + OpenSSL
//   ForgeAPNs                      the pooled, retrying client
//   ForgeAPNsTesting               an in-process transport for users' unit tests (not linked by shipped code)
//   ForgeNotificationTypes, ForgeSilentPush, ForgeVisiblePush, ForgeNotificationService
//                                  app-side routers and service-extension helper, portable to Linux
//   ForgeSimulatedDevice, ForgeLoopback
//                                  the simulated device; the local APNs server and loopback mode
//   ForgeLoopbackScenarios         the demo's end-to-end scenarios (inside the package, not a product)
//   ForgeLoopbackUI                the local server's inbox over HTTP/1.1 (Hummingbird; SwiftNIO outside the push path),
//                                  and the phones' token reports POSTed to a backend (async-http-client)
//   ForgeCampaign                  a campaign's SQLite journal (GRDB): resumable bulk sends; the report shape
//   ForgeCampaignPostgres          a campaign shared by workers on many machines, in PostgreSQL (postgres-nio;
//                                  the only SwiftNIO in the package, outside the push path)
//   ForgeLiveActivities            managed Live Activities: the registry, its store protocol, the in-memory store
//   ForgeLiveActivitiesSQLite      the registry in one SQLite file (GRDB), for one backend process
//   ForgeLiveActivitiesPostgres    the registry in PostgreSQL (postgres-nio), shared by backend instances
//   ForgeLiveActivitiesGateway     the manager over HTTP/1.1 JSON for backends in any language (Hummingbird;
//                                  SwiftNIO outside the push path)
//   apnsctl, apns-bench            executables
//   ForgeTestSupport               what the test targets share (paths, manual clock, child processes, logs)
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "ForgePush",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ForgeAPNsCore", targets: ["ForgeAPNsCore"]),
        .library(name: "ForgeCrypto", targets: ["ForgeCrypto"]),
        .library(name: "ForgeAPNs", targets: ["ForgeAPNs"]),
        // For users' unit tests: a transport that answers in-process. Shipped code does not link it.
        .library(name: "ForgeAPNsTesting", targets: ["ForgeAPNsTesting"]),
        .library(name: "ForgeNotificationTypes", targets: ["ForgeNotificationTypes"]),
        .library(name: "ForgeSilentPush", targets: ["ForgeSilentPush"]),
        .library(name: "ForgeVisiblePush", targets: ["ForgeVisiblePush"]),
        .library(name: "ForgeNotificationService", targets: ["ForgeNotificationService"]),
        .library(name: "ForgeSimulatedDevice", targets: ["ForgeSimulatedDevice"]),
        .library(name: "ForgeLoopback", targets: ["ForgeLoopback"]),
        .library(name: "ForgeCampaign", targets: ["ForgeCampaign"]),
        .library(name: "ForgeLiveActivities", targets: ["ForgeLiveActivities"]),
        .library(name: "ForgeLiveActivitiesSQLite", targets: ["ForgeLiveActivitiesSQLite"]),
        .library(name: "ForgeLiveActivitiesPostgres", targets: ["ForgeLiveActivitiesPostgres"]),
        .library(name: "ForgeLiveActivitiesGateway", targets: ["ForgeLiveActivitiesGateway"]),
        .library(name: "ForgeCampaignPostgres", targets: ["ForgeCampaignPostgres"]),
        .executable(name: "apnsctl", targets: ["apnsctl"]),
        .executable(name: "apns-bench", targets: ["apns-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The client's logging, metrics and graceful shutdown: the server ecosystem's standard APIs,
        // small and free of SwiftNIO.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // The client's spans (one per send, one per bulk): the ecosystem's tracing API, NIO-free; a
        // no-op unless the app bootstraps a tracer. Its InMemoryTracing product checks spans in tests.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // `apnsctl serve --metrics-port`: the local server's counters in Prometheus text. Depends on
        // swift-metrics and swift-atomics only; linked by apnsctl alone, never by the libraries.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `apnsctl send --journal`: a campaign's progress and verdicts in SQLite (WAL, transactions,
        // crash-safe). GRDB over the system libsqlite3 (libsqlite3-dev); no SwiftNIO. Linked by
        // ForgeCampaign alone, never by the push path.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // `apnsctl campaign create|work|watch|report --postgres`: one campaign, workers on many machines
        // (row locks, SKIP LOCKED leases, COPY). Brings SwiftNIO, so ForgeCampaignPostgres alone links it.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // `apnsctl serve --ui-port`: the inbox's JSON API, event stream and page over HTTP/1.1. Brings
        // SwiftNIO, so ForgeLoopbackUI alone links it, outside the push path.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // `apnsctl serve --report-tokens-to`: the phones' Live Activity token reports POSTed to a
        // backend. A well-kept HTTP/1.1 client with pooling and TLS, which the coming webhooks need
        // too. Brings SwiftNIO, so ForgeLoopbackUI alone links it, outside the push path.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Merges the inbox's two event streams into one Server-Sent Events response.
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        // `make docs`: the DocC catalogs of ForgeAPNs, ForgeLoopback and ForgeCampaign (`swift package
        // generate-documentation`). A command plugin: nothing of it is linked into a product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: C system libraries
        .systemLibrary(
            name: "CForgeNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "CForgeOpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // MARK: Pure Swift
        // Package-internal helpers every layer may use (the pthread lock); no public API.
        .target(
            name: "ForgeSupport",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeAPNsCore",
            swiftSettings: swiftSettings
        ),

        // MARK: C-backed layers
        .target(
            name: "ForgeCrypto",
            dependencies: ["ForgeAPNsCore", "ForgeSupport", "CForgeOpenSSL"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeHTTP2",
            dependencies: ["ForgeSupport", "CForgeNGHTTP2", "CForgeOpenSSL"],
            swiftSettings: swiftSettings
        ),

        // MARK: Client
        // It re-exports ForgeAPNsCore and ForgeCrypto (Exports.swift): `import ForgeAPNs` is enough to send.
        .target(
            name: "ForgeAPNs",
            dependencies: [
                "ForgeAPNsCore", "ForgeCrypto", "ForgeHTTP2", "ForgeSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "ForgeAPNsTesting",
            dependencies: ["ForgeAPNs", "ForgeAPNsCore"],
            swiftSettings: swiftSettings
        ),

        // MARK: App-side routers (portable stand-ins for UIKit / UserNotifications)
        .target(
            name: "ForgeNotificationTypes",
            dependencies: ["ForgeSupport"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeSilentPush",
            dependencies: ["ForgeNotificationTypes"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeVisiblePush",
            dependencies: ["ForgeNotificationTypes"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeNotificationService",
            dependencies: ["ForgeNotificationTypes", "ForgeSupport"],
            swiftSettings: swiftSettings
        ),

        // MARK: Loopback: the simulated device, the local APNs server, and the mode wiring them
        // The device takes delivered pushes as plain values, so it neither knows nor needs the server.
        // ForgeAPNsCore (the model, no I/O): the content-state date rule shares the lints' reading of a date.
        .target(
            name: "ForgeSimulatedDevice",
            dependencies: [
                "ForgeAPNsCore", "ForgeNotificationTypes", "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService",
                "ForgeSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeLoopback",
            // It re-exports the client and the device's app-side types (Exports.swift): one import for a loopback test.
            // swift-metrics: the phones' delivery states as counters (the client already depends on it).
            dependencies: [
                "ForgeAPNsCore", "ForgeCrypto", "ForgeHTTP2", "ForgeSupport", "ForgeSimulatedDevice", "ForgeAPNs",
                "ForgeNotificationTypes", "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService",
                .product(name: "Metrics", package: "swift-metrics"),
                // The phones' watchdog: a push stuck in delivery is logged with its apns-id.
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The end-to-end scenarios `apnsctl demo` runs and prints (client, local server, a device with
        // a chat app), as a library: tests run the same scenarios, users copy them as a template.
        .target(
            name: "ForgeLoopbackScenarios",
            dependencies: [
                "ForgeAPNs", "ForgeAPNsCore", "ForgeLoopback", "ForgeSimulatedDevice", "ForgeNotificationTypes",
                "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService", "ForgeSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The local server's inbox over HTTP: JSON API, Server-Sent Events and the page (Hummingbird).
        .target(
            name: "ForgeLoopbackUI",
            dependencies: [
                "ForgeAPNsCore", "ForgeLoopback", "ForgeSimulatedDevice", "ForgeSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // `serve --report-tokens-to`: the token reports' HTTP client, and their counters.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            resources: [.embedInCode("Resources/inbox.html")],
            swiftSettings: swiftSettings
        ),

        // MARK: Campaigns
        // A campaign's journal: which tokens have a committed verdict, which were sent without one.
        .target(
            name: "ForgeCampaign",
            dependencies: [
                "ForgeAPNs", "ForgeAPNsCore", "ForgeCrypto", "ForgeSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),

        // Managed Live Activities: the registry of activities and tokens, their lifecycle, and the pushes
        // that follow from the app's reports and the backend's updates.
        .target(
            name: "ForgeLiveActivities",
            dependencies: ["ForgeAPNs", "ForgeAPNsCore", "ForgeSupport", .product(name: "Metrics", package: "swift-metrics")],
            swiftSettings: swiftSettings
        ),
        // The registry's durable stores, each in a target of its own so that an app links only the
        // database it uses: SQLite (GRDB) for one process, PostgreSQL (postgres-nio, SwiftNIO) for several.
        .target(
            name: "ForgeLiveActivitiesSQLite",
            dependencies: [
                "ForgeLiveActivities", "ForgeAPNsCore", "ForgeSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ForgeLiveActivitiesPostgres",
            dependencies: [
                "ForgeLiveActivities", "ForgeAPNsCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The manager over HTTP/1.1 JSON (`apnsctl activities serve`), for backends in any language.
        // Hummingbird brings SwiftNIO, so this target alone links it, outside the push path; its
        // counters go to whatever swift-metrics factory the caller gives.
        .target(
            name: "ForgeLiveActivitiesGateway",
            dependencies: [
                "ForgeLiveActivities", "ForgeAPNsCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),

        // Workers on many machines share one campaign in PostgreSQL: leased batches, epoch-fenced verdicts.
        .target(
            name: "ForgeCampaignPostgres",
            dependencies: [
                "ForgeAPNs", "ForgeAPNsCore", "ForgeCampaign",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Executables
        .executableTarget(
            name: "apnsctl",
            dependencies: [
                "ForgeAPNs",
                "ForgeAPNsCore",
                "ForgeCrypto",
                "ForgeHTTP2",
                "ForgeLoopback",
                // `apnsctl demo` runs and prints these.
                "ForgeLoopbackScenarios",
                // `serve --ui-port`: the inbox's API and page.
                "ForgeLoopbackUI",
                // `serve --activity-type`: the phones' content-state contracts.
                "ForgeSimulatedDevice",
                // `send --journal`, `campaign report`.
                "ForgeCampaign",
                // `campaign create|work|watch|report --postgres`.
                "ForgeCampaignPostgres",
                // `activities`: the managed Live Activities, on SQLite or PostgreSQL.
                "ForgeLiveActivities",
                "ForgeLiveActivitiesSQLite",
                "ForgeLiveActivitiesPostgres",
                // `activities serve`: the manager over HTTP for backends in any language.
                "ForgeLiveActivitiesGateway",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                "ForgeSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // `serve --metrics-port`: the local server's counters in Prometheus text.
                .product(name: "Prometheus", package: "swift-prometheus"),
                // SIGINT and SIGTERM as an async sequence.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // `activities serve`: the gateway's application stopped gracefully on SIGINT or SIGTERM.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "apns-bench",
            dependencies: [
                "ForgeAPNsCore",
                "ForgeCrypto",
                "ForgeHTTP2",
                "ForgeLoopback",
                // `server --inbox`: the inbox API's list, timed during the run.
                "ForgeLoopbackUI",
                "ForgeAPNs",
                "ForgeSupport",
                // `activities`: the manager on each store, PostgreSQL in a throwaway cluster (ForgeTestSupport's).
                "ForgeLiveActivities", "ForgeLiveActivitiesSQLite", "ForgeLiveActivitiesPostgres", "ForgeTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Test support
        // One target for what the test targets share, instead of a copy in each: package and
        // keys-example paths, a manual wall clock, child processes with bounded waits, captured logs
        // (swift-log's InMemoryLogging), provider tokens signed with the example key. A plain target,
        // not a product, and no test framework in it.
        .target(
            name: "ForgeTestSupport",
            dependencies: [
                "ForgeAPNsCore", "ForgeCrypto", "ForgeSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        .testTarget(
            name: "ForgeSupportTests",
            dependencies: ["ForgeSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeAPNsCoreTests",
            dependencies: ["ForgeAPNsCore", "ForgeTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeHTTP2Tests",
            dependencies: ["ForgeHTTP2", "ForgeSupport", "ForgeTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeRouterTests",
            dependencies: ["ForgeNotificationTypes", "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService", "ForgeSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeSimulatedDeviceTests",
            dependencies: [
                "ForgeSimulatedDevice", "ForgeNotificationTypes", "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService",
                "ForgeSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeLoopbackTests",
            dependencies: [
                "ForgeLoopback", "ForgeLoopbackUI", "ForgeAPNsCore", "ForgeCrypto", "ForgeHTTP2", "ForgeAPNs", "ForgeSimulatedDevice",
                "ForgeNotificationTypes", "ForgeSilentPush", "ForgeVisiblePush", "ForgeNotificationService", "ForgeSupport",
                "ForgeTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            // Inputs `make fuzz` found, read by the tests that keep them fixed.
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeAPNsTests",
            dependencies: [
                "ForgeAPNs", "ForgeAPNsCore", "ForgeAPNsTesting", "ForgeCrypto", "ForgeHTTP2", "ForgeLoopback", "ForgeSupport",
                "ForgeTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeLoopbackScenariosTests",
            dependencies: ["ForgeLoopbackScenarios", "ForgeLoopback", "ForgeTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ReadmeTests",
            dependencies: [
                "ForgeAPNs", "ForgeAPNsCore", "ForgeCampaign", "ForgeCrypto", "ForgeLiveActivities", "ForgeLiveActivitiesGateway",
                "ForgeLoopback", "ForgeSimulatedDevice", "ForgeNotificationTypes", "ForgeTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeCryptoTests",
            dependencies: ["ForgeCrypto", "ForgeAPNsCore", "ForgeTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeLiveActivitiesTests",
            // The local server and a simulated phone (ForgeLoopback) judge and apply every push end to end.
            dependencies: [
                "ForgeLiveActivities", "ForgeAPNs", "ForgeAPNsCore", "ForgeAPNsTesting", "ForgeCrypto", "ForgeLoopback", "ForgeSupport",
                "ForgeTestSupport",
                // One conformance suite for every store: in memory, SQLite, PostgreSQL.
                "ForgeLiveActivitiesSQLite", "ForgeLiveActivitiesPostgres",
                // GRDB writes the files a store must refuse; PostgresNIO configures the test cluster's client.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                // The manager's metrics, read back as a registry would see them.
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeLiveActivitiesGatewayTests",
            // Every route and refusal in-process (the client answers in-process too), then on a loopback port.
            dependencies: [
                "ForgeLiveActivitiesGateway", "ForgeLiveActivities", "ForgeAPNs", "ForgeAPNsCore", "ForgeAPNsTesting", "ForgeCrypto",
                "ForgeSupport", "ForgeTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeCampaignTests",
            // The local server (ForgeLoopback) for sends end to end; GRDB to hold the journal's lock from a second connection.
            dependencies: [
                "ForgeCampaign", "ForgeAPNs", "ForgeAPNsCore", "ForgeLoopback", "ForgeSupport", "ForgeTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ForgeCampaignPostgresTests",
            dependencies: [
                "ForgeCampaignPostgres", "ForgeCampaign", "ForgeAPNsCore", "ForgeTestSupport",
                // The shared provider token's test: workers against the local server.
                "ForgeAPNs", "ForgeCrypto", "ForgeHTTP2", "ForgeLoopback",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNSCtlTests",
            // Runs the built apnsctl binary; the libraries are used to check what it printed.
            dependencies: ["apnsctl", "ForgeAPNsCore", "ForgeCrypto", "ForgeHTTP2", "ForgeSupport", "ForgeTestSupport"],
            // The help texts' snapshots, read from the package folder by HelpSnapshotTests.
            exclude: ["HelpSnapshots"],
            swiftSettings: swiftSettings
        ),
    ]
)

// MARK: Fuzz targets (`make fuzz`)
// libFuzzer entry points for every parser that reads bytes from outside, one executable each
// (Fuzz/<Target>/main.swift), built by `make fuzz` with `-sanitize=fuzzer,address`. They exist only
// when FORGE_FUZZ=1: an entry point links against libFuzzer's driver, which a plain `swift build` or
// `swift test` does not link, and those builds must neither compile nor link them. No product names
// them. They are in this package (not a package of their own) so `package` symbols, and in the debug
// build `@testable` ones, are in reach without widening any module's API.
if Context.environment["FORGE_FUZZ"] == "1" {
    package.targets.append(
        .target(name: "ForgeFuzzSupport", path: "Fuzz/ForgeFuzzSupport", swiftSettings: swiftSettings)
    )
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzJSONShape", ["ForgeAPNsCore"]),
        ("FuzzIdentifiers", ["ForgeAPNsCore"]),
        ("FuzzSimulatorFile", ["ForgeAPNsCore"]),
        ("FuzzTokenLine", ["ForgeAPNsCore"]),
        ("FuzzProviderToken", ["ForgeAPNsCore", "ForgeCrypto", "ForgeLoopback"]),
        // InboxAPI.swift is ForgeLoopbackUI's own file, linked into the target: the API needs none of
        // Hummingbird and SwiftNIO, which would triple the sanitizer build.
        ("FuzzInboxAPI", ["ForgeAPNsCore", "ForgeLoopback", "ForgeSupport"]),
        ("FuzzHTTP2Server", ["ForgeHTTP2"]),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name,
                dependencies: ["ForgeFuzzSupport"] + target.dependencies,
                path: "Fuzz/\(target.name)",
                swiftSettings: swiftSettings
            )
        )
    }
}
