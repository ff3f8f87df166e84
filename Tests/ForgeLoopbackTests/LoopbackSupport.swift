import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import Foundation
import Testing

let exampleBundle = "com.example.forgepush"
let alertBody = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

func hexToken(_ byte: String) -> String { String(repeating: byte, count: 32) }

/// A device push over `connection`: topic, push type and extra headers.
func push(
    _ connection: HTTP2Connection, token: String = hexToken("ab"), topic: String = exampleBundle, pushType: String = "alert",
    headers: [(String, String)] = [], body: [UInt8] = alertBody
) async throws -> HTTP2Response {
    try await connection.send(HTTP2Request(
        authority: "localhost", path: "/3/device/" + token,
        headers: [HTTP2HeaderField("apns-topic", topic), HTTP2HeaderField("apns-push-type", pushType)]
            + headers.map { HTTP2HeaderField($0.0, $0.1) },
        body: body
    ))
}

/// The reason of an error response.
func reason(_ response: HTTP2Response) -> APNSErrorReason? {
    APNSErrorResponse(status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) }, body: response.body).reason
}

/// Waits (bounded) until the connection is no longer active and returns its GOAWAY debug data.
func awaitGoAway(_ connection: HTTP2Connection, within: Duration = .seconds(10)) async throws -> String? {
    let deadline = ContinuousClock.now + within
    while ContinuousClock.now < deadline {
        switch connection.state {
        case .active:
            try await Task.sleep(for: .milliseconds(5))
        case .goingAway(_, _, let debugData):
            return String(decoding: debugData, as: UTF8.self)
        case .closed(let error):
            return error.code == .goingAway ? error.detail : nil
        }
    }
    Issue.record("the connection stayed active")
    return nil
}

func h2cClient(_ server: LocalAPNSServer) async throws -> HTTP2Connection {
    try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
}
