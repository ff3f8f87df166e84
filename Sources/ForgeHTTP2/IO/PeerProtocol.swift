/// What the first bytes a peer sent say about the protocol it speaks: the way to tell a client that
/// it used the wrong scheme (TLS against a cleartext HTTP/2 port, or the reverse), read from the
/// record and frame layouts alone.
enum PeerProtocol {
    /// A TLS record starts with its content type (20 change_cipher_spec, 21 alert, 22 handshake,
    /// 23 application_data) and the major version 3 (RFC 8446, section 5.1).
    static func looksLikeTLS(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        guard let type = iterator.next(), let major = iterator.next() else { return false }
        return (20...23).contains(type) && major == 3
    }

    /// Why a TLS handshake failed when the server's first bytes are not a TLS record; `nil` when
    /// they are (a real TLS failure) or when nothing arrived.
    static func notTLS(_ bytes: some Collection<UInt8>) -> String? {
        let first = Array(bytes.prefix(9))
        guard !first.isEmpty, !Self.looksLikeTLS(first) else { return nil }
        if first.starts(with: Array("HTTP/".utf8)) {
            return "the server answered in cleartext HTTP/1 (it does not speak TLS here): use http://, or the server's TLS port"
        }
        // An HTTP/2 frame header: a 24-bit length, then the type. A server's preface is a SETTINGS
        // frame (type 4); a server refusing a bad preface may send GOAWAY (type 7) first.
        if first.count == 9, first[3] == 0x04 || first[3] == 0x07 {
            return "the server speaks cleartext HTTP/2 (h2c), not TLS: use http:// (or --h2c)"
        }
        return "the server does not speak TLS on this port (its first bytes are not a TLS record): use http://, or the server's TLS port"
    }

    /// Why a cleartext HTTP/2 connection failed when the server answered with a TLS record.
    static let answeredWithTLS = "the server answered with TLS, not cleartext HTTP/2: use https://"
}
