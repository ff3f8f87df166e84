/// A request the server received, with what it knows of the connection.
package struct HTTP2ServerRequest: Sendable {
    /// `:method`.
    package var method: String
    /// `:scheme`.
    package var scheme: String
    /// `:authority`.
    package var authority: String
    /// `:path`.
    package var path: String
    /// The regular headers, in order (duplicates kept).
    package var headers: [HTTP2HeaderField]
    /// The body.
    package var body: [UInt8]
    /// The stream the request came on.
    package var streamID: Int32
    /// The connection it came on: a number unique within the server.
    package var connectionID: UInt64
    /// The peer's address, such as `127.0.0.1:53211` (empty for in-memory sessions).
    package var peerAddress: String
    /// The client certificate, DER-encoded, when TLS asked for one and the client sent it.
    package var clientCertificate: [UInt8]?
    /// Whether ``clientCertificate`` verified against the server's client trust roots.
    package var clientCertificateVerified: Bool = false
    /// Pseudo-headers the client sent as never-indexed literals (APNs asks for `:path`). Regular
    /// headers carry their own ``HTTP2HeaderField/indexing``.
    package var neverIndexedPseudoHeaders: [String] = []

    /// Every value of the header called `name` (lower case).
    package func values(of name: String) -> [String] {
        self.headers.filter { $0.name == name }.map(\.value)
    }

    /// The first value of the header called `name` (lower case).
    package subscript(header name: String) -> String? {
        self.headers.first(where: { $0.name == name })?.value
    }
}
