import ForgeAPNsCore

/// One-line hints for rejections and failures that usually have one cause, each pointing to
/// `apnsctl doctor`, which checks the credentials and the way to the server step by step.
enum RejectionHints {
    static func hint(for reason: APNSErrorReason) -> String? {
        switch reason {
        case .invalidProviderToken:
            return "hint: InvalidProviderToken: the key id, the team id and the .p8 key must belong together, and the key must be "
                + "enabled for APNs; `apnsctl doctor` with the same flags says which part is wrong"
        case .badDeviceToken:
            return "hint: BadDeviceToken: a token from a development build works only with --environment sandbox, one from the "
                + "App Store or TestFlight only with production; `apnsctl doctor` checks the endpoint"
        case .deviceTokenNotForTopic:
            return "hint: DeviceTokenNotForTopic: the token belongs to another app than --topic; give the bundle id of the app "
                + "that registered it (`apnsctl doctor --topic …` checks the topic)"
        case .topicDisallowed, .badTopic:
            return "hint: \(reason.rawValue): --topic must be a bundle id your key's team may push to; `apnsctl doctor` checks it"
        default:
            return nil
        }
    }

    /// The hint for a transport failure's detail: an untrusted certificate chain usually means a
    /// private CA (the local server's) that `--ca-file` should name.
    static func hint(forTransportDetail detail: String) -> String? {
        if detail.contains("certificate chain is not trusted") || detail.contains("unable to get local issuer certificate") {
            return "hint: the server's certificate is signed by a CA this machine does not trust: pass it with --ca-file "
                + "(`apnsctl serve --write-ca FILE` writes the local server's); `apnsctl doctor` checks the TLS step"
        }
        if detail.contains("spoke HTTP/2, then closed") {
            return "hint: the server spoke HTTP/2, then closed each connection before answering, for longer than a restart "
                + "takes: a server or load balancer that drops this client's requests, or one that is overloaded; "
                + "`apnsctl doctor` checks each step"
        }
        if detail.contains("before its HTTP/2 preface") || detail.contains("closed the connection before any answer") {
            return "hint: the server closed each connection before it spoke HTTP/2: a TLS port reached with http:// (use "
                + "https://), a server that refuses this client (a revoked certificate, a firewall, a proxy), or one that is "
                + "shedding load; `apnsctl doctor` checks each step"
        }
        return nil
    }

    /// Every hint that applies, once each, in a fixed order.
    static func hints(reasons: Set<APNSErrorReason>, transportDetail: String?) -> [String] {
        var seen = Set<String>()
        let fromReasons = reasons.sorted { $0.rawValue < $1.rawValue }.compactMap(Self.hint(for:)).filter { seen.insert($0).inserted }
        return fromReasons + [transportDetail.flatMap(Self.hint(forTransportDetail:))].compactMap { $0 }
    }
}
