import Foundation
internal import ForgeSupport

/// A handle on one accepted connection, for tests that need to make it misbehave.
///
/// The fault-injection hooks (an abrupt close, stalled reading, late PINGs, counters) are `package`:
/// for the local server and this package's tests, not for users of the product.
package final class HTTP2ServerConnection: Sendable {
    /// A number unique within the server.
    package let id: UInt64
    /// `address:port` of the client.
    package let peerAddress: String
    let inbox = LockedBox(ServerInbox())
    let waker: WakePipe
    private let server: LockedBox<HTTP2Server.Shared>

    /// - Throws: when no wake pipe can be made (out of file descriptors); the caller drops the connection.
    init(id: UInt64, peerAddress: String, server: LockedBox<HTTP2Server.Shared>) throws {
        self.id = id
        self.peerAddress = peerAddress
        self.server = server
        self.waker = try WakePipe()
    }

    /// Sends GOAWAY; `lastStreamID` defaults to the last stream processed.
    package func goAway(lastStreamID: Int32? = nil, errorCode: HTTP2ErrorCode = .noError, debugData: [UInt8] = []) {
        self.post { $0.commands.append(.goAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData)) }
    }

    /// Resets a stream.
    package func reset(streamID: Int32, errorCode: HTTP2ErrorCode) {
        self.post { $0.commands.append(.reset(streamID: streamID, errorCode: errorCode)) }
    }

    /// Announces new settings (for example `maxConcurrentStreams`).
    package func updateSettings(_ settings: HTTP2Settings) {
        self.post { $0.commands.append(.settings(settings)) }
    }

    /// Closes the TCP connection at once with a reset, as a crashed server would.
    package func closeAbruptly() {
        self.post { $0.commands.append(.abort) }
    }

    /// Stops (or resumes) reading from the socket: the client's writes back up.
    package func setReading(_ reading: Bool) {
        self.post { $0.commands.append(.reading(reading)) }
    }

    /// Acknowledges the PINGs received so far but not answered (with ``HTTP2ServerConfiguration/answersPings``
    /// off): a peer that answers late.
    package func answerPendingPings() {
        self.post { $0.commands.append(.answerPings) }
    }

    /// PINGs received and not answered yet (with ``HTTP2ServerConfiguration/answersPings`` off).
    package var unansweredPingCount: Int { self.inbox.withLock { $0.unansweredPings } }

    /// Whether the connection has ended.
    package var isClosed: Bool { self.inbox.withLock { $0.closed } }

    /// Requests seen on this connection so far.
    package var requestCount: Int { self.inbox.withLock { $0.requestCount } }

    func post(_ change: (inout ServerInbox) -> Void) {
        let wake = self.inbox.withLock { inbox -> Bool in
            change(&inbox)
            if inbox.wakeArmed { return false }
            inbox.wakeArmed = true
            return true
        }
        if wake { self.waker.wake() }
    }

    /// Called by the loop when the connection has ended.
    func didClose() {
        self.inbox.withLock { $0.closed = true }
        self.server.withLock { _ = $0.open.removeValue(forKey: self.id) }
        Self.resumeStopWaitersIfDone(self.server)
    }

    static func resumeStopWaitersIfDone(_ server: LockedBox<HTTP2Server.Shared>) {
        let waiters = server.withLock { shared -> [() -> Void] in
            guard shared.acceptLoopDone, shared.open.isEmpty else { return [] }
            defer { shared.stopWaiters.removeAll() }
            return shared.stopWaiters
        }
        for waiter in waiters { waiter() }
    }
}

struct ServerInbox {
    enum Command {
        case goAway(lastStreamID: Int32?, errorCode: HTTP2ErrorCode, debugData: [UInt8])
        case reset(streamID: Int32, errorCode: HTTP2ErrorCode)
        case settings(HTTP2Settings)
        case abort
        case reading(Bool)
        case answerPings
        case shutdown(debugData: [UInt8])
    }

    var responses: [(Int32, HTTP2Response)] = []
    /// Responses posted with a delay of their own: (due in monotonic nanoseconds, stream, response).
    var delayedResponses: [(UInt64, Int32, HTTP2Response)] = []
    var commands: [Command] = []
    var wakeArmed = false
    var closed = false
    var requestCount = 0
    var unansweredPings = 0
}
