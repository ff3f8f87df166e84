package import ForgeAPNsCore
package import Foundation

/// A provider token that failed verification. Errors compare equal when their ``code`` is equal.
public struct APNSProviderTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case malformed, unsupportedAlgorithm, unknownKeyID, wrongTeam, badSignature, expired, issuedInFuture
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not three base64url segments of JSON with the required fields (the detail says which part).
        public static let malformed = Code(.malformed)
        /// `alg` is not `ES256`.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// No key is registered for `kid`.
        public static let unknownKeyID = Code(.unknownKeyID)
        /// `iss` is not the team the token was expected for.
        public static let wrongTeam = Code(.wrongTeam)
        /// The signature does not verify with the key for `kid`.
        public static let badSignature = Code(.badSignature)
        /// `iat` is older than the allowed age (APNs: one hour).
        public static let expired = Code(.expired)
        /// `iat` is further in the future than the allowed clock skew.
        public static let issuedInFuture = Code(.issuedInFuture)

        public var description: String { self.base.rawValue }
    }

    /// What failed.
    public var code: Code
    /// Why, without the token.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "provider token \(self.code): \(self.detail)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}

/// The readable parts of a provider token, before its signature is checked.
package struct APNSParsedProviderToken: Hashable, Sendable {
    /// `alg` of the header.
    package let algorithm: String
    /// `kid` of the header.
    package let keyID: String
    /// `iss` of the claims.
    package let teamID: String
    /// `iat` of the claims.
    package let issuedAt: Date
    /// The first two segments, as signed.
    package let signingInput: [UInt8]
    /// The decoded signature.
    package let signature: [UInt8]
}

/// A provider token whose signature and age were checked.
package struct APNSVerifiedProviderToken: Hashable, Sendable {
    /// `kid` of the header.
    package let keyID: String
    /// `iss` of the claims.
    package let teamID: String
    /// `iat` of the claims.
    package let issuedAt: Date
}

/// Verifies provider tokens as APNs does: ES256 only, a registered `kid`, a valid signature, and an
/// `iat` no older than an hour. The local APNs server uses it.
package struct APNSProviderTokenVerifier: Sendable {
    /// The keys by key id.
    package var keys: [APNSKeyID: APNSVerificationKey]
    /// The oldest `iat` accepted, as an age (APNs: 3600 s).
    package var maximumAge: Duration
    /// How far in the future `iat` may be; `nil` (the default) does not check. APNs' behaviour for a
    /// future `iat` is not documented.
    package var maximumFutureSkew: Duration?
    /// Whether DER signatures are accepted besides the raw `r‖s` form (default: strict, raw only).
    /// APNs has been seen accepting DER; ForgePush never signs that way.
    package var acceptsDERSignatures: Bool
    /// Whether an `iat` written as a string of digits is accepted (default: strict). APNs has been
    /// seen accepting it, and APNSwift up to 6.4 sends it.
    package var acceptsStringIssuedAt: Bool = false

    /// Creates a verifier.
    package init(
        keys: [APNSKeyID: APNSVerificationKey],
        maximumAge: Duration = .seconds(3600),
        maximumFutureSkew: Duration? = nil,
        acceptsDERSignatures: Bool = false
    ) {
        self.keys = keys
        self.maximumAge = maximumAge
        self.maximumFutureSkew = maximumFutureSkew
        self.acceptsDERSignatures = acceptsDERSignatures
    }

    /// Checks `jwt` at time `now`.
    /// - Throws: ``APNSProviderTokenError`` saying what failed.
    package func verify(_ jwt: String, now: Date) throws(APNSProviderTokenError) -> APNSVerifiedProviderToken {
        let parsed = try Self.parse(jwt, acceptingStringIssuedAt: self.acceptsStringIssuedAt)
        guard parsed.algorithm == "ES256" else {
            throw APNSProviderTokenError(.unsupportedAlgorithm, detail: "alg is '\(parsed.algorithm)'; APNs accepts ES256 only")
        }
        guard let keyID = try? APNSKeyID(parsed.keyID), let key = self.keys[keyID] else {
            throw APNSProviderTokenError(.unknownKeyID, detail: "no key is registered for kid '\(parsed.keyID)'")
        }
        let validRaw = key.isValidSignature(parsed.signature, for: parsed.signingInput, format: .raw)
        let valid = validRaw || (self.acceptsDERSignatures && key.isValidSignature(parsed.signature, for: parsed.signingInput, format: .der))
        guard valid else {
            let form = parsed.signature.count == 64 ? "" : " (\(parsed.signature.count) bytes; ES256 needs 64-byte r‖s)"
            throw APNSProviderTokenError(.badSignature, detail: "the signature does not verify with key \(keyID)\(form)")
        }
        let age = now.timeIntervalSince(parsed.issuedAt)
        if age > Self.seconds(self.maximumAge) {
            throw APNSProviderTokenError(
                .expired, detail: "iat is \(Self.whole(age)) s old; the limit is \(Self.whole(Self.seconds(self.maximumAge))) s"
            )
        }
        if let skew = self.maximumFutureSkew, -age > Self.seconds(skew) {
            throw APNSProviderTokenError(.issuedInFuture, detail: "iat is \(Self.whole(-age)) s in the future")
        }
        return APNSVerifiedProviderToken(keyID: parsed.keyID, teamID: parsed.teamID, issuedAt: parsed.issuedAt)
    }

    /// Splits and decodes `jwt` without checking its signature.
    /// - Throws: ``APNSProviderTokenError/Code/malformed`` naming the part at fault.
    package static func parse(_ jwt: String, acceptingStringIssuedAt: Bool = false) throws(APNSProviderTokenError) -> APNSParsedProviderToken {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw APNSProviderTokenError(.malformed, detail: "has \(parts.count) segments; a JWT has 3")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else {
            throw APNSProviderTokenError(.malformed, detail: "the header is not base64url")
        }
        guard let claimsBytes = Base64URL.decode(parts[1]) else {
            throw APNSProviderTokenError(.malformed, detail: "the claims are not base64url")
        }
        guard let signature = Base64URL.decode(parts[2]), !signature.isEmpty else {
            throw APNSProviderTokenError(.malformed, detail: "the signature is not base64url")
        }
        let decoder = JSONDecoder()
        decoder.userInfo[Claims.lenientIssuedAt] = acceptingStringIssuedAt
        guard let header = try? decoder.decode(Header.self, from: Data(headerBytes)) else {
            throw APNSProviderTokenError(.malformed, detail: "the header is not a JSON object of strings")
        }
        let claims: Claims
        do {
            claims = try decoder.decode(Claims.self, from: Data(claimsBytes))
        } catch let error as APNSProviderTokenError {
            throw error
        } catch {
            throw APNSProviderTokenError(.malformed, detail: "the claims are not a JSON object with iss and iat")
        }
        guard let kid = header.kid else { throw APNSProviderTokenError(.malformed, detail: "the header has no kid") }
        return APNSParsedProviderToken(
            algorithm: header.alg ?? "none",
            keyID: kid,
            teamID: claims.iss,
            issuedAt: Date(timeIntervalSince1970: Double(claims.iat)),
            signingInput: Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8),
            signature: signature
        )
    }

    /// `value` without its fraction, for a message. An `iat` near either end of Int64 makes an age
    /// beyond `Int`, where `Int(_:)` would trap: such an age is shown in floating point instead.
    package static func whole(_ value: Double) -> String {
        Int(exactly: value.rounded(.towardZero)).map(String.init) ?? "\(value.rounded(.towardZero))"
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private struct Claims: Decodable {
        var iss: String
        var iat: Int64

        enum CodingKeys: String, CodingKey { case iss, iat }
        static let lenientIssuedAt = CodingUserInfoKey(rawValue: "forgepush.lenientIssuedAt")!

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard let iss = try? container.decode(String.self, forKey: .iss) else {
                throw APNSProviderTokenError(.malformed, detail: "the claims have no iss string")
            }
            self.iss = iss
            if let iat = try? container.decode(Int64.self, forKey: .iat) {
                self.iat = iat
            } else if let text = try? container.decode(String.self, forKey: .iat) {
                if decoder.userInfo[Self.lenientIssuedAt] as? Bool == true, let value = Int64(text) {
                    self.iat = value
                    return
                }
                throw APNSProviderTokenError(.malformed, detail: "iat is a string; it must be an integer number of seconds")
            } else {
                throw APNSProviderTokenError(.malformed, detail: "iat is missing or not an integer number of seconds")
            }
        }
    }
}
