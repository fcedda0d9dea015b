import Jansson

/// The items of a `PageSequence`, one at a time.
public struct ItemSequence: AsyncSequence, Sendable {
    public typealias Element = JSON

    let pages: PageSequence

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: pages.makeAsyncIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var pages: PageSequence.AsyncIterator
        var items: [JSON] = []
        var index = 0

        public mutating func next() async throws -> JSON? {
            while index == items.count {
                guard let page = try await pages.next() else { return nil }
                items = page.items
                index = 0
            }
            defer { index += 1 }
            return items[index]
        }
    }
}
