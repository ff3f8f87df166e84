/// A response: the status, the headers and the body.
///
/// Headers a client receives are kept as the bytes nghttp2 delivered and turned into strings only
/// when read: a bulk sender reads one or two of them (`apns-id`), not all.
package struct HTTP2Response: Hashable, Sendable {
    /// `:status`.
    package var status: Int
    /// The body.
    package var body: [UInt8]
    private var storage: HeaderStorage

    /// Creates a response.
    package init(status: Int, headers: [HTTP2HeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.body = body
        self.storage = .fields(headers)
    }

    init(status: Int, rawHeaders: RawHeaders, body: [UInt8]) {
        self.status = status
        self.body = body
        self.storage = .raw(rawHeaders)
    }

    /// The regular headers, in order.
    package var headers: [HTTP2HeaderField] {
        get {
            switch self.storage {
            case .fields(let fields): return fields
            case .raw(let raw): return raw.fields()
            }
        }
        set { self.storage = .fields(newValue) }
    }

    /// The value of the first header called `name` (lower case).
    package subscript(header name: String) -> String? {
        switch self.storage {
        case .fields(let fields): return fields.first(where: { $0.name == name })?.value
        case .raw(let raw): return raw.value(of: name)
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers == rhs.headers
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.status)
        hasher.combine(self.body)
        hasher.combine(self.headers)
    }

    private enum HeaderStorage: Sendable {
        case fields([HTTP2HeaderField])
        case raw(RawHeaders)
    }
}
