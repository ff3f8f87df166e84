import ArgumentParser
import Dispatch
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeLoopbackUI
import ForgeSimulatedDevice
import ForgeSupport
import Foundation
import UnixSignals

extension APNSCtl {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Run a local APNs-compatible server on loopback that judges requests as APNs does.",
            discussion: """
                The first line on stdout is the port (useful with --port 0). With --ui-port, the second is \
                `ui http://127.0.0.1:PORT`: the inbox, a page that shows every judged push live (why a rejected one was \
                rejected, its headers and payload) and what a phone with each token shows (notifications, badges, Live \
                Activities), and a JSON API for tests in any language: GET /api/v1/pushes (token, topic, push_type, \
                status, q, since, limit), GET /api/v1/pushes/{apns_id}, DELETE /api/v1/pushes, GET /api/v1/wait?token=T&timeout=5s, \
                GET /api/v1/devices/{token}, POST /api/v1/devices (a phone with apps installed; "ask_before_activities": \
                true for one that asks before Live Activities, as iOS 17.2 and later do), POST /api/v1/devices/{token}/actions \
                ({"action": …}: what a person does to the phone: offline, online, install, uninstall, force_quit, \
                notifications_off, notifications_on, rotate_push_to_start_token, rotate_update_token, allow_activity, \
                deny_activity, dismiss_activity, tap, advance_clock), \
                GET /api/v1/events (Server-Sent Events), GET /metrics, GET /readyz. The inbox keeps the \
                newest --keep requests. Then one line per judged request: human-readable with the judge's reason for a \
                rejection, or with --json one JSON object (token, push_type, status, reason, why, apns_id). \
                A body a device could not read (not valid JSON, not UTF-8, not an object) is answered as APNs is \
                thought to (accepted), with a warning on its line ("warning" in --json). Diagnostics go to stderr. SIGINT or SIGTERM stops it: open connections get GOAWAY \
                {"reason":"Shutdown"}.

                With --register-key, requests need a provider token signed by a registered key (as APNs: \
                MissingProviderToken, InvalidProviderToken, ExpiredProviderToken, TooManyProviderTokenUpdates…); \
                without, provider tokens are not checked. With --client-ca, clients may authenticate with a \
                certificate registered by --register-cert.

                With --latency, every answer is held that long before it is sent, as from an APNs 20-50 ms \
                away; the server goes on reading, answering PINGs and holding other answers meanwhile.

                Without --cert and --key, TLS uses a CA and a server certificate (for localhost, 127.0.0.1 \
                and ::1) made in memory at start: no file is needed. --write-ca FILE hands that CA to a \
                client (curl --cacert FILE, apnsctl send --ca-file FILE); it is written before the port \
                is printed.

                With --metrics-port, GET /metrics on that port (127.0.0.1, HTTP/1.1) serves Prometheus text: \
                apns_local_requests_total by status, reason and push type, apns_local_request_duration_seconds, \
                apns_local_connections_accepted, apns_local_deliveries_total by state and reason (what each phone did with an \
                accepted push: delivered, stored, discarded, throttled; docs/device-rules.md). Its port is the next line on stdout, after the ui line if any (useful with --metrics-port 0); the inbox's port serves the same text.

                With --report-tokens-to URL, the apps of the phones made by POST /api/v1/devices post their Live Activity \
                token reports to URL as a backend receives them from real apps: one JSON object per POST \
                (kind push_to_start_token, update_token or ended; installation, the phone's device token; bundle_id, \
                attributes_type, activity, token, sequence, environment), in order, retried with a bounded backoff on \
                a connection failure or a 5xx (a 4xx is logged and dropped). Reports wait in a bounded queue; \
                apns_local_token_reports_total{outcome} counts them (sent, refused, failed, dropped).

                --topic (repeatable) names the bundle ids the server serves: a push to another topic gets \
                400 TopicDisallowed, as from an APNs account without that app. Without --topic every topic is served.

                Example:
                  apnsctl serve --port 0 --ui-port 0 --write-ca /tmp/apns-ca.pem --register-key AuthKey_ABC123DEFG.p8:ABC123DEFG:DEF123GHIJ \\
                      --topic com.example.forgepush --token 7c1d…:com.example.forgepush --json
                """
        )

        @Option(help: "The port; 0 lets the system choose (printed on the first line).")
        var port: Int = 2197

        @Option(help: "The address to listen on: 127.0.0.1 or ::1.")
        var host: String = "127.0.0.1"

        @OptionGroup(title: "TLS") var tls: ServeTLSOptions

        @OptionGroup(title: "Authentication") var authentication: ServeAuthenticationOptions

        @OptionGroup(title: "Device tokens and topics") var tokenOptions: ServeTokenOptions

        @OptionGroup(title: "Behaviour") var behaviour: ServeBehaviourOptions

        @OptionGroup(title: "Output") var output: ServeOutputOptions

        @OptionGroup(title: "Inbox") var inbox: ServeInboxOptions

        /// Rules between flags; run() checks them first, once the parser has refused unknown options.
        func check() throws {
            guard (0...65_535).contains(self.port) else { throw ValidationError("--port must be 0...65535 (got \(self.port)).") }
            if let metricsPort = self.output.metricsPort, !(0...65_535).contains(metricsPort) {
                throw ValidationError("--metrics-port must be 0...65535 (got \(metricsPort)).")
            }
            if let uiPort = self.inbox.uiPort, !(0...65_535).contains(uiPort) {
                throw ValidationError("--ui-port must be 0...65535 (got \(uiPort)).")
            }
            _ = try self.inbox.reportURL()
            guard self.inbox.keep >= 1 else { throw ValidationError("--keep must be at least 1 (got \(self.inbox.keep)).") }
            if self.output.recordAcceptedOnly, self.output.record == nil { throw ValidationError("--record-accepted-only goes with --record FILE.") }
            for topic in self.tokenOptions.topics {
                do { _ = try APNSBundleID(topic) } catch { throw ValidationError("--topic '\(topic)': \(error)") }
            }
            guard self.behaviour.maxStreams >= 1 else { throw ValidationError("--max-streams must be at least 1.") }
            if self.tls.h2c, self.authentication.clientCA != nil { throw ValidationError("--client-ca needs TLS; drop --h2c.") }
            if (self.tls.cert == nil) != (self.tls.key == nil) { throw ValidationError("--cert and --key go together.") }
            if self.tls.writeCA != nil, self.tls.h2c { throw ValidationError("--write-ca needs TLS; drop --h2c.") }
            if self.tls.writeCA != nil, self.tls.cert != nil {
                throw ValidationError("--write-ca writes the CA of the certificate made at start; with --cert, give clients the CA that issued it.")
            }
            guard self.behaviour.handshakeTimeout > 0, self.behaviour.handshakeTimeout <= 86_400 else {
                throw ValidationError("--handshake-timeout must be more than 0 and at most 86400 seconds (got \(self.behaviour.handshakeTimeout)).")
            }
            guard self.behaviour.requestTimeout >= 0, self.behaviour.requestTimeout <= 86_400 else {
                throw ValidationError("--request-timeout must be 0 (never) to 86400 seconds (got \(self.behaviour.requestTimeout)).")
            }
        }

        func run() async throws {
            try self.check()
            try await runReportingFailures {
                let metrics = self.output.metricsPort != nil || self.inbox.uiPort != nil ? ServeMetrics() : nil
                let recorder = try self.output.record.map { try PushRecorder(path: $0, acceptedOnly: self.output.recordAcceptedOnly) }
                let inbox = LocalAPNSInbox(capacity: self.inbox.keep)
                let forwarder = try self.makeForwarder(metrics: metrics)
                let contracts = try self.inbox.contracts()
                let phones = self.makePhones(metrics: metrics, forwarder: forwarder, contracts: contracts)
                let server = try self.startServer(metrics: metrics, recorder: recorder, inbox: inbox)
                let endpoint = try self.output.metricsPort == nil ? nil : metrics.map { try self.serveMetrics($0, server: server) }
                // Caught before the port is printed: a supervisor that stops the server as soon as it
                // has read the port must not find the signal ignored while the handler is set up.
                let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { await phones.run(inbox) }
                    if let forwarder { group.addTask { await forwarder.run() } }
                    let ui = try await self.startInbox(inbox: inbox, phones: phones, metrics: metrics, server: server, in: &group)
                    Output.result(String(server.port))
                    if let ui { Output.result("ui http://\(Self.urlHost(self.inbox.uiHost)):\(ui)") }
                    if let endpoint { Output.result(String(endpoint.port)) }
                    let scheme = self.tls.h2c ? "h2c" : "TLS"
                    let latency = self.behaviour.latency.map { ", answers held \(CommandLineDuration.text($0))" } ?? ""
                    Output.diagnostic("apnsctl serve: \(self.behaviour.environment.canonical) APNs on \(self.host):\(server.port) (\(scheme)\(latency)); Ctrl-C stops")
                    if let ui { Output.diagnostic("apnsctl serve: inbox on http://\(Self.urlHost(self.inbox.uiHost)):\(ui)/") }
                    if let endpoint { Output.diagnostic("apnsctl serve: metrics on http://127.0.0.1:\(endpoint.port)/metrics") }
                    if let forwarder { Output.diagnostic("apnsctl serve: Live Activity token reports to \(forwarder.url.absoluteString)") }
                    let signal = await signals.first()
                    Output.diagnostic("apnsctl serve: \(signal.map(String.init(describing:)) ?? "cancelled"), shutting down (accepted \(server.acceptedCount))")
                    await endpoint?.shutdown()
                    await server.shutdown()
                    // Event streams, waits and the phones' delivery end.
                    inbox.close()
                    phones.finish()
                    forwarder?.finish()  // what is still queued is not sent: its task is cancelled below
                    recorder?.close()  // after the server's shutdown: no request is judged any more
                    group.cancelAll()  // the inbox's HTTP server
                }
            }
        }

        /// The forwarder of the phones' token reports, with --report-tokens-to.
        private func makeForwarder(metrics: ServeMetrics?) throws -> ActivityReportForwarder? {
            guard let url = try self.inbox.reportURL() else { return nil }
            guard let metrics else { return ActivityReportForwarder(url: url) }
            return ActivityReportForwarder(url: url, metrics: metrics.factory)
        }

        /// The phones, whose created phones' apps report to `forwarder` when there is one.
        private func makePhones(
            metrics: ServeMetrics?, forwarder: ActivityReportForwarder?, contracts: [String: LiveActivityContract]
        ) -> LocalAPNSPhones {
            var reports: (@Sendable (ActivityTokenReport) -> Void)?
            if let forwarder { reports = { report in forwarder.enqueue(report) } }
            let environment = self.behaviour.environment.local
            guard let metrics else { return LocalAPNSPhones(environment: environment, reports: reports, contracts: contracts) }
            return LocalAPNSPhones(environment: environment, metrics: metrics.factory, reports: reports, contracts: contracts)
        }

        /// Starts the inbox's HTTP server in `group` when --ui-port is given; returns its port.
        private func startInbox(
            inbox: LocalAPNSInbox, phones: LocalAPNSPhones, metrics: ServeMetrics?, server: LocalAPNSServer,
            in group: inout ThrowingDiscardingTaskGroup<any Error>
        ) async throws -> Int? {
            guard let uiPort = self.inbox.uiPort else { return nil }
            var scrape: (@Sendable () -> [UInt8])?
            if let metrics { scrape = { metrics.text(server: server) } }
            let http = LocalAPNSInboxServer(
                api: LocalAPNSInboxAPI(inbox: inbox, phones: phones), host: self.inbox.uiHost, port: uiPort, metrics: scrape
            )
            do {
                return try await http.start(in: &group)
            } catch {
                await server.shutdown()
                inbox.close()
                throw CLIFailure(message: "--ui-port: cannot serve the inbox on \(self.inbox.uiHost):\(uiPort): \(error)", exitCode: CLIExit.cannotCreate)
            }
        }

        private static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

        private func serveMetrics(_ metrics: ServeMetrics, server: LocalAPNSServer) throws -> PlainHTTPEndpoint {
            do {
                return try metrics.serve(host: "127.0.0.1", port: self.output.metricsPort ?? 0, server: server)
            } catch {
                throw CLIFailure(message: "--metrics-port: cannot serve metrics: \(error)", exitCode: CLIExit.unavailable)
            }
        }

        private func startServer(metrics: ServeMetrics?, recorder: PushRecorder?, inbox: LocalAPNSInbox) throws -> LocalAPNSServer {
            var tls: HTTP2ServerTLSConfiguration?
            if !self.tls.h2c {
                if let ca = self.authentication.clientCA { try InputFiles.requireReadable(ca, flag: "--client-ca") }
                if let certificate = self.tls.cert, let privateKey = self.tls.key {
                    try InputFiles.requireReadable(certificate, flag: "--cert")
                    try InputFiles.requireReadable(privateKey, flag: "--key")
                    tls = HTTP2ServerTLSConfiguration(
                        certificateChainFile: certificate, privateKeyFile: privateKey,
                        requestsClientCertificate: self.authentication.clientCA != nil, clientCertificateTrustRoots: self.authentication.clientCA
                    )
                } else {
                    let identity: LoopbackTLSIdentity
                    do {
                        identity = try LoopbackTLSIdentity()
                    } catch {
                        throw CLIFailure(message: "cannot make the server's certificate: \(error)", exitCode: CLIExit.software)
                    }
                    tls = HTTP2ServerTLSConfiguration(
                        identity: identity, requestsClientCertificate: self.authentication.clientCA != nil, clientCertificateTrustRoots: self.authentication.clientCA
                    )
                }
            }
            let keys = try self.authentication.registerKey.map(Self.parseKey)
            let certificates = try self.authentication.registerCert.map { try Self.parseCertificate($0, defaultBundle: self.tokenOptions.topic) }
            var records: [String: LocalAPNSTokenRecord] = [:]
            for entry in self.tokenOptions.tokens {
                let (token, bundle) = try self.parseToken(entry, flag: "--token")
                records[token] = LocalAPNSTokenRecord(bundleID: bundle, environment: self.behaviour.environment.local)
            }
            for entry in self.tokenOptions.unregistered {
                let (token, bundle) = try self.parseToken(entry, flag: "--unregistered")
                records[token] = LocalAPNSTokenRecord(bundleID: bundle, environment: self.behaviour.environment.local, state: .unregistered(Date()))
            }
            let configuration = LocalAPNSConfiguration(
                environment: self.behaviour.environment.local, acceptsUnknownTokens: !self.tokenOptions.rejectUnknownTokens,
                maxConcurrentStreams: self.behaviour.maxStreams, idleTimeout: self.behaviour.idleTimeout.map { .milliseconds(Int($0 * 1000)) },
                keepsHistory: false, servedBundleIDs: self.tokenOptions.topics.isEmpty ? nil : Set(self.tokenOptions.topics)
            )
            let authenticator = keys.isEmpty ? nil : TokenAuthenticator(
                keys: keys, environment: self.behaviour.environment.local, lenient: self.authentication.lenientTokens,
                tokenUpdateLimit: self.authentication.tokenUpdateLimit
            )
            var observer: (@Sendable (LocalAPNSJudgement) -> Void)?
            let printer = self.output.quiet ? nil : JudgementPrinter(json: self.output.json, printsRequests: self.output.printRequests)
            if printer != nil || metrics != nil || recorder != nil {
                observer = { judgement in
                    recorder?.record(judgement)
                    metrics?.record(judgement)
                    printer?.print(judgement)
                }
            }
            // Written once every flag is known good, before the port is printed: a client that read
            // the port finds the CA.
            if let file = self.tls.writeCA, let identity = tls?.identity {
                try OutputFiles.write(identity.caCertificatePEM, to: file, flag: "--write-ca")
            }
            do {
                return try LocalAPNSServer.start(
                    configuration,
                    http2: HTTP2ServerConfiguration(
                        host: self.host, port: self.port, tls: tls, handshakeTimeout: .milliseconds(Int(self.behaviour.handshakeTimeout * 1000)),
                        requestTimeout: self.behaviour.requestTimeout == 0 ? nil : .milliseconds(Int(self.behaviour.requestTimeout * 1000)),
                        responseDelay: self.behaviour.latency ?? .zero, onWrongProtocol: { peer, problem in
                            Output.diagnostic("apnsctl serve: \(peer) \(problem)")
                        }
                    ),
                    tokens: records,
                    certificates: certificates, authenticator: authenticator, inbox: inbox, observer: observer
                )
            } catch {
                throw CLIFailure(message: "cannot start the server: \(error)", exitCode: CLIExit.unavailable)
            }
        }

        private static func parseKey(_ entry: String) throws -> LocalAPNSKey {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 || parts.count == 4 else {
                throw CLIFailure(
                    message: "--register-key '\(entry)': expected FILE:KEYID:TEAMID or FILE:KEYID:TEAMID:BUNDLEID,…",
                    exitCode: ExitCode.validationFailure.rawValue
                )
            }
            var bundleIDs: Set<String>?
            if parts.count == 4 {
                var ids: Set<String> = []
                for id in parts[3].split(separator: ",", omittingEmptySubsequences: false) {
                    do { ids.insert(try APNSBundleID(String(id)).rawValue) } catch {
                        throw CLIFailure.badData("--register-key", error, value: String(id))
                    }
                }
                bundleIDs = ids
            }
            let keyID: APNSKeyID, teamID: APNSTeamID
            do {
                keyID = try APNSKeyID(parts[1])
                teamID = try APNSTeamID(parts[2])
            } catch {
                throw CLIFailure.badData("--register-key", error, value: entry)
            }
            do {
                return LocalAPNSKey(
                    keyID: keyID, teamID: teamID, verificationKey: try APNSVerificationKey(contentsOfFile: parts[0]), bundleIDs: bundleIDs
                )
            } catch {
                let code = error.code == .fileNotFound ? CLIExit.noInput : CLIExit.dataError
                throw CLIFailure(message: "--register-key: \(error)", exitCode: code)
            }
        }

        private static func parseCertificate(_ entry: String, defaultBundle: String?) throws -> LocalAPNSCertificate {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            let info: APNSCertificateInfo
            do {
                info = try APNSCertificateInfo(pemFile: parts[0])
            } catch {
                let code = error.code == .fileNotFound ? CLIExit.noInput : CLIExit.dataError
                throw CLIFailure(message: "--register-cert: \(error)", exitCode: code)
            }
            guard let bundle = parts.count == 2 ? parts[1] : (info.bundleID ?? defaultBundle) else {
                throw CLIFailure(message: "--register-cert '\(entry)': the certificate names no bundle id; add :BUNDLEID",
                                 exitCode: CLIExit.dataError)
            }
            return LocalAPNSCertificate(sha256Fingerprint: info.sha256Fingerprint, bundleID: bundle)
        }

        private func parseToken(_ entry: String, flag: String) throws -> (String, String) {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            let token: DeviceToken
            do {
                token = try DeviceToken(parts.first ?? "", allowedLengths: 64...200)
            } catch {
                throw CLIFailure.badData(flag, error, value: entry)
            }
            guard let bundle = parts.count == 2 ? parts[1] : self.tokenOptions.topic else {
                throw CLIFailure(message: "\(flag) '\(CLIFailure.abbreviate(entry))': no bundle id; write TOKEN:BUNDLEID or pass --topic",
                                 exitCode: ExitCode.validationFailure.rawValue)
            }
            return (token.hexString, bundle)
        }
    }
}

/// Prints judged requests, one line each (one block each with --print-requests), from the
/// server's I/O threads.
private struct JudgementPrinter: Sendable {
    var json: Bool
    var printsRequests: Bool

    func print(_ judgement: LocalAPNSJudgement) {
        let decision = judgement.decision
        let target: String
        switch decision.target {
        case .device(let token): target = token
        case .broadcast(let bundle, let channel): target = "broadcast \(bundle) \(channel)"
        case .channels(let bundle): target = "channels \(bundle)"
        case .unknown: target = "-"
        }
        if self.json {
            var fields: [String] = []
            if case .device(let token) = decision.target { fields.append(#""token":"\#(token)""#) }
            if case .broadcast(_, let channel) = decision.target { fields.append(#""channel_id":\#(JSONText.quote(channel))"#) }
            if let topic = judgement.request[header: "apns-topic"] { fields.append(#""topic":\#(JSONText.quote(topic))"#) }
            fields.append(#""push_type":\#(decision.pushType.map { "\"\($0.rawValue)\"" } ?? "null")"#)
            fields.append(#""status":\#(decision.status)"#)
            fields.append(#""reason":\#(decision.reason.map { "\"\($0.rawValue)\"" } ?? "null")"#)
            fields.append(#""apns_id":\#(JSONText.quote(decision.apnsID))"#)
            if let why = judgement.why { fields.append(#""why":\#(JSONText.quote(why))"#) }
            if let timestamp = decision.timestamp { fields.append(#""timestamp":\#(Int64((timestamp.timeIntervalSince1970 * 1000).rounded()))"#) }
            if let warning = decision.warning { fields.append(#""warning":\#(JSONText.quote(warning))"#) }
            if let lint = decision.lint { fields.append(#""lint":\#(JSONText.quote(lint))"#) }
            if let fault = judgement.fault { fields.append(#""fault":\#(JSONText.quote(String(describing: fault)))"#) }
            if self.printsRequests { fields.append(#""request":\#(Self.requestJSON(judgement.request))"#) }
            Output.result("{" + fields.joined(separator: ",") + "}")
        } else {
            let reason = decision.reason.map { " \($0.rawValue)" } ?? ""
            let lint = (decision.warning.map { " (warning: \($0))" } ?? "") + (decision.lint.map { " (lint: \($0))" } ?? "")
            let why = judgement.why.map { ": \($0)" } ?? ""
            let line = "\(decision.status)\(reason) \(decision.pushType?.rawValue ?? "-") \(target) \(decision.idHeader)=\(decision.apnsID)\(lint)\(why)"
            if self.printsRequests {
                // One write for the whole block: blocks of concurrent requests do not interleave.
                Output.result(Self.requestBlock(judgement.request) + "→ " + line + "\n")
            } else {
                Output.result(line)
            }
        }
    }

    /// `POST /3/device/… HTTP/2`, the headers, a blank line and the pretty-printed body.
    private static func requestBlock(_ request: HTTP2ServerRequest) -> String {
        var lines = ["\(request.method) \(request.path) HTTP/2"]
        for header in request.headers {
            lines.append("\(header.name): \(header.name == "authorization" ? "bearer <redacted>" : header.value)")
        }
        lines.append("")
        if !request.body.isEmpty { lines.append(Self.pretty(request.body)) }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func requestJSON(_ request: HTTP2ServerRequest) -> String {
        let headers = request.headers.map { header in
            let value = header.name == "authorization" ? "bearer <redacted>" : header.value
            return "\(JSONText.quote(header.name)):\(JSONText.quote(value))"
        }.joined(separator: ",")
        let body = String(decoding: request.body, as: UTF8.self)
        return "{\"method\":\(JSONText.quote(request.method)),\"path\":\(JSONText.quote(request.path)),\"headers\":{\(headers)},"
            + "\"body\":\(JSONText.quote(body)),\"body_bytes\":\(request.body.count)}"
    }

    /// The body indented, keys sorted; as sent when it is not JSON.
    private static func pretty(_ body: [UInt8]) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        else { return String(decoding: body, as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }
}
