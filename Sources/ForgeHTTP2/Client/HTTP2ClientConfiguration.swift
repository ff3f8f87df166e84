/// How a client connection is made and kept alive.
package struct HTTP2ClientConfiguration: Sendable {
    /// The host name or IP address (IPv4 or IPv6) to connect to.
    package var host: String
    /// The TCP port.
    package var port: Int
    /// TLS settings; `nil` speaks cleartext HTTP/2 with prior knowledge (h2c), for local tests and
    /// benchmarks only: APNs has no h2c.
    package var tls: HTTP2TLSConfiguration?
    /// How long name resolution, TCP connect, the proxy's tunnel and the TLS handshake may take together.
    package var connectTimeout: Duration
    /// An outbound proxy to tunnel through (TLS stays end to end with ``host``); `nil` connects directly.
    package var proxy: HTTP2Proxy?
    /// Send a PING after this long without any frame from the peer; `nil` never pings.
    package var pingInterval: Duration?
    /// While requests are out, send a PING after this long without any frame from the peer (a
    /// stalled peer is found in seconds, not after `pingInterval`); `nil` waits for `pingInterval`.
    package var stallInterval: Duration?
    /// A peer that does not acknowledge a PING within this long is declared dead: its open streams
    /// fail as possibly processed, its queued requests as not processed.
    package var pingTimeout: Duration
    /// The most streams this side opens at once, whatever the peer allows.
    package var maximumConcurrentStreams: Int
    /// The settings this side announces.
    package var settings: HTTP2Settings

    /// Creates a configuration. TLS with the system trust store by default.
    package init(
        host: String,
        port: Int = 443,
        tls: HTTP2TLSConfiguration? = HTTP2TLSConfiguration(),
        connectTimeout: Duration = .seconds(10),
        pingInterval: Duration? = .seconds(60),
        stallInterval: Duration? = .seconds(3),
        pingTimeout: Duration = .seconds(5),
        maximumConcurrentStreams: Int = 1000,
        settings: HTTP2Settings = HTTP2Settings(initialWindowSize: 1 << 20),
        proxy: HTTP2Proxy? = nil
    ) {
        self.proxy = proxy
        self.host = host
        self.port = port
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.stallInterval = stallInterval
        self.pingTimeout = pingTimeout
        self.maximumConcurrentStreams = maximumConcurrentStreams
        self.settings = settings
    }
}

/// What a connection's owner can see of its state.
package enum HTTP2ConnectionState: Hashable, Sendable {
    /// Connecting, or open and usable.
    case active
    /// The peer sent GOAWAY: nothing new starts here; open streams up to `lastStreamID` may finish.
    case goingAway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8])
    /// Closed; every request has its result.
    case closed(HTTP2ClientError)
}
