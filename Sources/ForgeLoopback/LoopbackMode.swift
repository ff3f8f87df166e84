public import ForgeAPNs
public import ForgeAPNsCore
internal import ForgeCrypto
package import ForgeHTTP2
public import ForgeSimulatedDevice
internal import ForgeSupport
internal import struct Foundation.Date

/// End-to-end tests in one process: the local APNs server on loopback (TLS with a CA made in memory
/// for the run, or PEM files), one or more simulated devices whose apps' tokens are registered with
/// it, and a client configuration that trusts the server and holds a key the server knows.
///
/// ```swift
/// try await withLoopbackMode(devices: [phone, tablet]) { loopback in
///     try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
///         _ = try await client.send(alert, to: token)
///     }
///     try await phone.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
/// }
/// ```
///
/// ## Routing
/// Every push the server accepts goes to the device that owns its token, after its HTTP response is
/// sent: the device tokens and push-to-start tokens of the installed apps are registered with the
/// server's token registry when the loopback starts, each Live Activity update token as the device
/// issues it. A token no device owns is judged by the server's configuration
/// (``LocalAPNSConfiguration/acceptsUnknownTokens``: accepted by default, else `BadDeviceToken`) and
/// never delivered. An accepted broadcast goes to every device; each applies it to its Live
/// Activities subscribed to the channel (and records it as dropped when it has none).
///
/// Each device receives its pushes in the order the server accepted them and handles them
/// concurrently, in iOS's order where iOS has one (see `SimulatedDevice.deliver(_:)`).
/// Install apps before the loopback starts.
///
/// ## Lifetime
/// ``withLoopbackMode(devices:tls:environment:configuration:observer:_:)`` runs the delivery in a child
/// task and shuts down on every path. For a longer life, create a `LoopbackMode`, run ``run()`` in a
/// task you own and call ``shutdown()`` to end it.
public final class LoopbackMode: Sendable {
    /// The local APNs server.
    public let server: LocalAPNSServer
    /// The devices pushes are delivered to, in the order given.
    public let devices: [SimulatedDevice]
    /// A client configuration for the server: its CA trusted, a provider key it knows.
    public let clientConfiguration: APNSClient.Configuration
    /// The same endpoint for the bare transport (`HTTP2Connection`).
    package let http2Configuration: HTTP2ClientConfiguration
    /// The provider-token key the server accepts (generated for this run).
    public let keyID: APNSKeyID
    /// The team of ``keyID``.
    public let teamID: APNSTeamID
    private let key: APNSSigningKey
    private let environment: DeviceEnvironment
    /// The server's accepted pushes, subscribed before the first request can arrive; ``run()`` reads them.
    private let accepted: AsyncStream<AcceptedPush>
    private let isRunning = LockedBox(false)
    /// ``run()`` as started by ``start(devices:tls:environment:configuration:observer:)``; ``shutdown()`` awaits it.
    private let delivery = LockedBox<Task<Void, Never>?>(nil)
    /// Which device owns each token: device and push-to-start tokens at start, update tokens as issued.
    private let owners: LockedBox<[String: Int]>
    /// The devices' issued-token observers, by device.
    private let tokenObservers: LockedBox<[Int]>

    /// Where the server's certificate comes from.
    public struct TLS: Sendable {
        enum Base: Sendable {
            case files(chain: String, key: String, ca: String)
            case ephemeral
        }

        let base: Base

        /// A CA and a server certificate made in memory when the loopback starts (`LoopbackTLSIdentity`),
        /// trusted by ``LoopbackMode/clientConfiguration`` only: no file on disk. The default.
        public static let ephemeral = TLS(base: .ephemeral)

        /// PEM files: the server's chain and key (for `localhost`, `127.0.0.1`, `::1`) and the CA that issued it.
        public static func files(chain: String, key: String, ca: String) -> TLS { TLS(base: .files(chain: chain, key: key, ca: ca)) }
    }

    /// Starts the server and registers every installed app's tokens; deliveries wait for ``run()``.
    /// - Parameters:
    ///   - devices: the devices, each with its apps installed; no two may own the same token.
    ///   - tls: the server's certificate and the CA the client trusts: by default made in memory now.
    ///   - environment: the environment the server plays; apps' tokens for it are routed.
    ///   - configuration: the server's judging rules (its `environment` is replaced by `environment`).
    ///   - inbox: where the server records every judged request (``LocalAPNSInbox``); none by default.
    ///   - observer: called with every judged request, accepted or not, on the connection's thread
    ///     (see ``LocalAPNSServer/start(_:listener:tokens:apps:channels:certificates:authenticator:clock:inbox:observer:)``); keep it short.
    /// - Throws: when the key or the certificate cannot be generated or the server cannot start.
    public init(
        devices: [SimulatedDevice],
        tls: TLS = .ephemeral,
        environment: LocalAPNSConfiguration.Environment = .sandbox,
        configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        inbox: LocalAPNSInbox? = nil,
        observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil
    ) throws {
        let key = try APNSSigningKey.generate()
        let keyID = try APNSKeyID("LOOPBACK01")
        let teamID = try APNSTeamID("LOOPTEAM01")
        var configuration = configuration
        configuration.environment = environment
        var tokens: [String: LocalAPNSTokenRecord] = [:]
        var owners: [String: Int] = [:]
        func own(_ token: String, device index: Int, record: LocalAPNSTokenRecord) {
            precondition(owners[token] == nil || owners[token] == index, "token \(token) belongs to two devices")
            owners[token] = index
            tokens[token] = record
        }
        for (index, device) in devices.enumerated() {
            for app in device.apps {
                for (tokenEnvironment, token) in app.deviceTokens {
                    let record = LocalAPNSTokenRecord(bundleID: app.bundleID, environment: tokenEnvironment)
                    own(token, device: index, record: record)
                }
                if let token = app.pushToStartToken {
                    own(token, device: index, record: LocalAPNSTokenRecord(bundleID: app.bundleID, environment: environment))
                }
            }
        }
        let serverTLS: HTTP2ServerTLSConfiguration
        let trustRoots: HTTP2TLSConfiguration.TrustRoots
        let clientTLS: APNSClient.TLS
        switch tls.base {
        case .files(let chain, let key, let ca):
            serverTLS = HTTP2ServerTLSConfiguration(certificateChainFile: chain, privateKeyFile: key)
            trustRoots = .file(ca)
            clientTLS = APNSClient.TLS(caFile: ca)
        case .ephemeral:
            let identity = try LoopbackTLSIdentity()
            serverTLS = HTTP2ServerTLSConfiguration(identity: identity)
            trustRoots = .pem(identity.caCertificatePEM)
            clientTLS = APNSClient.TLS(caPEM: identity.caCertificatePEM)
        }
        let server = try LocalAPNSServer.start(
            configuration,
            http2: HTTP2ServerConfiguration(tls: serverTLS),
            tokens: tokens,
            authenticator: TokenAuthenticator(
                keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: environment
            ),
            inbox: inbox,
            observer: observer
        )
        self.server = server
        self.devices = devices
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.environment = environment == .sandbox ? .sandbox : .production
        self.accepted = server.acceptedPushes()
        self.clientConfiguration = APNSClient.Configuration(
            authentication: .jwt(key: key, keyID: keyID, teamID: teamID),
            environment: .custom(host: "localhost", port: server.port),
            tls: clientTLS
        )
        self.http2Configuration = HTTP2ClientConfiguration(
            host: "localhost", port: server.port, tls: HTTP2TLSConfiguration(trustRoots: trustRoots)
        )
        let ownerTable = LockedBox(owners)
        self.owners = ownerTable
        // A Live Activity's update token is registered as the device issues it, before its start is
        // recorded: a test that saw the start can send to the token at once.
        self.tokenObservers = LockedBox(
            devices.enumerated().map { index, device in
                device.observeIssuedTokens { token, bundleID in
                    ownerTable.withLock { $0[token] = index }
                    server.register(token: token, LocalAPNSTokenRecord(bundleID: bundleID, environment: environment))
                }
            }
        )
    }

    /// Every request the server judged, when the loopback was made with an inbox.
    public var inbox: LocalAPNSInbox? { self.server.inbox }

    /// What the device that owns `token` shows now (a device token, push-to-start token or Live
    /// Activity update token of one of ``devices``); `nil` when no device owns it.
    package func deviceView(token: String) -> DeviceView? {
        let token = token.lowercased()
        guard let index = self.owners.withLock({ $0[token] }) else { return nil }
        return self.devices[index].view(token: token)
    }

    /// A provider token the server accepts, for requests sent with the bare transport.
    public func providerToken() throws -> String {
        try APNSProviderToken.sign(keyID: self.keyID, teamID: self.teamID, issuedAt: Date(), key: self.key).authorizationHeaderValue
    }

    /// Delivers every push the server accepts to its device (see Routing), each device's pushes
    /// concurrently; returns once ``shutdown()`` stopped the server and every delivery is done.
    /// Cancelling it ends pending service extensions and background budgets at once.
    /// - Important: Call it once.
    public func run() async {
        let first = self.isRunning.withLock { running in
            defer { running = true }
            return !running
        }
        precondition(first, "LoopbackMode.run() called twice")
        let feeds = self.devices.map { _ in AsyncStream.makeStream(of: DevicePush.self) }
        await withDiscardingTaskGroup { group in
            for (device, feed) in zip(self.devices, feeds) {
                group.addTask { await device.deliver(feed.stream) }
            }
            for await push in self.accepted {
                let delivered = self.devicePush(push)
                for index in self.route(push) { feeds[index].continuation.yield(delivered) }
            }
            for feed in feeds { feed.continuation.finish() }
        }
    }

    /// Stops the server (GOAWAY `Shutdown`); ``run()`` then finishes the deliveries already accepted
    /// and returns (for a loopback made by ``start(device:tls:environment:configuration:observer:)``,
    /// this waits for that). The devices stop reporting issued tokens to this loopback.
    public func shutdown() async {
        for (device, id) in zip(self.devices, self.tokenObservers.withLock { $0 }) { device.stopObservingIssuedTokens(id) }
        await self.server.shutdown()
        await self.delivery.withLock({ $0 })?.value
    }

    /// A loopback for `device` that is already delivering: the server started, its TLS made in memory
    /// (no certificate file), ``run()`` running until ``shutdown()``, which waits for it. For tests
    /// that cannot wrap their body in ``withLoopbackMode(devices:tls:environment:configuration:observer:_:)``.
    ///
    /// ```swift
    /// let loopback = try LoopbackMode.start(device: phone)
    /// // … send with loopback.clientConfiguration, await the device's events …
    /// await loopback.shutdown()
    /// ```
    /// - Important: Call ``shutdown()`` once done; do not call ``run()`` on it.
    public static func start(
        device: SimulatedDevice,
        tls: TLS = .ephemeral,
        environment: LocalAPNSConfiguration.Environment = .sandbox,
        configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil
    ) throws -> LoopbackMode {
        try Self.start(devices: [device], tls: tls, environment: environment, configuration: configuration, observer: observer)
    }

    /// ``start(device:tls:environment:configuration:observer:)`` for several devices.
    public static func start(
        devices: [SimulatedDevice],
        tls: TLS = .ephemeral,
        environment: LocalAPNSConfiguration.Environment = .sandbox,
        configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil
    ) throws -> LoopbackMode {
        let loopback = try LoopbackMode(devices: devices, tls: tls, environment: environment, configuration: configuration, observer: observer)
        // Awaited by shutdown(): the delivery's one owner once the caller has no task group to run it in.
        loopback.delivery.withLock { $0 = Task { await loopback.run() } }
        return loopback
    }

    /// The devices an accepted push goes to: the token's owner, or every device for a broadcast.
    private func route(_ push: AcceptedPush) -> [Int] {
        if push.channelID != nil { return Array(self.devices.indices) }
        if let owner = self.owners.withLock({ $0[push.token] }) { return [owner] }
        return []
    }

    private func devicePush(_ push: AcceptedPush) -> DevicePush {
        if let channelID = push.channelID {
            return DevicePush.broadcast(channelID: channelID, payload: push.payload, apnsID: push.apnsID, date: push.date)
        }
        let headers = Dictionary(push.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        return DevicePush(
            token: push.token, pushType: push.pushType.rawValue, headers: headers, payload: push.payload, apnsID: push.apnsID,
            collapseID: push[header: "apns-collapse-id"], environment: self.environment, date: push.date
        )
    }
}

/// Runs `body` with a ``LoopbackMode``: the local APNs server, `devices` receiving what it accepts,
/// and a client configuration for it. Delivery runs in a child task; when `body` returns, the server
/// shuts down and the deliveries already accepted finish before this returns. When `body` throws,
/// the deliveries are cancelled (pending service extensions and background budgets end at once).
///
/// - Parameters:
///   - devices: the devices, each with its apps installed; no two may own the same token.
///   - tls: the server's certificate and the CA the client trusts: by default made in memory now.
///   - environment: the environment the server plays.
///   - configuration: the server's judging rules (unknown tokens, stream limits, …).
///   - observer: called with every judged request, on the connection's thread; keep it short.
///   - body: the test.
/// - Returns: what `body` returns.
/// - Throws: when the server cannot start, or what `body` throws.
/// - Important: A delivery with no time limit that never completes (a `nil` background budget and a
///   handler that never returns) keeps this from returning until the test expires it.
public func withLoopbackMode<Result: Sendable>(
    devices: [SimulatedDevice],
    tls: LoopbackMode.TLS = .ephemeral,
    environment: LocalAPNSConfiguration.Environment = .sandbox,
    configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
    observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil,
    _ body: (LoopbackMode) async throws -> Result
) async throws -> Result {
    let loopback = try LoopbackMode(
        devices: devices, tls: tls, environment: environment, configuration: configuration, observer: observer
    )
    return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
        group.addTask { await loopback.run() }
        let result: Result
        do {
            result = try await body(loopback)
        } catch {
            group.cancelAll()
            await loopback.shutdown()
            throw error
        }
        await loopback.shutdown()
        try await group.waitForAll()
        return result
    }
}
