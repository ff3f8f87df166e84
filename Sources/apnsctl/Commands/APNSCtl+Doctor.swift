import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import Foundation

extension APNSCtl {
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check credentials and the way to APNs, step by step, and say what to fix.",
            discussion: """
                Checks, in order: the key file (or client certificate), the key and team ids, name resolution, \
                TCP, TLS with certificate verification, ALPN h2, one authenticated request that cannot notify \
                anybody (a background push to the all-zero token), and the clock against the server's date. \
                Each check prints one line, `ok`, `warn` or `FAIL`, and a failure says how to fix it.

                Exit codes: 0 every check passed (warnings allowed); 65 a key, id, topic or provider-token problem; \
                69 name resolution, TCP, TLS or ALPN failed.

                Example:
                  apnsctl doctor --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                      --topic com.example.app --environment sandbox
                """
        )

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions

        @Option(name: .long, help: ArgumentHelp("The app's bundle id (or APNS_TOPIC), for the authenticated request.", valueName: "bundle-id"))
        var topic: String?

        @Option(name: .customLong("max-skew"), help: "The clock difference to the server, in seconds, that fails the clock check.")
        var maxSkew: Double = 60

        func validate() throws {
            guard self.auth.credentialSpecs.isEmpty else {
                throw ValidationError("doctor checks one credential: give its key flags (--key-file, --key-id, --team-id), not --credential.")
            }
        }

        func run() async throws {
            var report = DoctorReport()
            await self.diagnose(&report)
            if report.failures.isEmpty {
                Output.result("all checks passed\(report.warnings > 0 ? " (\(report.warnings) warning(s))" : "")")
                return
            }
            Output.result("\(report.failures.count) check(s) failed")
            let network: Set<DoctorReport.Kind> = [.network]
            throw ExitCode(report.failures.allSatisfy { network.contains($0) } ? CLIExit.unavailable : CLIExit.dataError)
        }

        private func diagnose(_ report: inout DoctorReport) async {
            // 1. Credentials, before anything touches the network.
            let authentication: APNSClient.Authentication
            var signing: (key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID)?
            if self.auth.usesCertificate {
                do {
                    authentication = try self.auth.authentication()
                    report.ok("client certificate", "\(authentication) is readable")
                } catch {
                    return report.fail("client certificate", "\(error)", fix: "give --cert with --cert-key (PEM), or --p12 with --p12-password-env NAME")
                }
            } else {
                guard let credentials = self.checkKey(&report) else { return }
                signing = credentials
                authentication = .jwt(key: credentials.key, keyID: credentials.keyID, teamID: credentials.teamID)
            }
            guard let topicText = EnvironmentFallback.value(self.topic, "APNS_TOPIC") else {
                return report.fail("topic", "no --topic (or APNS_TOPIC)", fix: "give the app's bundle id, such as com.example.app")
            }
            let topic: APNSBundleID
            do { topic = try APNSBundleID(topicText) } catch {
                return report.fail("topic", "'\(topicText)': \(error.rule)", fix: "give the app's bundle id, such as com.example.app")
            }

            // 2. The way there: name, TCP, TLS, ALPN (one connection attempt, read step by step).
            let connection: HTTP2Connection
            let environment: APNSEnvironment
            do {
                environment = try self.endpoint.resolved()
                let proxy = try self.endpoint.proxy(for: environment.host)
                let configuration = APNSClient.Configuration(
                    authentication: authentication, environment: environment, tls: try self.endpoint.tls(), proxy: proxy
                )
                var http2 = try APNSClient.connectionConfiguration(for: configuration)
                http2.connectTimeout = .seconds(10)
                http2.pingInterval = nil
                if let proxy {
                    // The proxy resolves the host; this machine may not.
                    report.ok("proxy", "tunnelling through \(proxy)")
                } else {
                    let addresses = Host(name: environment.host).addresses
                    guard !addresses.isEmpty || ["127.0.0.1", "::1"].contains(environment.host) else {
                        return report.fail("name resolution", "\(environment.host) does not resolve", kind: .network,
                                           fix: "check DNS and the host name (--environment, --url)")
                    }
                    report.ok("name resolution", "\(environment.host) -> \(addresses.prefix(3).joined(separator: ", "))")
                }
                connection = try await self.connect(http2, environment: environment, report: &report)
            } catch let failure as DoctorReport.Stop {
                _ = failure
                return
            } catch {
                return report.fail("endpoint", "\(error)", fix: "check --url, --environment and --ca-file")
            }

            // 3. One authenticated request that reaches nobody, and the clock against its date.
            await self.authenticatedRequest(connection, environment: environment, topic: topic, signing: signing, report: &report)
            await connection.close()
        }

        /// The key file, the ids, and whether they sign a token.
        private func checkKey(_ report: inout DoctorReport) -> (key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID)? {
            guard let path = self.auth.resolvedKeyFile else {
                report.fail("key file", "no --key-file (or APNS_KEY_FILE)", fix: "download the .p8 key from developer.apple.com > Certificates, IDs & Profiles > Keys")
                return nil
            }
            let key: APNSSigningKey
            do {
                key = try APNSSigningKey(contentsOfFile: path)
                report.ok("key file", "\((path as NSString).lastPathComponent) holds a P-256 private key (not shown)")
            } catch {
                report.fail("key file", "\(error)", fix: "use the AuthKey_<KEYID>.p8 file exactly as Apple gave it (it can be downloaded once)")
                return nil
            }
            var ids: (APNSKeyID, APNSTeamID)?
            do {
                let keyID = try APNSKeyID(self.auth.resolvedKeyID ?? "")
                let teamID = try APNSTeamID(self.auth.resolvedTeamID ?? "")
                ids = (keyID, teamID)
                // One line for the check: a warning when the file's name names another key id, else ok.
                if let warning = self.auth.keyFileNameWarning() {
                    report.warn("key and team ids", warning, fix: "the key id is the 10 characters in the file name AuthKey_<KEYID>.p8")
                } else {
                    report.ok("key and team ids", "key \(keyID), team \(teamID)")
                }
            } catch {
                report.fail("key and team ids", "\(error.field) \(error.rule)",
                            fix: "--key-id is shown next to the key in Apple's Keys list; --team-id in Membership details (10 characters each)")
                return nil
            }
            guard let (keyID, teamID) = ids else { return nil }
            do {
                _ = try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Date(), key: key)
                report.ok("provider token", "signs an ES256 token (not shown)")
            } catch {
                report.fail("provider token", "\(error)", fix: "the key cannot sign: download it again")
                return nil
            }
            return (key, keyID, teamID)
        }

        /// TCP, TLS and ALPN from one connection attempt.
        private func connect(_ configuration: HTTP2ClientConfiguration, environment: APNSEnvironment, report: inout DoctorReport) async throws -> HTTP2Connection {
            do {
                let connection = try await HTTP2Connection.connect(configuration)
                report.ok("TCP", "connected to \(environment.authority)")
                if configuration.tls != nil {
                    let insecure = self.endpoint.insecureLoopback
                    let store = configuration.tls?.trustRoots.location ?? ""
                    report.ok("TLS", insecure ? "handshake done, certificate NOT verified (--insecure-loopback)" : "handshake done, certificate verified against \(store)")
                    report.ok("ALPN", "h2 negotiated")
                } else {
                    report.warn("TLS", "cleartext h2c (an http:// URL): only for a local server", fix: "APNs itself needs https")
                }
                return connection
            } catch let error as HTTP2ClientError {
                switch error.code {
                case .connectFailed:
                    // A local server that is not running is not a firewall's doing.
                    let local = ["127.0.0.1", "::1", "localhost", "[::1]"].contains(environment.host)
                    report.fail("TCP", error.detail, kind: .network,
                                fix: local
                                    ? "nothing listens on \(environment.authority): is the local server (apnsctl serve) running, on that port?"
                                    : "is the host reachable on port \(environment.port)? (firewalls often block 443/2197 outbound)")
                case .tlsFailed:
                    report.ok("TCP", "connected to \(environment.authority)")
                    let fix = self.endpoint.caFileText.map { file in
                        "the server's certificate did not verify against \(file): is it the CA that issued the server's certificate "
                            + "(apnsctl serve --write-ca writes its own)? Is the URL's host one the certificate names?"
                    } ?? "the server's certificate did not verify against \(configuration.tls?.trustRoots.location ?? "the system store"): "
                        + "install ca-certificates (APNs' chain ends at USERTrust RSA Certification Authority), or --ca-file for a private CA"
                    report.fail("TLS", error.detail, kind: .network, fix: fix)
                case .alpnMismatch:
                    report.ok("TCP", "connected to \(environment.authority)")
                    report.ok("TLS", "handshake done")
                    report.fail("ALPN", error.detail, kind: .network, fix: "the server does not speak HTTP/2: is this an APNs endpoint? (a proxy in the way?)")
                default:
                    report.fail("connection", "\(error)", kind: .network, fix: "check --url and the network")
                }
                throw DoctorReport.Stop()
            }
        }

        private func authenticatedRequest(
            _ connection: HTTP2Connection, environment: APNSEnvironment, topic: APNSBundleID,
            signing: (key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID)?, report: inout DoctorReport
        ) async {
            var headers = [
                HTTP2HeaderField("apns-push-type", "background"), HTTP2HeaderField("apns-priority", "5"),
                HTTP2HeaderField("apns-topic", topic.rawValue), HTTP2HeaderField("apns-expiration", "0"),
            ]
            if let signing, let token = try? APNSProviderToken.sign(keyID: signing.keyID, teamID: signing.teamID, issuedAt: Date(), key: signing.key) {
                headers.insert(HTTP2HeaderField("authorization", token.authorizationHeaderValue), at: 0)
            }
            let request = HTTP2Request(
                authority: environment.authority, path: "/3/device/" + String(repeating: "0", count: 64), headers: headers,
                body: Array(#"{"aps":{"content-available":1}}"#.utf8)
            )
            let sent = Date()
            let response: HTTP2Response
            do {
                response = try await connection.send(request, deadline: .now + .seconds(15))
            } catch {
                return report.fail("authenticated request", "\(error)", kind: .network, fix: "the connection failed during the request: try again, check the network")
            }
            let received = Date()
            let reason = APNSErrorResponse(status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
                                           body: response.body).reason
            switch response.status {
            case 200:
                report.ok("authenticated request", "accepted (the all-zero token belongs to no device, so nobody was notified)")
            case 400 where reason == .badDeviceToken, 410:
                report.ok("authenticated request", "credentials accepted; the all-zero token was refused as expected (\(reason.rawValue))")
            default:
                report.fail("authenticated request", "\(response.status) \(reason.rawValue)", fix: Self.fix(for: reason))
            }
            // The clock: provider tokens dated too far from the server's time are refused.
            guard let header = response[header: "date"], let date = Self.parseHTTPDate(header) else {
                return report.warn("clock", "the server sent no date header to compare with", fix: "keep the clock in sync (NTP)")
            }
            let midpoint = sent.addingTimeInterval(received.timeIntervalSince(sent) / 2)
            let skew = midpoint.timeIntervalSince(date)
            let text = String(format: "%+.0f s against the server's date", skew)
            if abs(skew) > self.maxSkew {
                report.fail("clock", "this machine is \(text)",
                            fix: "sync the clock (timedatectl set-ntp true): APNs refuses provider tokens dated an hour off (ExpiredProviderToken)")
            } else {
                report.ok("clock", text.hasPrefix("+") || text.hasPrefix("-") ? text : "in sync")
            }
        }

        private static func fix(for reason: APNSErrorReason) -> String {
            switch reason {
            case .invalidProviderToken:
                return "the key, --key-id and --team-id do not belong together (or the key was revoked, or does not cover this topic)"
            case .expiredProviderToken:
                return "the token's iat is over an hour old for the server: sync this machine's clock"
            case .missingProviderToken:
                return "give --key-file/--key-id/--team-id, or a client certificate (--cert/--p12)"
            case .badTopic, .topicDisallowed, .deviceTokenNotForTopic:
                return "--topic must be the bundle id of an app your team owns (and, for certificates, the one it was issued for)"
            case .badCertificate, .badCertificateEnvironment:
                return "the client certificate is not valid for this environment: check --environment, or issue a new one"
            case .badEnvironmentKeyInToken:
                return "the key is limited to the other environment: use --environment accordingly, or a key for both"
            default:
                return "see Apple's 'Handling notification responses from APNs' for \(reason.rawValue)"
            }
        }

        /// `Sun, 06 Nov 1994 08:49:37 GMT`.
        static func parseHTTPDate(_ text: String) -> Date? {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            return formatter.date(from: text)
        }
    }
}

/// The lines `apnsctl doctor` prints, and what failed.
struct DoctorReport {
    enum Kind: Hashable { case credentials, network }
    struct Stop: Error {}

    private(set) var failures: [Kind] = []
    private(set) var warnings = 0

    mutating func ok(_ check: String, _ detail: String) {
        Output.result("\(Output.paint("ok", .green))    \(check): \(detail)")
    }

    mutating func warn(_ check: String, _ detail: String, fix: String) {
        self.warnings += 1
        Output.result("\(Output.paint("warn", .yellow))  \(check): \(detail)\n      fix: \(fix)")
    }

    mutating func fail(_ check: String, _ detail: String, kind: Kind = .credentials, fix: String) {
        self.failures.append(kind)
        Output.result("\(Output.paint("FAIL", .red))  \(check): \(detail)\n      fix: \(fix)")
    }
}
