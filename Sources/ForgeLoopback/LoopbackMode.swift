public import ForgeAPNs
public import ForgeAPNsCore
internal import ForgeCrypto
public import ForgeHTTP2
public import ForgeSimulatedDevice
internal import struct Foundation.Date

/// End-to-end tests in one process: the local APNs server on loopback (TLS with a test CA), a
/// simulated device whose apps' tokens are registered, and a client configuration that trusts the
/// server and holds a key the server knows. Every push the server accepts is delivered to the
/// device, in the order accepted, after its HTTP response is sent.
///
/// ```swift
/// let loopback = try await LoopbackMode.start(device: device, tls: .files(chain: …, key: …, ca: …))
/// try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
///     _ = try await client.send(alert, to: token)
/// }
/// try await device.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
/// await loopback.shutdown()
/// ```
public final class LoopbackMode: Sendable {
    /// The local APNs server.
    public let server: LocalAPNsServer
    /// The device pushes are delivered to.
    public let device: SimulatedDevice
    /// A client configuration for the server: its CA trusted, a provider key it knows.
    public let clientConfiguration: APNSClient.Configuration
    /// The same endpoint for the bare transport (`HTTP2Connection`).
    public let http2Configuration: HTTP2ClientConfiguration
    /// The provider-token key the server accepts (generated for this run).
    public let keyID: APNSKeyID
    /// The team of ``keyID``.
    public let teamID: APNSTeamID
    private let delivery: Task<Void, Never>
    private let key: APNSSigningKey

    /// Where the server's certificate comes from.
    public struct TLS: Sendable {
        let chain: String
        let key: String
        let ca: String

        /// PEM files: the server's chain and key (for `localhost`, `127.0.0.1`, `::1`) and the CA that issued it.
        public static func files(chain: String, key: String, ca: String) -> TLS { TLS(chain: chain, key: key, ca: ca) }
    }

    private init(
        server: LocalAPNsServer, device: SimulatedDevice, clientConfiguration: APNSClient.Configuration,
        http2Configuration: HTTP2ClientConfiguration, keyID: APNSKeyID, teamID: APNSTeamID, delivery: Task<Void, Never>,
        key: APNSSigningKey
    ) {
        self.key = key
        self.server = server
        self.device = device
        self.clientConfiguration = clientConfiguration
        self.http2Configuration = http2Configuration
        self.keyID = keyID
        self.teamID = teamID
        self.delivery = delivery
    }

    /// Starts the server, registers every installed app's tokens, and wires delivery to `device`.
    /// - Parameters:
    ///   - environment: the environment the server plays; apps' tokens for it are registered.
    ///   - configuration: the server's judging rules (its `environment` is replaced by `environment`).
    ///   - observer: called with every judged request, accepted or not, on the connection's thread
    ///     (see ``LocalAPNsServer/start(_:http2:tokens:apps:channels:certificates:authenticator:clock:observer:)``); keep it short.
    public static func start(
        device: SimulatedDevice,
        tls: TLS,
        environment: LocalAPNsConfiguration.Environment = .sandbox,
        configuration: LocalAPNsConfiguration = LocalAPNsConfiguration(),
        observer: (@Sendable (LocalAPNsJudgement) -> Void)? = nil
    ) throws -> LoopbackMode {
        let key = try APNSSigningKey.generate()
        let keyID = try APNSKeyID("LOOPBACK01")
        let teamID = try APNSTeamID("LOOPTEAM01")
        var configuration = configuration
        configuration.environment = environment
        var tokens: [String: LocalAPNsTokenRecord] = [:]
        let deviceEnvironment: DeviceEnvironment = environment == .sandbox ? .sandbox : .production
        for app in device.apps {
            for (tokenEnvironment, token) in app.deviceTokens {
                tokens[token] = LocalAPNsTokenRecord(
                    bundleID: app.bundleID, environment: tokenEnvironment == .sandbox ? .sandbox : .production
                )
            }
        }
        let server = try LocalAPNsServer.start(
            configuration,
            http2: HTTP2ServerConfiguration(tls: HTTP2ServerTLSConfiguration(certificateChainFile: tls.chain, privateKeyFile: tls.key)),
            tokens: tokens,
            authenticator: TokenAuthenticator(
                keys: [LocalAPNsKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: environment
            ),
            observer: observer
        )
        let pushes = server.acceptedPushes()
        let delivery = Task {
            for await push in pushes {
                guard push.channelID == nil else { continue }  // broadcasts reach no device here
                let headers = Dictionary(push.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
                await device.deliver(DevicePush(
                    token: push.token, pushType: push.pushType.rawValue, headers: headers, payload: push.payload,
                    apnsID: push.apnsID, collapseID: push[header: "apns-collapse-id"], environment: deviceEnvironment,
                    date: push.date
                ))
            }
        }
        let clientConfiguration = APNSClient.Configuration(
            authentication: .jwt(key: key, keyID: keyID, teamID: teamID),
            environment: .custom(host: "localhost", port: server.port),
            tls: APNSClient.TLS(caFile: tls.ca)
        )
        let http2 = HTTP2ClientConfiguration(host: "localhost", port: server.port, tls: HTTP2TLSConfiguration(trustRoots: .file(tls.ca)))
        return LoopbackMode(
            server: server, device: device, clientConfiguration: clientConfiguration, http2Configuration: http2,
            keyID: keyID, teamID: teamID, delivery: delivery, key: key
        )
    }

    /// A provider token the server accepts, for requests sent with the bare transport.
    public func providerToken() throws -> String {
        try APNSProviderToken.sign(keyID: self.keyID, teamID: self.teamID, issuedAt: Date(), key: self.key).authorizationHeaderValue
    }

    /// Stops the server; deliveries already accepted finish first.
    public func shutdown() async {
        await self.server.shutdown()
        await self.delivery.value
    }
}
