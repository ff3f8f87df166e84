import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeLoopback
import ForgeTestSupport
import InMemoryTracing
import Testing
import Tracing

/// The client's spans, caught by swift-distributed-tracing's `InMemoryTracer` passed in the
/// configuration (no global bootstrap, so suites do not share a tracer).
@Suite("Tracing: a span per send and per bulk send, with APNs' attributes", .timeLimit(.minutes(1)))
struct TracingTests {
    /// A token the local server knows, and one it answers 400 BadDeviceToken for.
    static let known = token(1)
    static let unknown = token(2)

    func loopback(tracer: InMemoryTracer) throws -> Loopback {
        let loopback = try Loopback.start(
            LocalAPNSConfiguration(acceptsUnknownTokens: false),
            tokens: [Self.known.hexString: LocalAPNSTokenRecord(bundleID: bundle, environment: .sandbox)]
        )
        var configuration = loopback.configuration
        configuration.tracer = tracer
        return Loopback(server: loopback.server, configuration: configuration)
    }

    @Test("An accepted send: one client span named 'APNs send' with push type, topic, apns-id, status 200; status unset")
    func acceptedSend() async throws {
        let tracer = InMemoryTracer()
        let loopback = try self.loopback(tracer: tracer)
        let result = try await withAPNSClient(configuration: loopback.configuration) { client in
            try await client.send(alert(), to: Self.known)
        }
        await loopback.server.shutdown()
        let spans = tracer.finishedSpans
        #expect(spans.count == 1)
        let span = try #require(spans.first)
        #expect(span.operationName == "APNs send")
        #expect(span.kind == .client)
        #expect(span.attributes["apns.push_type"]?.toSpanAttribute() == .string("alert"))
        #expect(span.attributes["apns.topic"]?.toSpanAttribute() == .string(bundle))
        #expect(span.attributes["apns.id"]?.toSpanAttribute() == .string(result.apnsID))
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(span.attributes["apns.attempts"]?.toSpanAttribute() == .int64(1))
        #expect(span.attributes["apns.may_have_been_delivered"]?.toSpanAttribute() == .bool(false))
        #expect(span.attributes["apns.reason"] == nil)
        #expect(span.status == nil)
        #expect(span.errors.isEmpty)
        Self.expectNoToken(span)
    }

    @Test("A 400 rejection: status 400, reason BadDeviceToken, the error recorded, span status error")
    func rejectedSend() async throws {
        let tracer = InMemoryTracer()
        let loopback = try self.loopback(tracer: tracer)
        let error = try await withAPNSClient(configuration: loopback.configuration) { client -> APNSError? in
            do {
                _ = try await client.send(alert(), to: Self.unknown)
                return nil
            } catch {
                return error as? APNSError
            }
        }
        await loopback.server.shutdown()
        let rejection = try #require(error)
        #expect(rejection.status == 400 && rejection.reason == .badDeviceToken)
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.operationName == "APNs send")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(400))
        #expect(span.attributes["apns.reason"]?.toSpanAttribute() == .string("BadDeviceToken"))
        #expect(span.attributes["apns.error.kind"]?.toSpanAttribute() == .string("rejected"))
        #expect(span.attributes["apns.id"]?.toSpanAttribute() == rejection.apnsID.map { SpanAttribute.string($0) })
        #expect(span.status == SpanStatus(code: .error, message: "BadDeviceToken"))
        #expect(span.errors.count == 1)
        #expect((span.errors.first?.error as? APNSError) == rejection)
        Self.expectNoToken(span)
    }

    @Test("A failure without an answer: error kind, attempts, no status code, span status error")
    func failedSend() async throws {
        let tracer = InMemoryTracer()
        var configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox, tracer: tracer
        )
        configuration.retry = APNSClient.RetryPolicy(attempts: 1)
        let client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { _ in
            throw APNSTransportError(.unreachable, isPermanent: true, detail: "no route to the test's APNs")
        })
        let error = try await withAPNSClient(client) { client -> APNSError? in
            do {
                _ = try await client.send(alert(), to: Self.known)
                return nil
            } catch {
                return error as? APNSError
            }
        }
        let failure = try #require(error)
        #expect(failure.kind == .unreachable)
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.operationName == "APNs send")
        #expect(span.attributes["apns.error.kind"]?.toSpanAttribute() == .string("unreachable"))
        #expect(span.attributes["apns.attempts"]?.toSpanAttribute() == .int64(Int64(failure.attempts)))
        #expect(span.attributes["apns.may_have_been_delivered"]?.toSpanAttribute() == .bool(false))
        #expect(span.attributes["http.response.status_code"] == nil)
        #expect(span.status == SpanStatus(code: .error, message: "unreachable"))
        #expect(span.errors.count == 1)
        Self.expectNoToken(span)
    }

    @Test("A bulk send makes one span, a child of the caller's, with its counts; no span per push")
    func bulkSpan() async throws {
        let tracer = InMemoryTracer()
        let loopback = try self.loopback(tracer: tracer)
        let tokens = [Self.known, Self.unknown, Self.known, Self.unknown, Self.known]
        let summary = try await tracer.withSpan("caller") { _ in
            try await withAPNSClient(configuration: loopback.configuration) { client in
                try await client.sendBulk(alert(), to: tokens).summary()
            }
        }
        await loopback.server.shutdown()
        #expect(summary.accepted == 3 && summary.rejectedCount == 2)
        let spans = tracer.finishedSpans
        #expect(spans.map(\.operationName).sorted() == ["APNs bulk", "caller"])
        let bulk = try #require(spans.first { $0.operationName == "APNs bulk" })
        let caller = try #require(spans.first { $0.operationName == "caller" })
        #expect(bulk.parentSpanID == caller.spanID)
        #expect(bulk.traceID == caller.traceID)
        #expect(bulk.kind == .client)
        #expect(bulk.attributes["apns.push_type"]?.toSpanAttribute() == .string("alert"))
        #expect(bulk.attributes["apns.topic"]?.toSpanAttribute() == .string(bundle))
        #expect(bulk.attributes["apns.bulk.total"]?.toSpanAttribute() == .int64(5))
        #expect(bulk.attributes["apns.bulk.accepted"]?.toSpanAttribute() == .int64(3))
        #expect(bulk.attributes["apns.bulk.rejected"]?.toSpanAttribute() == .int64(2))
        #expect(bulk.attributes["apns.bulk.failed"]?.toSpanAttribute() == .int64(0))
        #expect(bulk.attributes["apns.bulk.not_sent"]?.toSpanAttribute() == .int64(0))
        #expect(bulk.status == nil, "rejected tokens are a bulk send's everyday result, not an error of the bulk")
        Self.expectNoToken(bulk)
    }

    @Test("Without a tracer in the configuration the client takes InstrumentationSystem.tracer when it is made")
    func defaultTracer() async throws {
        let tracer = InMemoryTracer()
        let loopback = try Loopback.start()
        #expect(loopback.configuration.tracer == nil)
        // `withTracer` binds the tracer InstrumentationSystem.tracer returns, as a bootstrap would,
        // for this scope only: other suites running beside this one keep NoOpTracer.
        let client = try withTracer(tracer) { try APNSClient(configuration: loopback.configuration) }
        let result = try await withAPNSClient(client) { client in
            try await client.send(alert(), to: Self.known)
        }
        await loopback.server.shutdown()
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.attributes["apns.id"]?.toSpanAttribute() == .string(result.apnsID))
    }

    /// No attribute value carries a device token (the test tokens' hex) or a provider token.
    static func expectNoToken(_ span: FinishedInMemorySpan) {
        var values: [String] = []
        span.attributes.forEach { _, value in values.append("\(value)") }
        for value in values {
            #expect(!value.contains(Self.known.hexString) && !value.contains(Self.unknown.hexString), "\(value)")
            #expect(!value.contains("eyJ"), "no JWT in \(value)")
        }
    }
}
