/// A `.p8` signing key or a public key that cannot be used, or a signature that could not be made.
///
/// Each code says what is wrong in words that say what to do; no error ever carries key material.
/// Errors compare equal when their ``code`` is equal.
public struct APNSKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of problem. New codes may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotFound, fileUnreadable, notPEM, encrypted, publicKeyOnly, rsaKey, notECKey, wrongCurve, damaged
            case signingFailed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist.
        public static let fileNotFound = Code(.fileNotFound)
        /// The file exists but cannot be read (permissions, a directory, an I/O error).
        public static let fileUnreadable = Code(.fileUnreadable)
        /// The content is not PEM text (`-----BEGIN …-----`).
        public static let notPEM = Code(.notPEM)
        /// The key is encrypted with a password; Apple's `.p8` files never are.
        public static let encrypted = Code(.encrypted)
        /// The PEM holds a public key where a private key was needed.
        public static let publicKeyOnly = Code(.publicKeyOnly)
        /// The key is an RSA key; provider tokens need EC P-256.
        public static let rsaKey = Code(.rsaKey)
        /// The key is neither EC nor RSA (for example Ed25519).
        public static let notECKey = Code(.notECKey)
        /// The key is EC, but on a curve other than P-256 (the detail names it).
        public static let wrongCurve = Code(.wrongCurve)
        /// The PEM is truncated or its content is corrupt.
        public static let damaged = Code(.damaged)
        /// OpenSSL failed to sign.
        public static let signingFailed = Code(.signingFailed)

        public var description: String { self.base.rawValue }
    }

    /// What kind of problem this is.
    public var code: Code
    /// The file the key came from, if any.
    public var path: String?
    /// What is wrong and what to do, without key material.
    public var detail: String
    /// Where the error was thrown.
    public var file: String
    /// Where the error was thrown.
    public var line: Int

    /// Creates an error; `file` and `line` default to the caller's location.
    public init(_ code: Code, path: String? = nil, detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.path = path
        self.detail = detail
        self.file = file
        self.line = line
    }

    public var description: String {
        if let path { return "key file '\(path)': \(self.detail)" }
        return self.detail
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
