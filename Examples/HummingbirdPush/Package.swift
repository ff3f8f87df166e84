// swift-tools-version:6.1
//
// ForgePush inside a Hummingbird 2 app: `POST /notify/:token` sends an alert through an
// APNSClient that runs in the same ServiceGroup as the HTTP server, and `GET /metrics` serves the
// client's swift-metrics as Prometheus text; `POST /activities/reports` takes the app's Live Activity
// token reports and `POST /activities/:id/start|update|end` drives managed Live Activities. `make
// example` (in the repository root) builds it and runs requests through it against `apnsctl serve`.
import PackageDescription

let package = Package(
    name: "HummingbirdPush",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so the dependency reads the same whatever the checkout folder is called.
        .package(name: "ForgePush", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdPush",
            dependencies: [
                .product(name: "ForgeAPNs", package: "ForgePush"),
                .product(name: "ForgeAPNsCore", package: "ForgePush"),
                .product(name: "ForgeCrypto", package: "ForgePush"),
                .product(name: "ForgeLiveActivities", package: "ForgePush"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                // The bound port, printed when the server runs (`PORT=0` picks one).
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
        ),
    ]
)
