internal import CForgeOpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One TLS session over memory BIOs: ciphertext in with ``receiveCiphertext(_:)``, out with
/// ``drainCiphertext(into:)``; plaintext through ``readPlaintext(into:)`` and ``writePlaintext(_:)``.
///
/// Owns its `SSL*` (which owns both BIOs) and frees it exactly once. Sockets stay in Swift, so the
/// same code serves real connections and in-memory tests, and a write to a dead peer can never
/// raise SIGPIPE inside OpenSSL. Confined to one thread: the OpenSSL error queue is per thread.
final class TLSConnection {
    enum HandshakeState {
        case inProgress
        case complete
    }

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private let context: TLSContext

    /// A client session for `host`: SNI for names, IP checks for addresses.
    init(client context: TLSContext, host: String, verifyPeer: Bool) throws {
        self.context = context
        (self.ssl, self.readBIO, self.writeBIO) = try Self.make(context)
        SSL_set_connect_state(self.ssl)
        if isIPAddress(host) {
            // No SNI for IP literals (RFC 6066 §3: a HostName is never an IP address).
            if verifyPeer, X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(self.ssl), host) != 1 {
                throw TLSError(description: "cannot check the certificate against \(host): \(tlsErrorReasons())")
            }
        } else {
            guard CForgeOpenSSL_SSL_set_tlsext_host_name(self.ssl, host) == 1 else {
                throw TLSError(description: "cannot set SNI \(host): \(tlsErrorReasons())")
            }
            if verifyPeer, SSL_set1_host(self.ssl, host) != 1 {
                throw TLSError(description: "cannot check the certificate against \(host): \(tlsErrorReasons())")
            }
        }
    }

    /// A server session.
    init(server context: TLSContext) throws {
        self.context = context
        (self.ssl, self.readBIO, self.writeBIO) = try Self.make(context)
        SSL_set_accept_state(self.ssl)
    }

    private static func make(_ context: TLSContext) throws -> (OpaquePointer, OpaquePointer, OpaquePointer) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else { throw TLSError(description: "SSL_new failed: \(tlsErrorReasons())") }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError(description: "BIO_new failed: \(tlsErrorReasons())")
        }
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL owns both BIOs from here on
        return (ssl, readBIO, writeBIO)
    }

    deinit { SSL_free(self.ssl) }

    // MARK: Ciphertext

    /// Hands ciphertext read from the socket to OpenSSL.
    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        var offset = 0
        while offset < bytes.count {
            var written = 0
            // A memory BIO grows as needed; a failure here means memory exhaustion.
            guard BIO_write_ex(self.readBIO, base + offset, bytes.count - offset, &written) == 1 else {
                preconditionFailure("BIO_write_ex on a memory BIO failed")
            }
            offset += written
        }
    }

    /// Appends the ciphertext waiting to be sent to `buffer`.
    func drainCiphertext(into buffer: inout [UInt8]) {
        var data: UnsafeMutablePointer<CChar>? = nil
        let pending = CForgeOpenSSL_BIO_get_mem_data(self.writeBIO, &data)
        guard pending > 0, let data else { return }
        data.withMemoryRebound(to: UInt8.self, capacity: pending) { buffer.append(contentsOf: UnsafeBufferPointer(start: $0, count: pending)) }
        _ = CForgeOpenSSL_BIO_reset(self.writeBIO)
    }

    /// Whether ciphertext is waiting to be sent.
    var hasCiphertextToSend: Bool { BIO_ctrl_pending(self.writeBIO) > 0 }

    // MARK: Handshake

    /// Advances the handshake with the ciphertext received so far.
    /// - Throws: ``TLSError`` with the reason (certificate, host name, protocol, ALPN).
    func handshake() throws -> HandshakeState {
        ERR_clear_error()
        let result = SSL_do_handshake(self.ssl)
        if result == 1 {
            // Both roles insist on h2: a server also drops a client that offered no ALPN at all
            // (the select callback already refused clients offering only other protocols).
            guard self.negotiatedProtocol == "h2" else {
                let peer = self.context.role == .client ? "the server did not negotiate" : "the client did not offer"
                throw TLSError(
                    description: "\(peer) HTTP/2 with ALPN (got \(self.negotiatedProtocol ?? "nothing"))",
                    isALPNMismatch: true
                )
            }
            return .complete
        }
        switch SSL_get_error(self.ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .inProgress
        default:
            let verify = SSL_get_verify_result(self.ssl)
            if verify != Int(X509_V_OK) {
                ERR_clear_error()
                throw TLSError.certificateRejected(verifyResult: verify)
            }
            throw TLSError(description: "TLS handshake failed: \(tlsErrorReasons())")
        }
    }

    /// The ALPN protocol both sides agreed on.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(self.ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The peer's certificate, DER-encoded.
    var peerCertificate: [UInt8]? {
        guard let certificate = SSL_get0_peer_certificate(self.ssl) else { return nil }
        var output: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(certificate, &output)
        guard length > 0, let output else { return nil }
        defer { CForgeOpenSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// Whether the peer's certificate verified against the configured roots.
    var peerCertificateVerified: Bool { SSL_get_verify_result(self.ssl) == Int(X509_V_OK) }

    // MARK: Plaintext

    /// Reads every plaintext byte OpenSSL can produce now: it may hold decrypted bytes that poll
    /// cannot see (OpenSSL's SSL_pending(3)).
    /// - Returns: `false` when the peer closed the TLS session.
    func readPlaintext(into buffer: inout [UInt8]) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            ERR_clear_error()
            var count = 0
            let result = chunk.withUnsafeMutableBytes { SSL_read_ex(self.ssl, $0.baseAddress, $0.count, &count) }
            if result == 1 {
                buffer.append(contentsOf: chunk[0..<count])
                continue
            }
            switch SSL_get_error(self.ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return true
            case SSL_ERROR_ZERO_RETURN: return false
            default: throw TLSError(description: "TLS read failed: \(tlsErrorReasons())")
            }
        }
    }

    /// Encrypts `bytes`; the ciphertext waits for ``drainCiphertext(into:)``.
    func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            var written = 0
            let result = SSL_write_ex(self.ssl, bytes.baseAddress! + offset, bytes.count - offset, &written)
            guard result == 1 else {
                throw TLSError(description: "TLS write failed: \(tlsErrorReasons())")
            }
            offset += written
        }
    }

    /// Queues a close_notify alert.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(self.ssl)
        ERR_clear_error()
    }
}

/// Whether `host` is an IPv4 or IPv6 literal.
func isIPAddress(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
}

/// Whether `host` names this machine: `localhost`, `127.0.0.0/8` or `::1`.
func isLoopbackHost(_ host: String) -> Bool {
    if host == "localhost" { return true }
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, host, &v6) == 1 {
        return withUnsafeBytes(of: v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
    }
    return false
}
