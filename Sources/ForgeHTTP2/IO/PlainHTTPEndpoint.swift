#if canImport(Glibc)
import Glibc
#endif
import Foundation
internal import ForgeSupport

/// A tiny blocking HTTP/1.1 responder on loopback, for a scrape endpoint such as `GET /metrics`:
/// one connection at a time, on a thread of its own, each answered once with `Connection: close`.
///
/// Not a web server: it reads the request head (up to 8 KiB, within 5 seconds), asks `handler` for
/// the answer to the method and path, writes it and closes. No keep-alive, no request bodies, no TLS.
package final class PlainHTTPEndpoint: Sendable {
    /// One answer: the status, its content type and the body.
    package struct Response: Sendable {
        package var status: Int
        package var contentType: String
        package var body: [UInt8]

        package init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    /// The port it listens on.
    package let port: Int
    private let waker: WakePipe
    private let state: LockedBox<State>

    private struct State {
        var stopping = false
        var done = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Binds `host:port` (0 picks a free port) and serves on a thread until ``shutdown()``.
    /// - Parameter handler: the answer to a request's method and path; called on the endpoint's thread.
    /// - Throws: a description of what failed (binding, an address that is not an IP literal).
    package init(host: String, port: Int, handler: @escaping @Sendable (_ method: String, _ path: String) -> Response) throws {
        let (listener, chosen) = try Socket.listen(host: host, port: port)
        self.port = chosen
        self.waker = try WakePipe()
        self.state = LockedBox(State())
        let loop = EndpointLoop(listener: listener, waker: self.waker, state: self.state, handler: handler)
        startIOThread(named: "forge-http:\(chosen)") { loop.run() }
    }

    /// Stops listening; returns once the thread has finished the connection it was answering.
    package func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = self.state.withLock { state -> Bool in
                state.stopping = true
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() } else { self.waker.wake() }
        }
    }

    /// The endpoint's thread: accepts, answers, closes.
    private final class EndpointLoop: @unchecked Sendable {
        // @unchecked Sendable: handed once to the endpoint's thread, which alone uses it.
        let listener: Socket
        let waker: WakePipe
        let state: LockedBox<State>
        let handler: @Sendable (String, String) -> Response

        init(listener: Socket, waker: WakePipe, state: LockedBox<State>, handler: @escaping @Sendable (String, String) -> Response) {
            self.listener = listener
            self.waker = waker
            self.state = state
            self.handler = handler
        }

        func run() {
            acceptConnections(on: self.listener, waker: self.waker, until: { self.state.withLock { $0.stopping } }) { socket in
                self.answer(socket)
            }
            let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.done = true
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Reads the request head, answers it and lets the socket close (its deinit).
        private func answer(_ socket: Socket) {
            let response: Response
            if let head = Self.readHead(socket) {
                let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
                let parts = requestLine.split(separator: " ")
                if parts.count == 3, parts[2].hasPrefix("HTTP/1.") {
                    response = self.handler(String(parts[0]), String(parts[1]))
                } else {
                    response = Response(status: 400, body: Array("bad request line\n".utf8))
                }
            } else {
                response = Response(status: 400, body: Array("no complete request head within 8 KiB and 5 seconds\n".utf8))
            }
            let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"][response.status] ?? "Status"
            let head = "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: \(response.contentType)\r\n"
                + "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
            Self.write(Array(head.utf8) + response.body, to: socket)
        }

        /// The request head up to its blank line, or `nil` after 8 KiB, 5 seconds or the peer's close.
        private static func readHead(_ socket: Socket) -> String? {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 2048)
            let deadline = monotonicNanoseconds() + 5_000_000_000
            while received.count < 8192 {
                if let end = received.firstRange(of: [13, 10, 13, 10]) {
                    return String(decoding: received[..<end.lowerBound], as: UTF8.self)
                }
                let now = monotonicNanoseconds()
                guard now < deadline, Self.wait(for: POLLIN, on: socket, milliseconds: Int32((deadline - now) / 1_000_000)) else {
                    return nil
                }
                let read: Int?
                do {
                    read = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0) }
                } catch {
                    return nil
                }
                guard let count = read else { continue }
                if count == 0 { return nil }
                received += buffer[..<count]
            }
            return nil
        }

        private static func write(_ bytes: [UInt8], to socket: Socket) {
            var offset = 0
            let deadline = monotonicNanoseconds() + 5_000_000_000
            while offset < bytes.count {
                guard let sent = try? bytes[offset...].withUnsafeBytes({ try socket.send($0) }) else { return }
                offset += sent
                let now = monotonicNanoseconds()
                if sent == 0 {
                    guard now < deadline, Self.wait(for: POLLOUT, on: socket, milliseconds: Int32((deadline - now) / 1_000_000)) else {
                        return
                    }
                }
            }
        }

        private static func wait(for event: Int32, on socket: Socket, milliseconds: Int32) -> Bool {
            var descriptor = pollfd(fd: socket.descriptor, events: Int16(event), revents: 0)
            while true {
                let ready = poll(&descriptor, 1, max(1, milliseconds))
                if ready < 0 && errno == EINTR { continue }
                return ready > 0
            }
        }
    }
}
