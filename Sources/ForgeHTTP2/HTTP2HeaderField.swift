/// One HTTP/2 header field, sent as given (names must be lower case).
package struct HTTP2HeaderField: Hashable, Sendable, CustomStringConvertible {
    /// How HPACK may store the field.
    package enum Indexing: Hashable, Sendable {
        /// May enter the dynamic table (the default).
        case indexable
        /// Sent as a literal that is never indexed, by this hop or the next (`:path`, secrets).
        case neverIndexed
    }

    /// The name, lower case.
    package var name: String { didSet { self.isChecked = false } }
    /// The value.
    package var value: String { didSet { self.isChecked = false } }
    /// The HPACK treatment.
    package var indexing: Indexing

    /// Set by ``checked()``: the name and value passed the rules below, so sending skips them.
    private(set) var isChecked = false

    /// Creates a field.
    package init(_ name: String, _ value: String, indexing: Indexing = .indexable) {
        self.name = name
        self.value = value
        self.indexing = indexing
    }

    package var description: String { "\(self.name): \(self.value)" }

    /// The field, checked once against what a peer accepts (a non-empty lower-case token name, not
    /// connection-specific; no CR, LF or NUL in the value), so the many requests that reuse it
    /// are not checked again byte by byte. Changing the name or value undoes it.
    /// - Throws: ``HTTP2ClientError`` of code `invalidRequest`, naming the field.
    package func checked() throws(HTTP2ClientError) -> HTTP2HeaderField {
        let badName = self.name.utf8.isEmpty || self.name.utf8.contains(where: HeaderRules.isBadNameByte)
        if badName || HeaderRules.isConnectionSpecific(self.name) {
            throw HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false,
                                   detail: "header name '\(self.name)' is not allowed in HTTP/2")
        }
        var badValue = false
        for byte in self.value.utf8 where HeaderRules.isBadValueByte(byte) { badValue = true }
        if badValue {
            throw HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false,
                                   detail: "the value of header '\(self.name)' contains CR, LF or NUL")
        }
        var field = self
        field.isChecked = true
        return field
    }

    package static func == (lhs: HTTP2HeaderField, rhs: HTTP2HeaderField) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value && lhs.indexing == rhs.indexing
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.name)
        hasher.combine(self.value)
        hasher.combine(self.indexing)
    }
}
