import Foundation
internal import ForgeSupport
internal import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The I/O thread of one client connection: connect, handshake, then poll and pump until the
/// connection ends. Everything it owns is touched by this thread only.
final class ClientLoop: @unchecked Sendable {
    // @unchecked Sendable: handed once to the thread that runs it; `connected` is set before the
    // thread starts; everything else is used on that thread alone.
    private let configuration: HTTP2ClientConfiguration
    private let inbox: LockedBox<Inbox>
    private let gauges: ConnectionGauges
    private let waker: WakePipe
    var connected: ((Result<Void, any Error>) -> Void)?
    /// Told about stream-limit changes, the peer's GOAWAY and the close (after a successful connect).
    var events: (@Sendable (HTTP2ConnectionEvent) -> Void)?
    /// The stream limit last published, so that only changes are reported.
    private var publishedLimit: UInt32 = 0

    private var core: HTTP2ClientCore!
    private var channel: Channel!
    private var incoming: [UInt8] = []
    private var takenRequests: [HTTP2ClientCore.Pending?] = []
    private var takenCancellations: [UInt64] = []
    private var takenJobs: [(job: UnownedJob, executor: UnownedTaskExecutor)] = []
    /// Set once the connection exists: jobs run on this thread as its task executor.
    var executor: ConnectionExecutor?
    /// When the peer last sent anything, or when requests went out on a quiet connection: the
    /// silence a PING measures starts here.
    private var lastActivity: UInt64 = 0
    /// Whether the peer sent anything yet: a connection it closes before its preface was never
    /// established, so it ends as a failed connect.
    private var peerSpoke = false
    /// Whether streams were open at the end of the last pass.
    private var hadOpenStreams = false
    private var pingSentAt: UInt64?
    private var pingPayload: UInt64 = 0
    private var shutdownDeadline: UInt64?

    init(configuration: HTTP2ClientConfiguration, inbox: LockedBox<Inbox>, gauges: ConnectionGauges, waker: WakePipe) {
        self.configuration = configuration
        self.inbox = inbox
        self.gauges = gauges
        self.waker = waker
    }

    func run() {
        self.executor?.noteLoopThread()
        defer { self.executor?.noteLoopEnded() }
        let finalError: HTTP2ClientError
        do {
            try self.open()
            self.connected?(.success(()))
            self.connected = nil
            finalError = self.pump()
        } catch {
            let failure = error as? HTTP2ClientError
                ?? HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(error)")
            self.events = nil  // a failed connect is reported once, by `connected`
            self.finish(with: failure)
            self.connected?(.failure(failure))
            return
        }
        self.finish(with: finalError)
    }

    // MARK: Opening

    private func open() throws {
        let deadline = monotonicNanoseconds() &+ UInt64(max(0, HTTP2Connection.nanoseconds(self.configuration.connectTimeout)))
        let socket: Socket
        let proxy = self.configuration.proxy
        do {
            socket = try Socket.connect(host: proxy?.host ?? self.configuration.host, port: proxy?.port ?? self.configuration.port,
                                        timeout: self.configuration.connectTimeout)
        } catch {
            let what = proxy.map { "cannot reach the proxy \($0.endpoint): " } ?? ""
            throw HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(what)\(error)",
                                   permanent: (error as? SocketError)?.isNameNotFound ?? false)
        }
        let inbox = self.inbox
        let interrupt = (self.waker.readDescriptor, { inbox.withLock { $0.connectCancelled } })
        if let proxy {
            // The tunnel first, on the bare socket: TLS then runs end to end with the target.
            var handshake = ProxyHandshake(proxy: proxy, targetHost: self.configuration.host, targetPort: self.configuration.port)
            do {
                try Channel(socket: socket, tls: nil).openTunnel(&handshake, deadline: deadline, interrupt: interrupt)
            } catch let error as HTTP2ClientError {
                throw error
            } catch let error as ProxyHandshake.Failure {
                throw HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(error)", permanent: error.isPermanent)
            } catch {
                let failure = ProxyHandshake.Failure(proxy: proxy, reason: "\(error)", isPermanent: false)
                throw HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(failure)")
            }
        }
        var tls: TLSConnection?
        if let tlsConfiguration = self.configuration.tls {
            do {
                let context = try TLSContext.client(tlsConfiguration)
                tls = try TLSConnection(
                    client: context, host: tlsConfiguration.serverName ?? self.configuration.host,
                    verifyPeer: tlsConfiguration.verification == .full
                )
            } catch {
                throw HTTP2ClientError(.tlsFailed, mayHaveBeenProcessed: false, detail: "\(error)")
            }
        }
        self.channel = Channel(socket: socket, tls: tls)
        do {
            try self.channel.handshake(deadline: deadline, interrupt: interrupt)
        } catch let error as HTTP2ClientError {
            throw error
        } catch let error as TLSError where error.isALPNMismatch {
            throw HTTP2ClientError(.alpnMismatch, mayHaveBeenProcessed: false, detail: error.description)
        } catch {
            let tlsError = error as? TLSError
            throw HTTP2ClientError(.tlsFailed, mayHaveBeenProcessed: false, detail: "\(error)",
                                   permanent: tlsError?.isCertificateRejected == true || tlsError?.isProtocolMismatch == true)
        }
        do {
            self.core = try HTTP2ClientCore(settings: self.configuration.settings, localStreamCap: self.configuration.maximumConcurrentStreams)
        } catch {
            throw HTTP2ClientError(.protocolError, mayHaveBeenProcessed: false, detail: "\(error)")
        }
        self.core.onGoAway = { [unowned self] in self.publishGoAway() }
        self.core.onFirstAnswer = { [gauges] in gauges.answered.store(true, ordering: .releasing) }
        self.core.onPingAck = { [unowned self] payload in
            if payload == self.pingPayload { self.pingSentAt = nil }
        }
        self.lastActivity = monotonicNanoseconds()
        try self.flushSession()
    }

    // MARK: The loop

    /// Runs until the connection ends; returns why it ended.
    private func pump() -> HTTP2ClientError {
        var descriptors = [
            pollfd(fd: self.channel.socket.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: self.waker.readDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            do {
                if let ended = try self.takeInbox() { return ended }
                let now = monotonicNanoseconds()
                let nextDeadline = self.core.expireDeadlines(now: now)
                if let ended = self.checkPing(now: now) { return ended }
                if let deadline = self.shutdownDeadline, now >= deadline || self.core.isIdle {
                    return HTTP2ClientError(.shutdown, mayHaveBeenProcessed: true, detail: "the connection was shut down")
                }
                try self.flushSession()
                // Requests on a connection that was quiet: the silence counts from now.
                let hasOpenStreams = self.core.openStreamCount > 0
                if hasOpenStreams, !self.hadOpenStreams { self.lastActivity = max(self.lastActivity, now) }
                self.hadOpenStreams = hasOpenStreams
                self.publishState()
                if !self.core.isActive && !self.channel.hasPendingOutput {
                    return self.endedError(detail: "the peer ended the session")
                }

                descriptors[0].events = Int16(POLLIN) | (self.channel.hasPendingOutput ? Int16(POLLOUT) : 0)
                descriptors[0].revents = 0
                descriptors[1].revents = 0
                // Work this thread gave itself (jobs, their requests), or that came while it ran, did
                // not wake it: do not block on it. Otherwise it waits, and says so in the same critical
                // section, so that work put in the inbox from now on wakes it (and work put in before,
                // while it ran, wakes nothing: it is seen here).
                let hasWork = self.inbox.withLock { inbox -> Bool in
                    if inbox.hasWork { return true }
                    self.waker.willWait()
                    return false
                }
                let timeout = hasWork ? 0 : self.pollTimeout(now: now, nextDeadline: nextDeadline)
                let ready = poll(&descriptors, 2, timeout)
                if !hasWork { self.waker.stoppedWaiting() }
                if ready < 0 {
                    if errno == EINTR { continue }
                    return HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: true, detail: "poll failed: errno \(errno)")
                }
                if descriptors[1].revents != 0 { self.waker.drain() }
                let socketEvents = descriptors[0].revents
                if socketEvents & Int16(POLLOUT) != 0 { try self.channel.flush() }
                if socketEvents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                    self.incoming.removeAll(keepingCapacity: true)
                    let open = try self.channel.read(into: &self.incoming)
                    if !self.incoming.isEmpty {
                        if !self.peerSpoke, self.configuration.tls == nil, PeerProtocol.looksLikeTLS(self.incoming) {
                            // A cleartext preface met a TLS server, which answered with a record
                            // (an alert): no request was read as HTTP/2.
                            return HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: PeerProtocol.answeredWithTLS, permanent: true)
                        }
                        self.peerSpoke = true
                        self.lastActivity = monotonicNanoseconds()
                        try self.incoming.withUnsafeBytes { try self.core.receive($0) }
                    }
                    if !open {
                        return self.endedError(detail: "the peer closed the connection")
                    }
                }
            } catch let error as NGHTTP2SessionError {
                return HTTP2ClientError(.protocolError, mayHaveBeenProcessed: true, detail: "\(error)")
            } catch {
                return self.endedError(detail: "\(error)")
            }
        }
    }

    /// Runs the jobs waiting for this thread, then moves requests, cancellations and commands from
    /// the inbox into the core: the requests those jobs made go out in this same pass.
    private func takeInbox() throws -> HTTP2ClientError? {
        // Swap the inbox's arrays with this thread's empty ones: no copy and no allocation per wake-up.
        if self.inbox.withLock({ inbox in
            swap(&inbox.jobs, &self.takenJobs)
            return !self.takenJobs.isEmpty
        }) {
            for (job, executor) in self.takenJobs { job.runSynchronously(on: executor) }
            self.takenJobs.removeAll(keepingCapacity: true)
        }
        let command = self.inbox.withLock { inbox -> Inbox.Command? in
            swap(&inbox.requests, &self.takenRequests)
            swap(&inbox.cancellations, &self.takenCancellations)
            let command = inbox.command
            if case .close = command {} else { inbox.command = nil }
            return command
        }
        // Moved out one by one, in order, each left nil in place: no copy of a request.
        for index in self.takenRequests.indices {
            if let request = self.takenRequests[index].take() { self.core.enqueue(request) }
        }
        for id in self.takenCancellations {
            self.core.cancel(requestID: id, error: HTTP2ClientError(.cancelled, mayHaveBeenProcessed: true, detail: "the calling task was cancelled"))
        }
        // Unique again once the loops are done, so clearing keeps the capacity for the next swap.
        self.takenRequests.removeAll(keepingCapacity: true)
        self.takenCancellations.removeAll(keepingCapacity: true)
        switch command {
        case .close?:
            return HTTP2ClientError(.shutdown, mayHaveBeenProcessed: true, detail: "the connection was closed")
        case .shutdown(let deadline)?:
            if self.shutdownDeadline == nil {
                self.shutdownDeadline = deadline
                self.core.beginShutdown()
            }
        case nil:
            break
        }
        return nil
    }

    private func flushSession() throws {
        try self.channel.flushFrames { try self.core.drainOutput(into: &$0) }
    }

    /// Sends a PING after a silence of `pingInterval` (idle) or `stallInterval` (requests out); a
    /// PING unanswered for `pingTimeout` ends the connection.
    private func checkPing(now: UInt64) -> HTTP2ClientError? {
        if let sentAt = self.pingSentAt {
            if now &- sentAt >= UInt64(max(0, HTTP2Connection.nanoseconds(self.configuration.pingTimeout))) {
                return HTTP2ClientError(
                    .peerUnresponsive, mayHaveBeenProcessed: true,
                    detail: "no PING acknowledgement within \(self.configuration.pingTimeout)"
                )
            }
            return nil
        }
        if let interval = self.silenceBeforePing, now &- self.lastActivity >= interval {
            self.pingPayload &+= 1
            self.pingSentAt = now
            self.core.sendPing(payload: self.pingPayload)
        }
        return nil
    }

    /// How long a silence is allowed now before a PING: shorter while requests wait for answers.
    private var silenceBeforePing: UInt64? {
        let idle = self.configuration.pingInterval.map { UInt64(max(0, HTTP2Connection.nanoseconds($0))) }
        guard self.hadOpenStreams, let stall = self.configuration.stallInterval else { return idle }
        let busy = UInt64(max(0, HTTP2Connection.nanoseconds(stall)))
        return min(busy, idle ?? busy)
    }

    private func pollTimeout(now: UInt64, nextDeadline: UInt64?) -> Int32 {
        var wake: UInt64 = now &+ 60_000_000_000
        if let nextDeadline { wake = min(wake, nextDeadline) }
        if let shutdownDeadline { wake = min(wake, shutdownDeadline) }
        if let sentAt = self.pingSentAt {
            wake = min(wake, sentAt &+ UInt64(max(0, HTTP2Connection.nanoseconds(self.configuration.pingTimeout))))
        } else if let interval = self.silenceBeforePing {
            wake = min(wake, self.lastActivity &+ interval)
        }
        return wake <= now ? 0 : Int32(clamping: (wake - now + 999_999) / 1_000_000)
    }

    private func endedError(detail: String) -> HTTP2ClientError {
        guard self.peerSpoke else {
            // The server's preface (its SETTINGS) is the first frame it sends (RFC 9113, section
            // 3.4), and nothing came: the HTTP/2 connection was never established and no request
            // on it was processed.
            return HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(detail) before its HTTP/2 preface")
        }
        if let goAway = self.core.goAway, goAway.receivedFromPeer {
            return HTTP2ClientError(
                .goingAway, mayHaveBeenProcessed: true, http2ErrorCode: goAway.errorCode,
                detail: String(decoding: goAway.debugData, as: UTF8.self)
            )
        }
        return HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: true, detail: detail)
    }

    /// Publishes the load for pickers (atomics: no lock on every pass) and, once, the GOAWAY state.
    private func publishState() {
        self.gauges.outstanding.store(self.core.openStreamCount + self.core.queuedCount, ordering: .relaxed)
        let limit = self.core.peerMaxConcurrentStreams
        if limit != self.publishedLimit {
            self.publishedLimit = limit
            self.gauges.peerMaxConcurrentStreams.store(limit, ordering: .relaxed)
            self.events?(.maximumConcurrentStreams(Int(limit)))
        }
        self.publishGoAway()
    }

    /// Publishes a GOAWAY from the peer, once: pickers stop choosing the connection and its owner
    /// hears of it. Called by the core as the frame arrives, before the requests it ends fail (so a
    /// push replayed at once does not come back here), and after each pass.
    private func publishGoAway() {
        guard let goAway = self.core.goAway, goAway.receivedFromPeer, self.gauges.isActive.load(ordering: .relaxed) else { return }
        self.inbox.withLock { inbox in
            if case .active = inbox.state {
                inbox.state = .goingAway(lastStreamID: goAway.lastStreamID, errorCode: goAway.errorCode, debugData: goAway.debugData)
            }
        }
        self.gauges.isActive.store(false, ordering: .releasing)
        self.events?(.goAway(errorCode: goAway.errorCode))
    }

    /// Ends the connection: fails what is left, publishes the closed state, resumes shutdown waiters.
    private func finish(with error: HTTP2ClientError) {
        // Pickers stop choosing it first; requests that still arrive fail below or in `submit`.
        self.gauges.isActive.store(false, ordering: .releasing)
        self.gauges.outstanding.store(0, ordering: .relaxed)
        // Requests that arrived after the last pass fail too; nothing is left waiting.
        let (requests, waiters, jobs) = self.inbox.withLock { inbox in
            inbox.state = .closed(error)
            let jobs = inbox.jobs
            inbox.jobs.removeAll()
            defer {
                inbox.requests.removeAll()
                inbox.cancellations.removeAll()
                inbox.closeWaiters.removeAll()
            }
            return (inbox.requests, inbox.closeWaiters, jobs)
        }
        // The owner hears before any request fails: a push failed below is sent again at once, and
        // its owner (a pool) must no longer offer this connection when it picks one.
        self.events?(.closed(error))
        self.events = nil
        // Jobs that were waiting for this thread run on the global executor from now on.
        for (job, _) in jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        if let core = self.core {
            core.fail(with: error)
            if let channel = self.channel {
                // Best effort: tell the peer, without waiting for it.
                channel.tls?.shutdown()
                try? self.flushSession()
            }
        }
        for case let request? in requests {
            var failure = error
            failure.mayHaveBeenProcessed = false
            request.completion(.failure(failure))
        }
        self.channel = nil
        self.core = nil
        for waiter in waiters { waiter() }
    }
}
