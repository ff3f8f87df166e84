internal import ForgeHTTP2
internal import ForgeSupport
public import ForgeAPNsCore
internal import ForgeCrypto
internal import Logging

extension APNSClient {
    /// One credential (a team's `.p8` key, or a client certificate) and the apps it sends for.
    ///
    /// A client configured with several of them sends for several apps, of one team or of several,
    /// from one process: each push goes with the credential that serves its topic's bundle id.
    /// Every credential has its own connections (APNs binds a connection to the first team and key
    /// it sees, or to its client certificate) and its own provider token.
    ///
    /// ```swift
    /// let configuration = APNSClient.Configuration(
    ///     credentials: [
    ///         .init(authentication: .jwt(key: keyA, keyID: keyIDA, teamID: teamA), topics: [appA, widgetsA]),
    ///         .init(authentication: .jwt(key: keyB, keyID: keyIDB, teamID: teamB), topics: [appB]),
    ///     ],
    ///     environment: .production
    /// )
    /// ```
    public struct Credential: Sendable, CustomStringConvertible {
        /// How this credential proves who it is.
        public var authentication: Authentication
        /// The bundle ids it sends for, or `nil` for every bundle id no other credential names (at
        /// most one credential of a configuration may be `nil`). A topic maps to its bundle id: a
        /// push to `com.example.app.voip` or `com.example.app.push-type.liveactivity` goes with the
        /// credential of `com.example.app`; a bundle id given with such a suffix counts as its base.
        public var topics: [APNSBundleID]?

        /// A credential for `topics` (bundle ids), or for every other bundle id when `nil`.
        public init(authentication: Authentication, topics: [APNSBundleID]? = nil) {
            self.authentication = authentication
            self.topics = topics
        }

        /// The authentication (key id and team id, or the certificate's label) and its bundle ids.
        public var description: String {
            "\(self.authentication) for " + (self.topics.map { $0.map(\.rawValue).joined(separator: ", ") } ?? "every other topic")
        }
    }
}

extension APNSClient.Authentication {
    /// How logs and metrics name the credential: `TEAMID/KEYID` for a key, the certificate's label
    /// (a path, or "in memory") for a certificate. Never the key.
    var label: String {
        switch self.base {
        case .jwt(_, let keyID, let teamID, _): return "\(teamID.rawValue)/\(keyID.rawValue)"
        case .tokenSource(let source): return "\(source.teamID.rawValue)/\(source.keyID.rawValue)"
        case .certificate(_, let label): return label
        }
    }
}

/// One credential's share of a client: its pools, its provider tokens, its metrics and logger.
/// A class: every send looks its route up, and a reference is one retain where this struct's
/// copy was one per field.
final class CredentialRoute: Sendable {
    /// `TEAMID/KEYID` or the certificate's label, as logs and metrics name it.
    let label: String
    let transport: RouteTransport
    /// The channel management endpoint's transport (the same one when the endpoint is the same).
    let channelTransport: RouteTransport
    /// Where its provider tokens come from (`nil` for a certificate).
    let tokens: APNSProviderTokenSource?
    /// The local signer of ``tokens``, read without an async call on every send.
    private let signer: APNSProviderTokenManager?
    let metrics: ClientMetrics
    let logger: Logger
    /// The form of the notification `send` sent last through ``transport``, with the provider token
    /// then: tasks that call `send` with one prepared notification share it, so its headers are
    /// converted and checked once, not per push. Kept here, where requests are prepared from the
    /// notifications the client is given, and matched by what it was made from (its parts' values
    /// and the token, ``PreparedRequest/serves(_:authorization:)``): the transport below keeps
    /// nothing of the requests it sends.
    private let lastPrepared = LockedBox<PreparedRequest?>(nil)

    init(
        label: String, transport: RouteTransport, channelTransport: RouteTransport, tokens: APNSProviderTokenSource?,
        metrics: ClientMetrics, logger: Logger
    ) {
        self.label = label
        self.transport = transport
        self.channelTransport = channelTransport
        self.tokens = tokens
        self.signer = tokens?.manager
        self.metrics = metrics
        self.logger = logger
    }

    /// The provider token to send now, or `nil` for a certificate.
    /// - Throws: ``APNSError`` of kind `credentials` when no token can be had.
    nonisolated(nonsending) func providerToken() async throws(APNSError) -> APNSProviderToken? {
        do {
            if let signer = self.signer { return try signer.currentToken() }
            guard let tokens = self.tokens else { return nil }
            return try await tokens.currentToken()
        } catch {
            throw APNSError(kind: .credentials, detail: "\(error)")
        }
    }

    /// Whether APNs' `InvalidProviderToken` is worth one more try with another token: yes when the
    /// token comes from a shared source (a replica may have read a token being replaced), no for
    /// the local signer (its key is wrong, and a new token would be as invalid).
    var renewsInvalidProviderToken: Bool { self.tokens != nil && self.signer == nil }

    /// The form `request`'s notification is sent in through the push transport (or the channel
    /// API's) with `authorization`: for the push transport, the one `send` made last when `request`
    /// shares its notification's parts and the provider token is the same.
    /// - Parameter remember: whether a new form replaces ``lastPrepared`` (a `send`'s; a batch keeps
    ///   its own for its rounds).
    func prepare(_ request: APNSHTTPRequest, authorization: String?, channelAPI: Bool, remember: Bool = true) -> PreparedRequest {
        guard !channelAPI else { return self.channelTransport.prepare(request, authorization: authorization) }
        guard remember else { return self.transport.prepare(request, authorization: authorization) }
        if let last = self.lastPrepared.withLock({ $0 }), last.serves(request, authorization: authorization) { return last }
        let prepared = self.transport.prepare(request, authorization: authorization)
        self.lastPrepared.withLock { $0 = prepared }
        return prepared
    }

    /// Sends one request through the push transport (or the channel API's), in its notification's
    /// `prepared` form.
    nonisolated(nonsending) func send(
        _ request: APNSHTTPRequest, prepared: PreparedRequest, deadline: MonotonicInstant, channelAPI: Bool
    ) async -> Result<APNSTransportResponse, APNSTransportError> {
        // `if`, not `(channelAPI ? a : b).send(…)`, which copies the chosen transport first.
        if channelAPI { return await self.channelTransport.send(request, prepared: prepared, deadline: deadline) }
        return await self.transport.send(request, prepared: prepared, deadline: deadline)
    }

    /// Sends requests together through the push transport (or the channel API's), each in the form
    /// `prepared` holds at its index.
    func send(
        _ requests: [APNSHTTPRequest], prepared: [PreparedRequest], deadline: MonotonicInstant, channelAPI: Bool
    ) async -> [Result<APNSTransportResponse, APNSTransportError>] {
        await (channelAPI ? self.channelTransport : self.transport).send(requests, prepared: prepared, deadline: deadline)
    }
}

/// Which credential serves which bundle id; built and checked once, when the client is made.
struct CredentialTable: Sendable {
    /// The index of the credential of each bundle id named by a credential.
    let byBundleID: [String: Int]
    /// The credential with `topics: nil`, serving every other bundle id.
    let fallback: Int?

    /// - Throws: ``APNSError`` of kind `invalidNotification` for no credential, an empty topic
    ///   list, two credentials for one bundle id, or more than one credential for every topic.
    init(_ credentials: [APNSClient.Credential]) throws(APNSError) {
        guard !credentials.isEmpty else {
            throw APNSError(kind: .invalidNotification, detail: "credentials: give at least one credential")
        }
        var byBundleID: [String: Int] = [:]
        var fallback: Int?
        for (index, credential) in credentials.enumerated() {
            guard let topics = credential.topics else {
                if let other = fallback {
                    throw APNSError(
                        kind: .invalidNotification,
                        detail: "credentials[\(index)].topics: only one credential may serve every topic (topics nil), "
                            + "and credentials[\(other)] already does; list the bundle ids of one of them"
                    )
                }
                fallback = index
                continue
            }
            guard !topics.isEmpty else {
                throw APNSError(
                    kind: .invalidNotification,
                    detail: "credentials[\(index)].topics: must name at least one bundle id, or be nil to serve every other topic"
                )
            }
            for topic in topics {
                let bundle = Self.bundleID(ofTopic: topic.rawValue)
                if let other = byBundleID[bundle], other != index {
                    throw APNSError(
                        kind: .invalidNotification,
                        detail: "credentials[\(index)].topics: '\(bundle)' is already served by credentials[\(other)]; "
                            + "a bundle id has one credential"
                    )
                }
                byBundleID[bundle] = index
            }
        }
        self.byBundleID = byBundleID
        self.fallback = fallback
    }

    /// The index of the credential that serves `bundleID`, or `nil` when none does.
    func index(forBundleID bundleID: String) -> Int? {
        self.byBundleID[bundleID] ?? self.fallback
    }

    /// What a push to `bundleID` fails with when no credential serves it.
    func unserved(_ bundleID: String) -> APNSError {
        let named = self.byBundleID.keys.sorted().joined(separator: ", ")
        return APNSError(
            kind: .invalidNotification,
            detail: "apns-topic: no credential serves bundle id '\(bundleID)' (the credentials serve \(named)); nothing was sent"
        )
    }

    /// A topic's bundle id: the topic without a push type's suffix (`.voip`,
    /// `.push-type.liveactivity`, `.complication`, …). An MDM topic, which has none, stays as it is.
    static func bundleID(ofTopic topic: String) -> String {
        for type in APNSPushType.allCases {
            guard let suffix = type.topicSuffix, !suffix.isEmpty, topic.hasSuffix(suffix), topic.utf8.count > suffix.utf8.count else {
                continue
            }
            return String(topic.dropLast(suffix.count))
        }
        return topic
    }

    /// The bundle id of `prepared`'s topic, its push type's suffix removed.
    static func bundleID(of prepared: APNSPreparedNotification) -> String {
        let topic = prepared.topic.rawValue
        guard let suffix = prepared.pushType.topicSuffix, !suffix.isEmpty, topic.hasSuffix(suffix) else { return topic }
        return String(topic.dropLast(suffix.count))
    }
}
