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
    /// `:method`.
    public var method: String
    /// `:path`, such as `/3/device/<token>`.
    public var path: String {
        get { self.pathSuffix.isEmpty ? self.pathPrefix : self.pathPrefix + self.pathSuffix }
        set {
            self.pathPrefix = newValue
            self.pathSuffix = ""
        }
    }
    /// The regular headers, in the order they are sent.
    public var headers: [APNSHeaderField] {
        get {
            guard let pushAPNSID = self.pushAPNSID else { return self.sharedHeaders }
            return self.sharedHeaders + [APNSHeaderField("apns-id", pushAPNSID.description)]
        }
        set {
            self.sharedHeaders = newValue
            self.pushAPNSID = nil
        }
    }
    /// The JSON body. Shared, not copied, across every request made from one prepared notification.
    public var body: [UInt8]

    /// `:path` in two parts (`/3/device/` and the token): the many requests of a bulk send share the
    /// first, and building each one joins no strings.
    package private(set) var pathPrefix: String
    package private(set) var pathSuffix: String
    /// The headers in two parts: those a bulk send's requests share (one array for them all), then
    /// the push's own `apns-id`, if any (a campaign's), sent last. An ``APNSID``, not a string: it
    /// needs no check on its way to the wire.
    package private(set) var sharedHeaders: [APNSHeaderField]
    package private(set) var pushAPNSID: APNSID?

    /// Creates a request.
    public init(method: String = "POST", path: String, headers: [APNSHeaderField], body: [UInt8]) {
        self.init(method: method, pathPrefix: path, pathSuffix: "", headers: headers, body: body)
    }

    /// Creates a request whose `:path` is `pathPrefix` followed by `pathSuffix`.
    package init(
        method: String = "POST", pathPrefix: String, pathSuffix: String, headers: [APNSHeaderField], pushAPNSID: APNSID? = nil,
        body: [UInt8]
    ) {
        self.method = method
        self.pathPrefix = pathPrefix
        self.pathSuffix = pathSuffix
        self.sharedHeaders = headers
        self.pushAPNSID = pushAPNSID
        self.body = body
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
        self.sharedHeaders.first(where: { $0.name == name })?.value ?? (name == "apns-id" ? self.pushAPNSID?.description : nil)
    }
}
