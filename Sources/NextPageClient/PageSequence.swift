import Jansson

/// The pages of a collection, from where it stands (or from the first, when
/// restarted) to its end: `loadNext` until `hasNext` is false. A collection
/// already at its end gives one empty page.
public struct PageSequence: AsyncSequence, Sendable {
    public typealias Element = Page

    let client: NextPageClient
    let collection: String
    let restart: Bool

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, collection: collection, method: restart ? "load" : "loadNext")
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let client: NextPageClient
        let collection: String
        var method: String?

        public mutating func next() async throws -> Page? {
            guard let current = method else { return nil }
            let page = try Page(await client.call(current, NextPageClient.params(collection)), method: current)
            method = page.hasNext ? "loadNext" : nil
            return page
        }
    }
}
