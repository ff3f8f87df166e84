internal import ForgeAPNsCore
internal import ForgeHTTP2

/// What the requests made of one notification share, in the form one route's transport sends:
/// made once where requests are prepared (``RouteTransport/prepare(_:authorization:)``: per batch
/// and provider token in a bulk send, per notification and provider token for `send`), then each
/// request adds only its own path suffix (a device token) and `apns-id`.
///
/// For the client's pool, the headers converted to HTTP/2 fields, checked, and laid out with the
/// method, authority, path prefix and body (`HTTP2Request.Parts`) once; the pool then only sends
/// HTTP/2 requests and keeps nothing of what they were made from. For another transport, nothing
/// to do: it takes ``APNSHTTPRequest``s through ``APNSTransport``.
///
/// A class: the sends that share one are handed it with one retain.
final class PreparedRequest: Sendable {
    /// The notification's shared parts (method, path prefix, headers, body) these were made from.
    let source: APNSHTTPRequest.Shared
    /// The `authorization` value (the provider token) the form was made with.
    let authorization: String?
    let form: Form

    init(source: APNSHTTPRequest.Shared, authorization: String?, form: Form) {
        self.source = source
        self.authorization = authorization
        self.form = form
    }

    enum Form: Sendable {
        /// The pool's: the HTTP/2 request parts, or why the headers cannot be sent.
        case http2(Result<HTTP2Request.Parts, HTTP2ClientError>)
        /// Another transport's: the requests as they are, the authorization beside them.
        case other
    }

    /// Whether `request` with `authorization` can be sent in this form: the same provider token, and
    /// the same method, path prefix, headers and body (compared by value; the requests of one
    /// prepared notification share one parts object, which makes the comparison one pointer's).
    func serves(_ request: APNSHTTPRequest, authorization: String?) -> Bool {
        self.authorization == authorization && self.source == request.shared
    }

    /// The HTTP/2 request of `request` (whose shared parts are these) on `parts`: its path suffix
    /// and its own `apns-id`, formatted from its UUID straight into the header block.
    static func http2Request(_ request: APNSHTTPRequest, parts: HTTP2Request.Parts) -> HTTP2Request {
        var http2 = HTTP2Request(parts: parts, pathSuffix: request.pathSuffix)
        http2.pushHeader = request.pushAPNSID.map { HTTP2UUIDHeader("apns-id", bytes: $0.bytes) }
        return http2
    }

    /// The HTTP/2 parts of `shared` for requests to `authority`: the authorization first, then the
    /// headers, each converted and checked once.
    static func http2Parts(
        _ shared: APNSHTTPRequest.Shared, authorization: String?, authority: String
    ) -> Result<HTTP2Request.Parts, HTTP2ClientError> {
        var fields: [HTTP2HeaderField] = []
        fields.reserveCapacity(shared.headers.count + 1)
        do throws(HTTP2ClientError) {
            if let authorization { fields.append(try HTTP2HeaderField("authorization", authorization).checked()) }
            for header in shared.headers { fields.append(try Self.field(header.name, header.value).checked()) }
        } catch {
            return .failure(error)
        }
        return .success(HTTP2Request.Parts(
            method: shared.method, scheme: "https", authority: authority, pathPrefix: shared.pathPrefix, headers: fields, body: shared.body
        ))
    }

    /// A header as HPACK sends it. An `apns-id` is new with every push: entered in the dynamic
    /// tables it would only push out the entries that do repeat (the provider token above all,
    /// which then travels again in full), at both ends, so it is sent without indexing.
    private static func field(_ name: String, _ value: String) -> HTTP2HeaderField {
        HTTP2HeaderField(name, value, indexing: name == "apns-id" ? .neverIndexed : .indexable)
    }
}
