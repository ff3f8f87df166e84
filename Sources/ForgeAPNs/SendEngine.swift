internal import struct Foundation.Date
internal import ForgeAPNsCore
internal import ForgeCrypto
internal import ForgeHTTP2
internal import Logging
internal import Metrics
internal import Tracing

/// The one send engine: `send`, `sendBulk`, broadcasts and the channel API all come here.
///
/// It sends requests through the transport together, reads each answer or failure as a
/// ``SendTry``, asks ``SendDecision`` what to do, and does it: accept, reject, renew the provider
/// token once, retry or replay after the wait the decision gives, or fail. Pushes that must go again
/// go again together once their waits are over, so a batch's 429s back off side by side. A single
/// push (`send`) runs the same steps in a loop of its own (`executeSingle`), without the batch's
/// arrays; `step` is where both read a try.
extension APNSClient {
    /// Sends `requests` until each has its final outcome, in order: the accepted ones' results, or
    /// the errors that end the others (a rejection, or why nothing was accepted).
    /// - Parameters:
    ///   - route: the credential of the requests' topic: its pool and provider token.
    ///   - channelAPI: sends through the channel-management endpoint's transport.
    func execute(
        _ requests: [APNSHTTPRequest], pushType: APNSPushType, route: CredentialRoute, deadline: MonotonicInstant,
        channelAPI: Bool = false
    ) async -> [Result<APNSSendResult, APNSError>] {
        let policy = self.configuration.retry
        let started = MonotonicInstant.now
        // One array of outcomes and one of states for the batch (a single `send` takes executeSingle).
        var outcomes = [Result<APNSSendResult, APNSError>](repeating: Self.noOutcome, count: requests.count)
        var states = [Scheduled](repeating: Scheduled(due: started), count: requests.count)
        var pending = Array(requests.indices)
        // The requests' transport form (``PreparedRequest``), made once per provider token: requests
        // of one notification share it, so a batch converts and checks its headers once.
        var prepared: [PreparedRequest] = []
        route.metrics.started(requests.count)
        defer { route.metrics.ended(requests.count) }

        func fail(_ indices: [Int], _ kind: APNSError.Kind, _ detail: String) {
            for index in indices {
                outcomes[index] = .failure(APNSError(
                    kind: kind, attempts: states[index].decision.attempts, mayHaveBeenDelivered: states[index].decision.mayHaveBeenDelivered, detail: detail
                ))
            }
        }

        // When the batch's pushes are judged ready: the start, then each round's answer (a push to
        // send again without a wait is due before it, one with a wait after it).
        var now = started
        while !pending.isEmpty {
            if self.isShutDown {
                fail(pending, .shutdown, "the client is shut down")
                break
            }
            // Those whose wait is over go now, together; the others wait for the earliest of them.
            var ready = pending.allSatisfy { states[$0].due <= now } ? pending : pending.filter { states[$0].due <= now }
            if ready.isEmpty {
                let next = pending.lazy.map { states[$0].due }.min()!
                do {
                    try await MonotonicInstant.sleep(for: now.duration(to: next))
                } catch {
                    fail(pending, .cancelled, "cancelled while waiting to send again")
                    break
                }
                now = .now
                ready = pending.filter { states[$0].due <= now }
            }
            let providerToken: APNSProviderToken?
            do {
                providerToken = try await route.providerToken()
            } catch {
                fail(pending, .credentials, error.detail)
                break
            }
            let authorization = providerToken?.authorizationHeaderValue
            if prepared.isEmpty || prepared[0].authorization != authorization {
                prepared = Self.prepare(requests, authorization: authorization, route: route, channelAPI: channelAPI)
            }
            let all = ready.elementsEqual(requests.indices)
            let results = await route.send(
                all ? requests : ready.map { requests[$0] }, prepared: all ? prepared : ready.map { prepared[$0] },
                deadline: deadline, channelAPI: channelAPI
            )
            // One batch's answers arrive together: one clock reading and one metrics update for all.
            let answered = MonotonicInstant.now
            var again = ready.count == pending.count ? [] : pending.filter { states[$0].due > now }
            var accepted = 0
            var renew = false
            for (position, index) in ready.enumerated() {
                switch Self.step(
                    results[position], state: &states[index].decision, pushType: pushType, route: route, policy: policy,
                    renewableToken: providerToken != nil, started: started, answered: answered, deadline: deadline, path: requests[index].path
                ) {
                case .done(let outcome):
                    if case .success = outcome { accepted += 1 }
                    outcomes[index] = outcome
                case .again(let wait):
                    states[index].due = answered + wait
                    again.append(index)
                case .renewProviderToken:
                    renew = true
                    again.append(index)
                }
            }
            route.metrics.accepted(pushType: pushType, started: started, answered: answered, count: accepted)
            if renew, let providerToken { await Self.renew(providerToken, route: route) }
            pending = again
            now = answered
        }
        return outcomes
    }

    /// The transport form of each of `requests` with `authorization`: one per run of requests that
    /// share their notification's parts (a bulk batch is one run: its pushes share one parts
    /// object, with or without an `apns-id` of their own each).
    private static func prepare(
        _ requests: [APNSHTTPRequest], authorization: String?, route: CredentialRoute, channelAPI: Bool
    ) -> [PreparedRequest] {
        var prepared: [PreparedRequest] = []
        prepared.reserveCapacity(requests.count)
        for request in requests {
            if let last = prepared.last, last.serves(request, authorization: authorization) {
                prepared.append(last)
            } else {
                prepared.append(route.prepare(request, authorization: authorization, channelAPI: channelAPI, remember: false))
            }
        }
        return prepared
    }

    /// What follows one try of a push.
    enum Step {
        /// Its final outcome: accepted, rejected, or failed.
        case done(Result<APNSSendResult, APNSError>)
        /// Send it again after `wait` (a retry or a replay; metrics and the log have it).
        case again(wait: Duration)
        /// Renew the provider token, then send it again at once.
        case renewProviderToken
    }

    /// One try's result read as ``SendDecision`` decides, `state` updated; the rejection and
    /// failure metrics and the retry log line are recorded here, acceptances by the caller (a batch
    /// counts its own together). The one place `execute` and `executeSingle` judge a try.
    static func step(
        _ result: Result<APNSTransportResponse, APNSTransportError>, state: inout SendState, pushType: APNSPushType,
        route: CredentialRoute, policy: RetryPolicy, renewableToken: Bool, started: MonotonicInstant,
        answered: MonotonicInstant, deadline: MonotonicInstant, path: @autoclosure () -> String
    ) -> Step {
        let outcome: SendTry
        var response: APNSTransportResponse?
        var rejection: APNSErrorResponse?
        switch result {
        case .success(let answer):
            response = answer
            rejection = answer.rejection
            outcome = .answered(status: answer.status, reason: rejection?.reason)
        case .failure(let failure):
            outcome = SendTry(failure)
        }
        let decision = SendDecision.after(
            outcome, state: &state, policy: policy, renewableToken: renewableToken,
            renewsInvalidToken: route.renewsInvalidProviderToken, remaining: answered.duration(to: deadline)
        )
        switch decision {
        case .accept:
            return .done(.success(APNSSendResult(
                response: response!, attempts: state.attempts, mayHaveBeenDeliveredTwice: state.mayHaveBeenDelivered,
                duration: started.duration(to: answered)
            )))
        case .reject:
            route.metrics.rejected(pushType: pushType, reason: rejection!.reason.rawValue, latency: started.duration(to: answered))
            return .done(.failure(APNSError(rejection!, state: state)))
        case .renewProviderToken:
            return .renewProviderToken
        case .retry(let wait), .replay(let wait):
            route.metrics.count(decision)
            if route.logger.logLevel <= .debug {
                route.logger.debug(decision.isReplay ? "replaying a push APNs did not process" : "retrying", metadata: [
                    "apns.push_type": "\(pushType)", "apns.attempt": "\(state.attempts)", "apns.replay": "\(state.replays)",
                    "apns.reason": "\(rejection?.reason.rawValue ?? result.failure.map { "\($0)" } ?? "-")",
                    "apns.path": "\(Self.abbreviatePath(path()))",
                ])
            }
            return .again(wait: wait)
        case .fail(let kind):
            route.metrics.failed(pushType: pushType)
            return .done(.failure(APNSError(
                kind: kind, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered, detail: result.failure.map(\.detail) ?? ""
            )))
        }
    }

    /// One push, as ``execute(_:pushType:route:deadline:channelAPI:)`` sends a batch of one, with
    /// its state in locals: a `send` allocates no arrays on its way.
    /// - Parameter started: when the send began, if the caller read the clock already (for its
    ///   default deadline): one reading of the clock fewer per push.
    nonisolated(nonsending) func executeSingle(
        _ request: APNSHTTPRequest, pushType: APNSPushType, route: CredentialRoute, deadline: MonotonicInstant,
        channelAPI: Bool = false, started: MonotonicInstant? = nil
    ) async -> Result<APNSSendResult, APNSError> {
        let policy = self.configuration.retry
        let started = started ?? .now
        var state = SendState()
        route.metrics.started(1)
        defer { route.metrics.ended(1) }
        func failure(_ kind: APNSError.Kind, _ detail: String) -> Result<APNSSendResult, APNSError> {
            .failure(APNSError(kind: kind, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered, detail: detail))
        }
        while true {
            if self.isShutDown { return failure(.shutdown, "the client is shut down") }
            let providerToken: APNSProviderToken?
            do {
                providerToken = try await route.providerToken()
            } catch {
                return failure(.credentials, error.detail)
            }
            let prepared = route.prepare(request, authorization: providerToken?.authorizationHeaderValue, channelAPI: channelAPI)
            let result = await route.send(request, prepared: prepared, deadline: deadline, channelAPI: channelAPI)
            let answered = MonotonicInstant.now
            switch Self.step(
                result, state: &state, pushType: pushType, route: route, policy: policy, renewableToken: providerToken != nil,
                started: started, answered: answered, deadline: deadline, path: request.path
            ) {
            case .done(let outcome):
                if case .success = outcome { route.metrics.accepted(pushType: pushType, started: started, answered: answered, count: 1) }
                return outcome
            case .renewProviderToken:
                if let providerToken { await Self.renew(providerToken, route: route) }
            case .again(let wait):
                guard wait > .zero else { continue }
                do {
                    try await MonotonicInstant.sleep(for: wait)
                } catch {
                    return failure(.cancelled, "cancelled while waiting to send again")
                }
            }
        }
    }

    /// A push of the batch: its decision state, and when it may go (again).
    private struct Scheduled {
        var decision = SendState()
        var due: MonotonicInstant
    }

    /// What a push has before its outcome is known; every path out of the loop replaces it.
    private static let noOutcome = Result<APNSSendResult, APNSError>.failure(
        APNSError(kind: .transport, mayHaveBeenDelivered: true, detail: "no outcome")
    )

    /// Sends one request as ``executeSingle(_:pushType:route:deadline:channelAPI:started:)`` does, in a span of its own
    /// (``ClientTracing``) when a tracer is set; attributes are built only when the span records.
    nonisolated(nonsending) func executeOne(
        _ request: consuming APNSHTTPRequest, pushType: APNSPushType, bundleID: @autoclosure () -> String, deadline: MonotonicInstant,
        channelAPI: Bool = false,
        started: MonotonicInstant? = nil
    ) async throws(APNSError) -> APNSSendResult {
        guard self.tracing else {
            // No tracer: no existential to copy, no span to end, and the route looked up here (one
            // async frame fewer on every send).
            let route = try self.route(forBundleID: bundleID())
            return try await self.executeSingle(
                request, pushType: pushType, route: route, deadline: deadline, channelAPI: channelAPI, started: started
            ).get()
        }
        let span = self.tracer?.startSpan(channelAPI ? ClientTracing.channelSpan : ClientTracing.sendSpan, ofKind: .client)
        defer { span?.end() }
        let recording = span?.isRecording == true
        if recording, let span { ClientTracing.describe(pushType: pushType, topic: request[header: "apns-topic"], on: span) }
        let outcome: Result<APNSSendResult, APNSError>
        do throws(APNSError) {
            outcome = await self.executeSingle(
                request, pushType: pushType, route: try self.route(forBundleID: bundleID()), deadline: deadline, channelAPI: channelAPI,
                started: started
            )
        } catch {
            outcome = .failure(error)
        }
        if recording, let span { ClientTracing.record(outcome, on: span) }
        return try outcome.get()
    }

    /// Replaces the provider token APNs rejected for `route`'s key (others sharing it see the new
    /// one): the local signer signs a new one, another source is asked for its replacement.
    nonisolated(nonsending) static func renew(_ rejected: APNSProviderToken, route: CredentialRoute) async {
        guard let tokens = route.tokens else { return }
        let replacement = try? await tokens.token(afterRejecting: rejected)
        route.metrics.tokenRefreshed()
        route.logger.info(
            tokens.isLocalSigner ? "provider token expired; signed a new one" : "provider token rejected; asked its source for another",
            metadata: [
                "apns.key_id": "\(tokens.keyID)", "apns.token.rejected_iat": "\(Int64(rejected.issuedAt.timeIntervalSince1970))",
                "apns.token.iat": "\(replacement.map { "\(Int64($0.issuedAt.timeIntervalSince1970))" } ?? "-")",
            ]
        )
    }

    /// A path with a device token shortened to its first and last 4 hex digits, for logs.
    static func abbreviatePath(_ path: String) -> String {
        guard path.hasPrefix(APNSPreparedNotification.devicePathPrefix) else { return path }
        let token = path.dropFirst(APNSPreparedNotification.devicePathPrefix.count)
        return token.count > 12 ? "\(APNSPreparedNotification.devicePathPrefix)\(token.prefix(4))…\(token.suffix(4))" : path
    }
}

extension Result {
    /// The error of a failure; `nil` for a success.
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
