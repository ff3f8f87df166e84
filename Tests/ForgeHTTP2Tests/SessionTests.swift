@testable import ForgeHTTP2
import Testing

@Suite("HTTP/2 sessions in memory")
struct SessionTests {
    @Test("A request and its response, headers and body as given")
    func roundTrip() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { request in
            HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "ID-1"), HTTP2HeaderField("x-echo", request.path)],
                          body: request.body)
        }
        let id = pair.send(request(headers: [HTTP2HeaderField("apns-topic", "com.example"), HTTP2HeaderField("apns-push-type", "alert")]))
        try pair.pump()
        let response = try #require(try pair.results[id]?.get())
        #expect(response.status == 200)
        #expect(response[header: "apns-id"] == "ID-1")
        #expect(response.body == Array("{}".utf8))
        let received = try #require(pair.received.first)
        #expect(received.method == "POST")
        #expect(received.path == "/3/device/abc")
        #expect(received.authority == "localhost")
        #expect(received[header: "apns-topic"] == "com.example")
        #expect(received[header: "apns-push-type"] == "alert")
        // :path goes out as a never-indexed literal; other headers as given.
        #expect(received.neverIndexedPseudoHeaders == [":path"])
        #expect(received.headers.allSatisfy { $0.indexing == .indexable })
    }

    @Test("A header marked never-indexed arrives as one")
    func neverIndexedHeader() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { _ in HTTP2Response(status: 200) }
        pair.send(request(headers: [HTTP2HeaderField("authorization", "bearer x", indexing: .neverIndexed), HTTP2HeaderField("apns-topic", "t")]))
        try pair.pump()
        let received = try #require(pair.received.first)
        #expect(received.headers.map(\.indexing) == [.neverIndexed, .indexable])
    }

    @Test("Large bodies both ways go through flow control", arguments: [0, 1, 16_384, 65_535, 65_536, 300_000])
    func largeBodies(_ size: Int) throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { request in HTTP2Response(status: 200, body: request.body.reversed()) }
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let id = pair.send(HTTP2Request(authority: "localhost", path: "/big", body: body))
        try pair.pump()
        let response = try #require(try pair.results[id]?.get())
        #expect(pair.received.first?.body == body)
        #expect(response.body == body.reversed())
    }

    @Test("The peer's stream limit is obeyed at every moment: 1, then 1000, then 1")
    func streamLimitDance() throws {
        let pair = try InMemoryPair(serverSettings: HTTP2Settings(maxConcurrentStreams: 1))
        for _ in 0..<50 { pair.send(request()) }
        try pair.pump()
        #expect(pair.server.awaitingResponse.count == 1)
        #expect(pair.client.queuedCount == 49)

        // Answer one at a time: never more than one open.
        for _ in 0..<5 {
            let streamID = try #require(pair.server.awaitingResponse.first)
            pair.server.respond(to: streamID, with: HTTP2Response(status: 200))
            try pair.pump()
            #expect(pair.server.awaitingResponse.count == 1)
        }
        #expect(pair.maxAwaiting == 1)

        // Raise the limit: everything queued starts.
        try pair.server.updateSettings(HTTP2Settings(maxConcurrentStreams: 1000))
        try pair.pump()
        #expect(pair.server.awaitingResponse.count == 45)
        #expect(pair.client.queuedCount == 0)

        // Drop it to 1 with 45 open: they finish, and no new stream starts until only 0 are open.
        try pair.server.updateSettings(HTTP2Settings(maxConcurrentStreams: 1))
        try pair.pump()
        for _ in 0..<10 { pair.send(request()) }
        try pair.pump()
        #expect(pair.server.awaitingResponse.count == 45)
        #expect(pair.client.queuedCount == 10)
        pair.maxAwaiting = 0
        while let streamID = pair.server.awaitingResponse.min() {
            pair.server.respond(to: streamID, with: HTTP2Response(status: 200))
            try pair.pump()
        }
        #expect(pair.maxAwaiting <= 45)
        #expect(pair.results.count == 60)
        #expect(pair.results.values.allSatisfy { (try? $0.get().status) == 200 })
        #expect(pair.duplicateCompletions == 0)
    }

    @Test("GOAWAY: streams at or below last-stream-id complete, those above fail as not processed")
    func goAwayBothSides() throws {
        let pair = try InMemoryPair()
        let ids = (0..<10).map { _ in pair.send(request()) }  // streams 1, 3, …, 19
        try pair.pump()
        #expect(pair.server.awaitingResponse.count == 10)
        try pair.server.goAway(lastStreamID: 9, errorCode: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        try pair.pump()
        for streamID in pair.server.awaitingResponse.sorted() where streamID <= 9 {
            pair.server.respond(to: streamID, with: HTTP2Response(status: 200))
        }
        try pair.pump()
        for (index, id) in ids.enumerated() {
            let result = try #require(pair.results[id])
            if index < 5 {
                #expect((try? result.get().status) == 200)
            } else {
                guard case .failure(let error) = result else {
                    Issue.record("stream \(index * 2 + 1) succeeded")
                    continue
                }
                #expect(error.code == .goingAway)
                #expect(error.isSafeToRetry)
                #expect(error.detail == #"{"reason":"Shutdown"}"#)
            }
        }
        // Nothing new starts on a connection that is going away.
        let late = pair.send(request())
        #expect(throws: HTTP2ClientError.self) { try pair.results[late]?.get() }
        #expect((try? pair.results[late]?.get()) == nil)
        #expect(pair.client.goAway?.lastStreamID == 9)
        #expect(pair.duplicateCompletions == 0)
    }

    @Test("Queued requests fail as not processed when GOAWAY arrives")
    func goAwayQueued() throws {
        let pair = try InMemoryPair(serverSettings: HTTP2Settings(maxConcurrentStreams: 1))
        let ids = (0..<5).map { _ in pair.send(request()) }
        try pair.pump()
        try pair.server.goAway(errorCode: .noError, debugData: [])
        try pair.pump()
        let queued = ids.dropFirst().compactMap { pair.results[$0] }
        #expect(queued.count == 4)
        for result in queued {
            guard case .failure(let error) = result else { Issue.record("succeeded"); continue }
            #expect(error.code == .goingAway && !error.mayHaveBeenProcessed)
        }
    }

    @Test("RST_STREAM from the peer: REFUSED_STREAM is safe to retry, others may have been processed")
    func resets() throws {
        let pair = try InMemoryPair()
        let refused = pair.send(request())
        let internalReset = pair.send(request())
        try pair.pump()
        let streams = pair.server.awaitingResponse.sorted()
        pair.server.reset(streamID: streams[0], errorCode: .refusedStream)
        pair.server.reset(streamID: streams[1], errorCode: .internalError)
        try pair.pump()
        guard case .failure(let first) = pair.results[refused], case .failure(let second) = pair.results[internalReset] else {
            Issue.record("expected two failures")
            return
        }
        #expect(first.code == .refusedStream && first.isSafeToRetry)
        #expect(second.code == .streamReset && second.mayHaveBeenProcessed && second.http2ErrorCode == .internalError)
    }

    @Test("Cancelling: a queued request never reaches the peer, an open one is reset with CANCEL")
    func cancellation() throws {
        let pair = try InMemoryPair(serverSettings: HTTP2Settings(maxConcurrentStreams: 1))
        let open = pair.send(request("/open"))
        let queued = pair.send(request("/queued"))
        try pair.pump()
        let cancelled = HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false)
        pair.client.cancel(requestID: queued, error: cancelled)
        pair.client.cancel(requestID: open, error: cancelled)
        try pair.pump()
        #expect(pair.received.map(\.path) == ["/open"])
        #expect(pair.server.awaitingResponse.isEmpty)  // the server saw the reset
        #expect(pair.client.openStreamCount == 0 && pair.client.queuedCount == 0)
        #expect(pair.results.count == 2)
        // A late response to the reset stream is ignored; the next request still works.
        pair.autoRespond = { _ in HTTP2Response(status: 200) }
        let next = pair.send(request("/next"))
        try pair.pump()
        #expect((try? pair.results[next]?.get().status) == 200)
        #expect(pair.duplicateCompletions == 0)
    }

    @Test("Deadlines fail queued and open requests; the earliest remaining deadline is reported")
    func deadlines() throws {
        let pair = try InMemoryPair(serverSettings: HTTP2Settings(maxConcurrentStreams: 1))
        let open = pair.send(request(), deadline: 100)
        let queued = pair.send(request(), deadline: 100)
        let later = pair.send(request(), deadline: 500)
        try pair.pump()
        #expect(pair.client.expireDeadlines(now: 99) == 100)
        #expect(pair.client.expireDeadlines(now: 100) == 500)
        try pair.pump()
        guard case .failure(let openError) = pair.results[open], case .failure(let queuedError) = pair.results[queued] else {
            Issue.record("expected failures")
            return
        }
        #expect(openError.code == .deadlineExceeded && openError.mayHaveBeenProcessed)
        #expect(queuedError.code == .deadlineExceeded && !queuedError.mayHaveBeenProcessed)
        #expect(pair.results[later] == nil)
        #expect(pair.server.awaitingResponse.count == 1)  // `later` took the freed stream
    }

    @Test("checked() refuses what sending would refuse; a checked field sent as is; changing it undoes the check", arguments: [
        HTTP2HeaderField("x-bad", "a\r\nb"), HTTP2HeaderField("Upper", "v"), HTTP2HeaderField("connection", "close"),
        HTTP2HeaderField("", "v"), HTTP2HeaderField("x-nul", "a\u{0}b"),
    ])
    func checkedHeaders(_ field: HTTP2HeaderField) throws {
        #expect(throws: HTTP2ClientError.self) { try field.checked() }
        var good = try HTTP2HeaderField("apns-topic", "com.example.app").checked()
        #expect(good.isChecked && good == HTTP2HeaderField("apns-topic", "com.example.app"))
        let pair = try InMemoryPair()
        let accepted = pair.send(request(headers: [good]))
        // A checked field whose value is then changed to a bad one is checked again when sent.
        good.value = "a\r\nb"
        #expect(!good.isChecked)
        let refused = pair.send(request(headers: [good]))
        try pair.pump()
        guard case .failure(let error) = pair.results[refused] else { Issue.record("accepted"); return }
        #expect(error.code == .invalidRequest)
        #expect(pair.results[accepted] == nil && pair.server.awaitingResponse.count == 1)
    }

    @Test("Invalid headers are refused before anything is sent", arguments: [
        HTTP2HeaderField("x-bad", "a\r\nb"), HTTP2HeaderField("Upper", "v"), HTTP2HeaderField("connection", "close"),
        HTTP2HeaderField("", "v"),
    ])
    func invalidHeaders(_ field: HTTP2HeaderField) throws {
        let pair = try InMemoryPair()
        let id = pair.send(request(headers: [field]))
        try pair.pump()
        guard case .failure(let error) = pair.results[id] else { Issue.record("accepted"); return }
        #expect(error.code == .invalidRequest && !error.mayHaveBeenProcessed)
        #expect(pair.received.isEmpty)
    }

    @Test("Bodies of later requests on the same session arrive whole and their own (body buffers are reused)")
    func reusedBodySources() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { request in HTTP2Response(status: 200, body: request.body) }
        for wave in 0..<3 {
            let bodies = (0..<20).map { index in Array(repeating: UInt8(truncatingIfNeeded: wave * 20 + index), count: 1 + (index * 997) % 40_000) }
            let ids = bodies.map { pair.send(HTTP2Request(authority: "localhost", path: "/3/device/abc", body: $0)) }
            try pair.pump()
            for (id, body) in zip(ids, bodies) {
                #expect(try pair.results[id]?.get().body == body)
            }
        }
        #expect(pair.duplicateCompletions == 0)
    }

    /// All of a wave's HEADERS are packed after every request of it was submitted (nghttp2 must
    /// own its copy of each field by then), with values of many sizes, with and without a body.
    @Test("Header values of many requests submitted before any is packed arrive whole and their own")
    func headersReadInPlace() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { request in
            HTTP2Response(status: 200, body: Array((request.headers.first { $0.name == "x-echo" }?.value ?? "").utf8))
        }
        for wave in 0..<3 {
            let values = (0..<40).map { index in
                String(repeating: String(UnicodeScalar(UInt8(97 + (wave * 40 + index) % 26))), count: 1 + (index * 389 + wave * 1_000) % 3_000)
            }
            let ids = values.enumerated().map { index, value in
                pair.send(HTTP2Request(
                    method: index % 5 == 0 ? "GET" : "POST", authority: "localhost", path: "/echo/\(wave)/\(index)",
                    headers: [HTTP2HeaderField("x-echo", value, indexing: index % 2 == 0 ? .neverIndexed : .indexable)],
                    body: index % 5 == 0 ? [] : Array("{}".utf8)
                ))
            }
            try pair.pump()
            for (id, value) in zip(ids, values) {
                #expect(String(decoding: try #require(pair.results[id]).get().body, as: UTF8.self) == value)
            }
        }
        // Each once (requests without a body are complete at their HEADERS, so they come first).
        let paths = pair.received.map(\.path)
        #expect(paths.sorted() == (0..<3).flatMap { wave in (0..<40).map { "/echo/\(wave)/\($0)" } }.sorted())
        #expect(pair.duplicateCompletions == 0)
    }

    @Test("Requests made of one shared Parts go out whole: pseudo-headers, each its own path, the headers in order, its own apns-id")
    func sharedParts() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { _ in HTTP2Response(status: 200) }
        let parts = HTTP2Request.Parts(
            method: "POST", scheme: "https", authority: "api.push.apple.com", pathPrefix: "/3/device/",
            headers: [
                try HTTP2HeaderField("authorization", "bearer abc").checked(), HTTP2HeaderField("apns-topic", "com.example.app"),
                HTTP2HeaderField("apns-id", "11111111-2222-3333-4444-555555555555", indexing: .neverIndexed),
            ],
            body: Array("{}".utf8)
        )
        #expect(parts.invalid == nil)
        var ids: [UInt64] = []
        for token in ["aa", "bb", "cc"] {
            var request = HTTP2Request(parts: parts, pathSuffix: token)
            if token == "cc" { request.pushHeader = HTTP2UUIDHeader("apns-id", bytes: (0xde, 0xad, 0xbe, 0xef, 0, 1, 0, 2, 0, 3, 0, 4, 5, 6, 7, 8)) }
            #expect(request.parts === parts)
            ids.append(pair.send(request))
        }
        try pair.pump()
        for id in ids { #expect(try pair.results[id]?.get().status == 200) }
        #expect(pair.received.map(\.path) == ["/3/device/aa", "/3/device/bb", "/3/device/cc"])
        for received in pair.received {
            #expect(received.method == "POST" && received.scheme == "https" && received.authority == "api.push.apple.com")
            #expect(received.body == Array("{}".utf8))
        }
        let shared = ["authorization: bearer abc", "apns-topic: com.example.app", "apns-id: 11111111-2222-3333-4444-555555555555"]
        #expect(pair.received[0].headers.map(\.description) == shared)
        #expect(pair.received[2].headers.map(\.description) == shared + ["apns-id: deadbeef-0001-0002-0003-000405060708"])
    }

    @Test("Parts with a field a peer refuses say why, and every request made of them fails unsent")
    func invalidParts() throws {
        let parts = HTTP2Request.Parts(
            method: "POST", scheme: "https", authority: "local\r\nhost", pathPrefix: "/3/device/", headers: [], body: []
        )
        #expect(parts.invalid?.contains(":authority") == true)
        let pair = try InMemoryPair()
        let ids = (0..<2).map { _ in pair.send(HTTP2Request(parts: parts, pathSuffix: "aa")) }
        try pair.pump()
        for id in ids {
            guard case .failure(let error) = pair.results[id] else { Issue.record("sent"); continue }
            #expect(error.code == .invalidRequest && !error.mayHaveBeenProcessed)
        }
        #expect(pair.received.isEmpty)
    }

    @Test("A path given in two parts goes out joined; a bad byte in either part is refused before sending")
    func pathInTwoParts() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { _ in HTTP2Response(status: 200) }
        let split = HTTP2Request(authority: "localhost", pathPrefix: "/3/device/", pathSuffix: "abc", body: Array("{}".utf8))
        #expect(split.path == "/3/device/abc")
        #expect(split == HTTP2Request(authority: "localhost", path: "/3/device/abc", body: Array("{}".utf8)))
        #expect(split.hashValue == HTTP2Request(authority: "localhost", path: "/3/device/abc", body: Array("{}".utf8)).hashValue)
        let good = pair.send(split)
        let badSuffix = pair.send(HTTP2Request(authority: "localhost", pathPrefix: "/3/device/", pathSuffix: "a c", body: [1]))
        let badPrefix = pair.send(HTTP2Request(authority: "localhost", pathPrefix: "/3/de\u{7f}vice/", pathSuffix: "abc", body: [1]))
        let empty = pair.send(HTTP2Request(authority: "localhost", pathPrefix: "", pathSuffix: "", body: [1]))
        try pair.pump()
        #expect(try pair.results[good]?.get().status == 200)
        for id in [badSuffix, badPrefix, empty] {
            guard case .failure(let error) = pair.results[id] else { Issue.record("request \(id) was sent"); continue }
            #expect(error.code == .invalidRequest && !error.mayHaveBeenProcessed)
        }
        #expect(pair.received.map(\.path) == ["/3/device/abc"])
        var renamed = split
        renamed.path = "/3/device/def"
        #expect(renamed.path == "/3/device/def")
    }

    @Test("A failed connection fails every request exactly once")
    func failAll() throws {
        let pair = try InMemoryPair(serverSettings: HTTP2Settings(maxConcurrentStreams: 2))
        let ids = (0..<5).map { _ in pair.send(request()) }
        try pair.pump()
        pair.client.fail(with: HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: true))
        #expect(ids.allSatisfy { pair.results[$0] != nil })
        let processed = ids.compactMap { id -> Bool? in
            if case .failure(let error) = pair.results[id] { return error.mayHaveBeenProcessed }
            return nil
        }
        #expect(processed == [true, true, false, false, false])
        let late = pair.send(request())
        #expect(pair.results[late] != nil)
        #expect(pair.duplicateCompletions == 0)
    }

    @Test("PING is answered, or not, as the server chooses")
    func ping() throws {
        for answers in [true, false] {
            let pair = try InMemoryPair(answersPings: answers)
            var acknowledged: UInt64?
            pair.client.onPingAck = { acknowledged = $0 }
            pair.client.sendPing(payload: 0x0102_0304_0506_0708)
            try pair.pump()
            #expect(acknowledged == (answers ? 0x0102_0304_0506_0708 : nil))
        }
    }
}

@Suite("Response headers kept as bytes")
struct RawHeaderTests {
    @Test("Received headers read back in order, by name, and compare equal to built ones")
    func rawHeaders() throws {
        let pair = try InMemoryPair()
        let fields = [
            HTTP2HeaderField("apns-id", "6F2A3B4C-0000-4000-8000-000000000001"), HTTP2HeaderField("x-empty", ""),
            HTTP2HeaderField("x-long", String(repeating: "v", count: 4_000)), HTTP2HeaderField("apns-id", "second"),
        ]
        pair.autoRespond = { _ in HTTP2Response(status: 200, headers: fields, body: [1, 2]) }
        let id = pair.send(request())
        try pair.pump()
        let response = try #require(try pair.results[id]?.get())
        #expect(response.headers == fields)
        #expect(response[header: "apns-id"] == "6F2A3B4C-0000-4000-8000-000000000001")
        #expect(response[header: "x-empty"] == "")
        #expect(response[header: "missing"] == nil)
        #expect(response == HTTP2Response(status: 200, headers: fields, body: [1, 2]))
        var changed = response
        changed.headers = [HTTP2HeaderField("a", "b")]
        #expect(changed[header: "a"] == "b" && changed[header: "apns-id"] == nil)
    }

    @Test("A short list stays inline up to its capacity and a longer one moves to an array; both read back the same")
    func inlineAndSpilled() {
        // apns-id takes 6 + 7 + 36 bytes; "x-value" 6 + 7 + the value's length.
        let full = RawHeaders.inlineCapacity - (6 + 7 + 36) - (6 + 7)
        for length in [0, 1, full, full + 1, 500] {
            let fields = [
                HTTP2HeaderField("apns-id", String(repeating: "a", count: 36)), HTTP2HeaderField("x-value", String(repeating: "v", count: length)),
            ]
            var raw = RawHeaders()
            for field in fields {
                var name = field.name, value = field.value
                name.withUTF8 { name in value.withUTF8 { value in raw.append(name: name, value: value) } }
            }
            #expect(raw.isInline == (length <= full), "length \(length)")
            #expect(raw.fields() == fields)
            #expect(raw.value(of: "x-value") == fields[1].value && raw.value(of: "apns-id") == fields[0].value)
            #expect(raw.value(of: "x-valu") == nil)
        }
    }

    @Test("A response the server cannot send (a 70 KB header) resets the stream instead of hanging the client")
    func unsendableResponse() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { _ in HTTP2Response(status: 200, headers: [HTTP2HeaderField("x-long", String(repeating: "v", count: 70_000))]) }
        let id = pair.send(request())
        try pair.pump()
        guard case .failure(let error) = pair.results[id] else {
            Issue.record("no result: \(String(describing: pair.results[id]))")
            return
        }
        #expect(error.code == .streamReset && error.http2ErrorCode == .internalError)
    }
}
