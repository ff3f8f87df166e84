internal import ForgeAPNsCore

/// An array of tokens as an async sequence of hex strings.
struct TokenList: AsyncSequence, Sendable {
    typealias Element = String
    let tokens: [DeviceToken]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[DeviceToken]>
        mutating func next() async -> String? { self.base.next()?.hexString }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.tokens.makeIterator()) }
}
