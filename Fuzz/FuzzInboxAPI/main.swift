import Dispatch
import ForgeAPNsCore
import ForgeFuzzSupport
import ForgeLoopback

/// A request to the inbox API of `apnsctl serve --ui-port`: the input is `METHOD\nPATH\nQUERY`.
/// InboxAPI.swift is ForgeLoopbackUI's file, compiled here without the module's HTTP server.
enum InboxAPIFuzz {
    static let api = LocalAPNSInboxAPI(inbox: LocalAPNSInbox(capacity: 16), phones: LocalAPNSPhones())

    static func test(_ bytes: [UInt8]) {
        let fields = FuzzFields.split(bytes, into: 3)
        let method = FuzzFields.text(fields[0])
        let path = FuzzFields.text(fields[1])
        let query = fields[2].isEmpty ? nil : FuzzFields.text(fields[2])
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let response = await Self.api.respond(method: method, path: path, query: query)
            guard (100...599).contains(response.status) else { fatalError("status \(response.status)") }
            done.signal()
        }
        // `GET /api/v1/wait` waits up to 60 s for a push that never comes here: cancelled at once, it
        // still parses and checks everything first, then ends its wait.
        task.cancel()
        done.wait()
    }
}

@main
enum FuzzInboxAPI {
    static func main() { FuzzDriver.main(InboxAPIFuzz.test) }
}
