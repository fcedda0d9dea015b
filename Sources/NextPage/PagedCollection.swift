import Jansson

/// A named collection: a `NextPageLoadable` over any `Client`, walked by a
/// paging strategy, keeping its newest items for `items`.
public actor PagedCollection: NextPageLoadable {
    public nonisolated let name: String
    public nonisolated let client: any Client
    public nonisolated let paging: Paging
    public nonisolated let options: CollectionOptions
    public nonisolated let readAhead: ReadAhead
    private let strategy: any PagingStrategy
    /// Whether pages are fetched several at once when the pages ahead are
    /// known (`concurrency`), so each page's `ahead` is worth reading.
    private let forecastsPages: Bool

    public var nextPageState = NextPageState()
    public let loadQueue = LoadQueue()
    public let loopGuard: LoopGuard
    /// The newest `maxItems` items, by absolute offset.
    public private(set) var buffer: ItemBuffer
    private var seenIds: Set<Cursor> = []

    /// Pages a collection over a source without effects may read ahead of
    /// the one being checked, when calls are waiting for them.
    public static let readAheadWhileChecking = 2

    public init(name: String, client: any Client, paging: Paging, options: CollectionOptions = CollectionOptions()) {
        self.name = name
        self.client = client
        self.paging = paging
        self.options = options
        self.strategy = paging.strategy.implementation
        self.loopGuard = LoopGuard(onRepeatedCursor: options.onRepeatedCursor, maxEmptyPages: options.maxEmptyPages)
        self.buffer = ItemBuffer(capacity: options.maxItems)
        let noEffects = client.fetchesHaveNoEffects
        self.readAhead = ReadAhead(
            afterDelivery: options.prefetch,
            whileChecking: noEffects ? Self.readAheadWhileChecking : 0,
            fanOut: noEffects ? max(1, options.concurrency) : 1)
        self.forecastsPages = noEffects && options.concurrency > 1
    }

    public func firstCursor() -> Cursor? { strategy.firstCursor(paging) }

    public nonisolated func performLoad(after cursor: Cursor?, isFirstPage: Bool, loadedBefore: LoadedBefore) async throws -> LoadedPage {
        let request = PageRequest(cursor: cursor, isFirstPage: isFirstPage, paging: paging, options: options)
        let page = try await client.send(request)
        let advance = strategy.advance(after: page, request: request, loadedBefore: loadedBefore)
        var loaded = LoadedPage(items: page.items, ids: page.ids, next: advance.next, hasNext: advance.hasNext)
        loaded.endNote = advance.endNote
        if forecastsPages {
            loaded.ahead = strategy.pagesAhead(after: page, request: request, advance: advance, loadedBefore: loadedBefore)
            // What the strategy reads from the page, without its bytes.
            var facts = page
            facts.pendingCheck = nil
            let strategy = strategy
            loaded.reread = { [facts] before in
                let advance = strategy.advance(after: facts, request: request, loadedBefore: before)
                return (advance, strategy.pagesAhead(after: facts, request: request, advance: advance, loadedBefore: before))
            }
        }
        if let check = page.pendingCheck {
            loaded.pendingCheck = { try check.run() }
        }
        return loaded
    }

    public func didLoad(_ page: LoadedPage) -> PageItems {
        var items = page.items
        if options.dedupe, page.ids.count == items.count {
            var kept: [Int] = []
            kept.reserveCapacity(items.count)
            for (index, id) in page.ids.enumerated() {
                if let id, !seenIds.insert(id).inserted { continue }
                kept.append(index)
            }
            if kept.count < items.count { items = items.selecting(kept) }
        }
        buffer.append(items)
        return items
    }

    public func didReset() {
        buffer.removeAll()
        seenIds = []
    }

    /// A slice of the items loaded so far, by absolute offset: the items, the
    /// offset of the first of them, and the items loaded in all.
    public func items(offset: Int, limit: Int?) -> (offset: Int, items: PageItems, count: Int) {
        let slice = buffer.slice(offset: offset, limit: limit)
        return (slice.offset, slice.items, nextPageState.count)
    }

    /// The state, as `status` reports it.
    public var state: NextPageState { nextPageState }

    /// Restores a saved position (from a state file) on a fresh collection.
    public func restore(_ saved: NextPageState) {
        resume(from: saved)
        buffer.removeAll(continuingAt: saved.count)
    }
}
