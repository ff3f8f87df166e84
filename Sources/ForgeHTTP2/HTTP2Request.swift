/// A request: pseudo-headers, headers and a body.
package struct HTTP2Request: Hashable, Sendable {
    /// What requests built alike share (a bulk send's, or the sends of one notification): one
    /// object, so that making a request retains one reference where separate fields retained six,
    /// and the I/O thread releases one.
    package private(set) var parts: Parts
    /// `:path` in two parts, sent one after the other: requests that share their parts differ in
    /// the suffix (a device token), so building each request joins no strings.
    package private(set) var pathSuffix: String
    /// One more header after ``headers``, a push's own (its `apns-id`): requests that share the rest
    /// share one array of them.
    package var pushHeader: HTTP2UUIDHeader?

    /// `:method`.
    package var method: String {
        get { self.parts.method }
        set { self.parts = self.parts.with(method: newValue) }
    }
    /// `:scheme`.
    package var scheme: String {
        get { self.parts.scheme }
        set { self.parts = self.parts.with(scheme: newValue) }
    }
    /// `:authority`.
    package var authority: String {
        get { self.parts.authority }
        set { self.parts = self.parts.with(authority: newValue) }
    }
    /// `:path` (sent never-indexed, as APNs asks).
    package var path: String {
        get { self.pathSuffix.isEmpty ? self.parts.pathPrefix : self.parts.pathPrefix + self.pathSuffix }
        set {
            self.parts = self.parts.with(pathPrefix: newValue)
            self.pathSuffix = ""
        }
    }
    /// The regular headers, in order.
    package var headers: [HTTP2HeaderField] {
        get { self.parts.headers }
        set { self.parts = self.parts.with(headers: newValue) }
    }
    /// The body.
    package var body: [UInt8] {
        get { self.parts.body }
        set { self.parts = self.parts.with(body: newValue) }
    }

    /// Creates a request.
    package init(
        method: String = "POST",
        scheme: String = "https",
        authority: String,
        path: String,
        headers: [HTTP2HeaderField] = [],
        body: [UInt8] = []
    ) {
        self.init(parts: Parts(method: method, scheme: scheme, authority: authority, pathPrefix: path, headers: headers, body: body),
                  pathSuffix: "")
    }

    /// Creates a request whose `:path` is `pathPrefix` followed by `pathSuffix`, without joining them.
    package init(
        method: String = "POST",
        scheme: String = "https",
        authority: String,
        pathPrefix: String,
        pathSuffix: String,
        headers: [HTTP2HeaderField] = [],
        body: [UInt8] = []
    ) {
        self.init(parts: Parts(method: method, scheme: scheme, authority: authority, pathPrefix: pathPrefix, headers: headers, body: body),
                  pathSuffix: pathSuffix)
    }

    /// A request made of shared `parts`, its `:path` ending in `pathSuffix`.
    package init(parts: Parts, pathSuffix: String) {
        self.parts = parts
        self.pathSuffix = pathSuffix
    }

    /// The parts of a request that many requests can share, immutable, with the header block
    /// nghttp2 is given laid out once.
    ///
    /// The fields before `:path` (method, scheme, authority) and after it (the headers) sit back
    /// to back in one byte array, each checked once here against what a peer accepts (fields that
    /// ``HTTP2HeaderField/checked()`` passed are not checked again): a request's HEADERS then point
    /// nghttp2 at them, with nothing copied or checked per request but its `:path`. A field that
    /// breaks a rule leaves the block empty and ``invalid`` saying why: every request made of these
    /// parts fails with it, unsent.
    package final class Parts: Sendable {
        package let method: String
        package let scheme: String
        package let authority: String
        package let pathPrefix: String
        package let headers: [HTTP2HeaderField]
        package let body: [UInt8]
        /// Names and values back to back: `:method`, `:scheme`, `:authority`, then the headers.
        let block: [UInt8]
        /// Where each field of `block` is, in order (the first three before `:path`).
        let fields: [BlockField]
        /// Why a field breaks a rule, if one does.
        let invalid: String?

        struct BlockField {
            var nameStart: Int
            var nameLength: Int
            var valueLength: Int
            var neverIndexed: Bool
        }

        package init(method: String, scheme: String, authority: String, pathPrefix: String, headers: [HTTP2HeaderField], body: [UInt8]) {
            self.method = method
            self.scheme = scheme
            self.authority = authority
            self.pathPrefix = pathPrefix
            self.headers = headers
            self.body = body
            var block: [UInt8] = []
            var fields: [BlockField] = []
            fields.reserveCapacity(3 + headers.count)
            var invalid: String?
            func append(_ name: String, _ value: String, neverIndexed: Bool) {
                fields.append(BlockField(nameStart: block.count, nameLength: name.utf8.count, valueLength: value.utf8.count,
                                         neverIndexed: neverIndexed))
                block.append(contentsOf: name.utf8)
                block.append(contentsOf: value.utf8)
            }
            // The pseudo-headers' names are fixed; their values follow the rule of any value.
            for (name, value) in [(":method", method), (":scheme", scheme), (":authority", authority)] {
                if value.utf8.contains(where: HeaderRules.isBadValueByte) {
                    invalid = invalid ?? "the value of header '\(name)' contains CR, LF or NUL"
                }
                append(name, value, neverIndexed: false)
            }
            for field in headers where invalid == nil {
                // The rules of `checked()`, for fields that did not pass it already.
                if !field.isChecked {
                    do throws(HTTP2ClientError) {
                        _ = try field.checked()
                    } catch {
                        invalid = error.detail
                        break
                    }
                }
                append(field.name, field.value, neverIndexed: field.indexing == .neverIndexed)
            }
            self.invalid = invalid
            self.block = invalid == nil ? block : []
            self.fields = invalid == nil ? fields : []
        }

        /// Whether requests with these fields can share this object.
        package func matches(method: String, pathPrefix: String, body: [UInt8]) -> Bool {
            self.method == method && self.pathPrefix == pathPrefix && self.body == body
        }

        func with(
            method: String? = nil, scheme: String? = nil, authority: String? = nil, pathPrefix: String? = nil,
            headers: [HTTP2HeaderField]? = nil, body: [UInt8]? = nil
        ) -> Parts {
            Parts(method: method ?? self.method, scheme: scheme ?? self.scheme, authority: authority ?? self.authority,
                  pathPrefix: pathPrefix ?? self.pathPrefix, headers: headers ?? self.headers, body: body ?? self.body)
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.method == rhs.method && lhs.scheme == rhs.scheme && lhs.authority == rhs.authority && lhs.path == rhs.path
            && lhs.headers == rhs.headers && lhs.pushHeader == rhs.pushHeader && lhs.body == rhs.body
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.method)
        hasher.combine(self.scheme)
        hasher.combine(self.authority)
        hasher.combine(self.path)
        hasher.combine(self.headers)
        hasher.combine(self.body)
    }
}
