/// One header of an APNs request, as it goes on the wire.
public struct APNSHeaderField: Hashable, Sendable, CustomStringConvertible {
    /// The lower-case header name.
    public var name: String
    /// The value.
    public var value: String

    /// Creates a header field; `name` must already be lower case (HTTP/2 requires it).
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(self.name): \(self.value)" }
}

/// An APNs HTTP/2 request without its `authorization` header, which the client adds from its
/// provider token at send time.
///
/// `:scheme` is `https` and `:authority` is the endpoint's host; both belong to the connection.
public struct APNSHTTPRequest: Hashable, Sendable {
    /// What the requests of one notification share (method, path prefix, headers, body), in one
    /// immutable object: making a request retains it and the token, not four fields, and a
    /// connection pool recognises the notification it converted last by this object's identity.
    package private(set) var shared: Shared
    /// `:path` after ``Shared/pathPrefix`` (a device token), so that building each request joins no strings.
    package private(set) var pathSuffix: String
    /// The push's own `apns-id`, if any (a campaign's), sent after the shared headers. An
    /// ``APNSID``, not a string: it needs no check on its way to the wire.
    package private(set) var pushAPNSID: APNSID?

    /// `:method`.
    public var method: String {
        get { self.shared.method }
        set { self.shared = Shared(method: newValue, pathPrefix: self.shared.pathPrefix, headers: self.shared.headers, body: self.shared.body) }
    }
    /// `:path`, such as `/3/device/<token>`.
    public var path: String {
        get { self.pathSuffix.isEmpty ? self.shared.pathPrefix : self.shared.pathPrefix + self.pathSuffix }
        set {
            self.shared = Shared(method: self.shared.method, pathPrefix: newValue, headers: self.shared.headers, body: self.shared.body)
            self.pathSuffix = ""
        }
    }
    /// The regular headers, in the order they are sent.
    public var headers: [APNSHeaderField] {
        get {
            guard let pushAPNSID = self.pushAPNSID else { return self.shared.headers }
            return self.shared.headers + [APNSHeaderField("apns-id", pushAPNSID.description)]
        }
        set {
            self.shared = Shared(method: self.shared.method, pathPrefix: self.shared.pathPrefix, headers: newValue, body: self.shared.body)
            self.pushAPNSID = nil
        }
    }
    /// The JSON body. Shared, not copied, across every request made from one prepared notification.
    public var body: [UInt8] {
        get { self.shared.body }
        set { self.shared = Shared(method: self.shared.method, pathPrefix: self.shared.pathPrefix, headers: self.shared.headers, body: newValue) }
    }

    /// `:path` before ``pathSuffix``: the many requests of a bulk send share it.
    package var pathPrefix: String { self.shared.pathPrefix }
    /// The headers that the requests made from one notification share.
    package var sharedHeaders: [APNSHeaderField] { self.shared.headers }

    /// The parts of the requests of one notification; see ``APNSHTTPRequest/shared``.
    package final class Shared: Hashable, Sendable {
        package let method: String
        package let pathPrefix: String
        package let headers: [APNSHeaderField]
        package let body: [UInt8]

        package init(method: String, pathPrefix: String, headers: [APNSHeaderField], body: [UInt8]) {
            self.method = method
            self.pathPrefix = pathPrefix
            self.headers = headers
            self.body = body
        }

        package static func == (lhs: Shared, rhs: Shared) -> Bool {
            lhs === rhs
                || (lhs.method == rhs.method && lhs.pathPrefix == rhs.pathPrefix && lhs.headers == rhs.headers && lhs.body == rhs.body)
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(self.method)
            hasher.combine(self.pathPrefix)
            hasher.combine(self.headers)
            hasher.combine(self.body)
        }
    }

    /// Creates a request.
    public init(method: String = "POST", path: String, headers: [APNSHeaderField], body: [UInt8]) {
        self.init(method: method, pathPrefix: path, pathSuffix: "", headers: headers, body: body)
    }

    /// Creates a request whose `:path` is `pathPrefix` followed by `pathSuffix`.
    package init(
        method: String = "POST", pathPrefix: String, pathSuffix: String, headers: [APNSHeaderField], pushAPNSID: APNSID? = nil,
        body: [UInt8]
    ) {
        self.init(shared: Shared(method: method, pathPrefix: pathPrefix, headers: headers, body: body), pathSuffix: pathSuffix,
                  pushAPNSID: pushAPNSID)
    }

    /// A request of a notification's `shared` parts to the path ending in `pathSuffix`.
    package init(shared: Shared, pathSuffix: String, pushAPNSID: APNSID? = nil) {
        self.shared = shared
        self.pathSuffix = pathSuffix
        self.pushAPNSID = pushAPNSID
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.headers == rhs.headers && lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.method)
        hasher.combine(self.path)
        hasher.combine(self.headers)
        hasher.combine(self.body)
    }

    /// The value of the first header called `name` (lower case), if any.
    public subscript(header name: String) -> String? {
        self.shared.headers.first(where: { $0.name == name })?.value ?? (name == "apns-id" ? self.pushAPNSID?.description : nil)
    }
}
