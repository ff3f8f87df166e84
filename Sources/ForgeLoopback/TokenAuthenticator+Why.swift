package import ForgeAPNsCore
internal import ForgeCrypto
internal import ForgeSupport
package import struct Foundation.Date
package import struct Foundation.Data
package import class Foundation.JSONSerialization

extension TokenAuthenticator {
    /// One sentence on why a provider token got `reason`: the `kid`, `iss` and `iat` the token
    /// carried (read without verifying it) against the registered keys, as in
    /// "kid WRONGKEY99 is not registered; registered: FORGEKEY01 (team FORGETEAM1)".
    ///
    /// Never quotes the token or its signature: only the header's `kid` and the claims' `iss` and `iat`.
    package func explain(_ reason: APNSErrorReason, authorization: String?, bundleID: String, now: Date = Date()) -> String {
        let registered = self.registeredKeys.isEmpty
            ? "none"
            : self.registeredKeys.map { "\($0.keyID.rawValue) (team \($0.teamID.rawValue))" }.joined(separator: ", ")
        guard let authorization, authorization.hasPrefix("bearer "), authorization.utf8.count > 7 else {
            return authorization == nil
                ? "no authorization header: this server checks provider tokens (registered keys: \(registered))"
                : "the authorization header is not 'bearer <provider token>'"
        }
        let parts = authorization.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false)
        let header = parts.count == 3 ? Self.jsonObject(base64URL: parts[0]) : nil
        let claims = parts.count == 3 ? Self.jsonObject(base64URL: parts[1]) : nil
        guard let header, let claims else {
            return "the provider token is not a JWT (three base64url parts, a JSON header and claims)"
        }
        let kid = header["kid"] as? String
        let iss = claims["iss"] as? String
        let key = kid.flatMap { kid in self.registeredKeys.first { $0.keyID.rawValue == kid } }
        switch reason {
        case .expiredProviderToken:
            let issued = Self.number(claims["iat"])
            let age = issued.map { " (\(APNSProviderTokenVerifier.whole((now.timeIntervalSince1970 - $0) / 60)) minutes ago)" } ?? ""
            let when = issued.map { " at \(ISODate.string(Date(timeIntervalSince1970: $0)))" } ?? ""
            return "the provider token was issued\(when)\(age); APNs accepts tokens up to 60 minutes old"
        case .tooManyProviderTokenUpdates:
            if let limit = self.tokenUpdateLimit {
                return "a new provider token for key \(kid ?? "?") within \(limit.components.seconds / 60) minutes of the previous one "
                    + "(on this or another connection); share one token per key and reuse it for 20 to 60 minutes"
            }
            return "a new provider token on this connection within 20 minutes of the previous one; reuse a token for 20 to 60 minutes"
        case .unrelatedKeyIDInToken:
            return "kid \(kid ?? "?") differs from the key this connection's first push used; one connection, one key"
        case .badEnvironmentKeyInToken:
            return "key \(kid ?? "?") is restricted to the other environment than this server's"
        case .topicMismatch, .invalidProviderToken:
            guard let key, key.teamID.rawValue == iss, let bundles = key.bundleIDs, !bundles.contains(bundleID) else { break }
            return "key \(key.keyID.rawValue) covers only \(bundles.sorted().joined(separator: ", ")), not \(bundleID)"
        default:
            break
        }
        if (header["alg"] as? String) != "ES256" {
            return "the provider token's alg is \((header["alg"] as? String).map { "'\($0)'" } ?? "missing"); APNs takes ES256 only"
        }
        guard let kid else { return "the provider token's header has no kid; registered: \(registered)" }
        guard let key else { return "kid \(kid) is not registered; registered: \(registered)" }
        guard iss == key.teamID.rawValue else {
            return "iss \(iss.map { "'\($0)'" } ?? "(missing)") is not the team of kid \(kid) (\(key.teamID.rawValue))"
        }
        if claims["iat"] == nil { return "the provider token has no iat claim" }
        if let seconds = Self.number(claims["iat"]), seconds > now.timeIntervalSince1970 + 60 {
            return "the provider token's iat is in the future (\(ISODate.string(Date(timeIntervalSince1970: seconds))))"
        }
        if reason == .invalidProviderToken {
            return "the signature does not verify with the public key registered as \(kid), or the token is not a well-formed ES256 JWT"
        }
        return "\(reason.rawValue) for kid \(kid)"
    }

    private static func jsonObject(base64URL part: Substring) -> [String: Any]? {
        var text = String(part.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while text.utf8.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// A JSON number as JSONSerialization hands it over (an `NSNumber`, bridged).
    private static func number(_ value: Any?) -> Double? {
        if let value = value as? Double { return value }
        if let value = value as? Int { return Double(value) }
        return nil
    }
}
