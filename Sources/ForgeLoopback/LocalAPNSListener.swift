package import ForgeHTTP2

extension LocalAPNSServer {
    /// Where and how the local server listens: the address and port, TLS or cleartext (h2c), how long
    /// a connection and a request may take to arrive, and how far away the server seems.
    ///
    /// The HTTP/2 settings each connection announces are not set here: the server announces APNs'
    /// (header table 4096, window 65535, frame 16384, header list 8000, and the stream limit of its
    /// ``LocalAPNSConfiguration``).
    public struct Listener: Sendable {
        /// The address to listen on: `127.0.0.1` or `::1` (any IP literal).
        public var host: String
        /// The port; 0 lets the system choose (read it back from ``LocalAPNSServer/port``).
        public var port: Int
        /// The server's certificate; `nil` serves cleartext HTTP/2 with prior knowledge (h2c).
        public var tls: TLS?
        /// Whether PINGs are answered (turn off to test a client's dead-peer detection).
        public var answersPings: Bool
        /// How long a new connection may take, from accept, to finish the TLS handshake and send the
        /// client preface; a connection that has not is closed. Default 10 s.
        public var handshakeTimeout: Duration
        /// How long a request may take to arrive complete; a stream still incomplete then is reset
        /// with `REFUSED_STREAM`. Default 10 s; `nil` waits for ever.
        public var requestTimeout: Duration?
        /// How long each answer is held before it is sent, as if the server were that far away (APNs
        /// is 20-50 ms from most providers). Default `.zero`: sent at once.
        public var responseDelay: Duration
        /// Told when a client speaks the other protocol than the port (cleartext to a TLS port, or TLS
        /// to a cleartext one), with the peer's address and a sentence saying which; the connection is
        /// then closed. Called on the connection's thread; keep it short.
        public var onWrongProtocol: (@Sendable (_ peerAddress: String, _ problem: String) -> Void)?

        /// Creates a listener: 127.0.0.1, a port the system chooses, cleartext (h2c) by default.
        public init(
            host: String = "127.0.0.1",
            port: Int = 0,
            tls: TLS? = nil,
            answersPings: Bool = true,
            handshakeTimeout: Duration = .seconds(10),
            requestTimeout: Duration? = .seconds(10),
            responseDelay: Duration = .zero,
            onWrongProtocol: (@Sendable (_ peerAddress: String, _ problem: String) -> Void)? = nil
        ) {
            self.host = host
            self.port = port
            self.tls = tls
            self.answersPings = answersPings
            self.handshakeTimeout = handshakeTimeout
            self.requestTimeout = requestTimeout
            self.responseDelay = responseDelay
            self.onWrongProtocol = onWrongProtocol
        }

        /// The transport's configuration this listener stands for (its settings replaced when the server starts).
        package var http2: HTTP2ServerConfiguration {
            HTTP2ServerConfiguration(
                host: self.host, port: self.port, tls: self.tls?.http2, answersPings: self.answersPings,
                handshakeTimeout: self.handshakeTimeout, requestTimeout: self.requestTimeout,
                responseDelay: self.responseDelay, onWrongProtocol: self.onWrongProtocol
            )
        }
    }

    /// The local server's TLS: its certificate chain and key (PEM files), and whether it asks clients
    /// for a certificate (to accept certificate-authenticated pushes).
    public struct TLS: Sendable {
        /// The PEM certificate chain file.
        public var certificateChainFile: String
        /// The PEM private key file.
        public var privateKeyFile: String
        /// Ask clients for a certificate. Any certificate is accepted by the handshake; whether it
        /// verified against ``clientCertificateTrustRoots`` is judged with the request.
        public var requestsClientCertificate: Bool
        /// The CA (PEM file) client certificates are checked against, when requested.
        public var clientCertificateTrustRoots: String?
        /// A certificate and key made in memory, used instead of the files.
        let identity: LoopbackTLSIdentity?

        /// Serves the certificate chain and key in these PEM files.
        public init(
            certificateChainFile: String,
            privateKeyFile: String,
            requestsClientCertificate: Bool = false,
            clientCertificateTrustRoots: String? = nil
        ) {
            self.certificateChainFile = certificateChainFile
            self.privateKeyFile = privateKeyFile
            self.requestsClientCertificate = requestsClientCertificate
            self.clientCertificateTrustRoots = clientCertificateTrustRoots
            self.identity = nil
        }

        /// Serves `identity`'s certificate, with no file on disk.
        init(identity: LoopbackTLSIdentity) {
            self.certificateChainFile = ""
            self.privateKeyFile = ""
            self.requestsClientCertificate = false
            self.clientCertificateTrustRoots = nil
            self.identity = identity
        }

        package var http2: HTTP2ServerTLSConfiguration {
            var tls = if let identity {
                HTTP2ServerTLSConfiguration(identity: identity)
            } else {
                HTTP2ServerTLSConfiguration(certificateChainFile: self.certificateChainFile, privateKeyFile: self.privateKeyFile)
            }
            tls.requestsClientCertificate = self.requestsClientCertificate
            tls.clientCertificateTrustRoots = self.clientCertificateTrustRoots
            return tls
        }
    }
}
