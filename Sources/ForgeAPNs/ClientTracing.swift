internal import ForgeAPNsCore
internal import Tracing

/// The client's swift-distributed-tracing spans: one per send (`APNs send`, kind client) and one per
/// bulk send (`APNs bulk`), never one per push of a bulk. Attribute names are stable and carry no
/// device token and no provider token.
///
/// With no tracer bootstrapped the tracer is `NoOpTracer`: its span does not record, and nothing
/// below builds an attribute for it.
enum ClientTracing {
    /// The span name of a send to a device token or a broadcast channel.
    static let sendSpan = "APNs send"
    /// The span name of a request to the channel-management endpoint.
    static let channelSpan = "APNs channel request"
    /// The span name of a bulk send.
    static let bulkSpan = "APNs bulk"

    /// Attribute names, in APNs' own vocabulary (HTTP's status code as OpenTelemetry names it).
    enum Attribute {
        static let pushType = "apns.push_type"
        static let topic = "apns.topic"
        static let apnsID = "apns.id"
        static let status = "http.response.status_code"
        static let reason = "apns.reason"
        static let attempts = "apns.attempts"
        static let mayHaveBeenDelivered = "apns.may_have_been_delivered"
        static let errorKind = "apns.error.kind"
        static let total = "apns.bulk.total"
        static let accepted = "apns.bulk.accepted"
        static let rejected = "apns.bulk.rejected"
        static let failed = "apns.bulk.failed"
        static let notSent = "apns.bulk.not_sent"
    }

    /// Describes what is sent: the push type and the topic (`apns-topic`; channel requests have none).
    static func describe(pushType: APNSPushType, topic: String?, on span: any Span) {
        span.attributes[Attribute.pushType] = pushType.rawValue
        if let topic { span.attributes[Attribute.topic] = topic }
    }

    /// Records one send's final outcome: the accepted push's apns-id and status; or the rejection's
    /// status and reason, or the failure's kind, as an error with the span's status set to error.
    static func record(_ outcome: Result<APNSSendResult, APNSError>, on span: any Span) {
        switch outcome {
        case .success(let result):
            span.attributes[Attribute.apnsID] = result.apnsID
            span.attributes[Attribute.status] = result.response.status
            span.attributes[Attribute.attempts] = result.attempts
            span.attributes[Attribute.mayHaveBeenDelivered] = result.mayHaveBeenDeliveredTwice
        case .failure(let error):
            span.attributes[Attribute.errorKind] = error.kind.rawValue
            if let status = error.status { span.attributes[Attribute.status] = status }
            if let reason = error.reason { span.attributes[Attribute.reason] = reason.rawValue }
            if let apnsID = error.apnsID { span.attributes[Attribute.apnsID] = apnsID }
            span.attributes[Attribute.attempts] = error.attempts
            span.attributes[Attribute.mayHaveBeenDelivered] = error.mayHaveBeenDelivered
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.reason?.rawValue ?? error.kind.rawValue))
        }
    }

    /// Records a bulk send's counts at its end. Only a token source that failed marks the span as an
    /// error: rejected tokens are a bulk send's everyday result, and the counts say how many.
    static func record(_ summary: APNSBulkSummary, on span: any Span) {
        span.attributes[Attribute.total] = summary.total
        span.attributes[Attribute.accepted] = summary.accepted
        span.attributes[Attribute.rejected] = summary.rejectedCount
        span.attributes[Attribute.failed] = summary.failed
        span.attributes[Attribute.notSent] = summary.notSent
        span.attributes[Attribute.mayHaveBeenDelivered] = summary.mayHaveBeenDelivered
        if let inputError = summary.inputError { span.setStatus(SpanStatus(code: .error, message: inputError)) }
    }
}
