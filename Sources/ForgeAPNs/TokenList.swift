internal import ForgeAPNsCore

/// An array of tokens as an async sequence.
struct TokenList: AsyncSequence, Sendable {
    typealias Element = DeviceToken
    let tokens: [DeviceToken]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[DeviceToken]>
        mutating func next() async -> DeviceToken? { self.base.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.tokens.makeIterator()) }
}
