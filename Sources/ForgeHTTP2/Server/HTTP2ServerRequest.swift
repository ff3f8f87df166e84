/// A request the server received, with what it knows of the connection.
public struct HTTP2ServerRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:scheme`.
    public var scheme: String
    /// `:authority`.
    public var authority: String
    /// `:path`.
    public var path: String
    /// The regular headers, in order (duplicates kept).
    public var headers: [HTTP2HeaderField]
    /// The body.
    public var body: [UInt8]
    /// The stream the request came on.
    public var streamID: Int32
    /// The connection it came on: a number unique within the server.
    public var connectionID: UInt64
    /// The peer's address, such as `127.0.0.1:53211` (empty for in-memory sessions).
    public var peerAddress: String
    /// The client certificate, DER-encoded, when TLS asked for one and the client sent it.
    public var clientCertificate: [UInt8]?
    /// Whether ``clientCertificate`` verified against the server's client trust roots.
    public var clientCertificateVerified: Bool = false
    /// Pseudo-headers the client sent as never-indexed literals (APNs asks for `:path`). Regular
    /// headers carry their own ``HTTP2HeaderField/indexing``.
    public var neverIndexedPseudoHeaders: [String] = []

    /// Every value of the header called `name` (lower case).
    public func values(of name: String) -> [String] {
        self.headers.filter { $0.name == name }.map(\.value)
    }

    /// The first value of the header called `name` (lower case).
    public subscript(header name: String) -> String? {
        self.headers.first(where: { $0.name == name })?.value
    }
}
