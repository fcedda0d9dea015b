import Jansson
import Logging
import NIOConcurrencyHelpers

/// A named collection: a `NextPageLoadable` over any `Client`, walked by a
/// paging strategy, keeping its newest items for `items`.
public actor PagedCollection: NextPageLoadable {
    public nonisolated let name: String
    public nonisolated let client: any Client
    public nonisolated let paging: Paging
    public nonisolated let options: CollectionOptions
    public nonisolated let readAhead: ReadAhead
    private let strategy: any PagingStrategy
    /// Receives what a walk notices but does not fail for (items without an
    /// incremental value).
    private let logger: Logger?
    /// Whether pages are fetched several at once when the pages ahead are
    /// known (`concurrency`), so each page's `ahead` is worth reading.
    private let forecastsPages: Bool

    public var nextPageState = NextPageState()
    public let loadQueue = LoadQueue()
    public let loopGuard: LoopGuard
    /// The newest `maxItems` items, by absolute offset.
    public private(set) var buffer: ItemBuffer
    private var seenIds: Set<Cursor> = []
    /// What fetches, which run off the actor, need to know of the walk beyond
    /// the definition: the paging a walk settled on (`auto`) and the value
    /// it sends (`incremental`). Written on the actor, and by the fetch of a
    /// walk's first page when it settles.
    private nonisolated let walk = NIOLockedValueBox(Walk())

    struct Walk {
        /// The paging the current walk settled on; `nil` before its first page.
        var settled: Paging?
        /// The incremental value the walk sends.
        var incremental: IncrementalValue?
    }

    /// Pages a collection over a source without effects may read ahead of
    /// the one being checked, when calls are waiting for them.
    public static let readAheadWhileChecking = 2

    /// A collection over `client`; `logger` receives what a walk notices
    /// without failing (default: nothing is logged).
    public init(
        name: String, client: any Client, paging: Paging, options: CollectionOptions = CollectionOptions(), logger: Logger? = nil
    ) {
        self.name = name
        self.client = client
        self.paging = paging
        self.options = options
        self.logger = logger
        self.strategy = paging.strategy.implementation
        self.nextPageState.picksPaging = strategy.settlesFromFirstPage
        if let incremental = options.incremental {
            nextPageState.incremental = IncrementalState(value: incremental.initial)
            walk.withLockedValue { $0.incremental = incremental.initial }
        }
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

    /// Fetches the page at `cursor`. A collection whose strategy settles
    /// from the first page (`auto`) settles on the answer to the walk's first
    /// request (or to the first request after a `load` with a `lastId`, when
    /// nothing was settled: a `lastId` that is an http(s) URL is then
    /// requested as the next page's URL, any other sent as `param`), and
    /// walks on with what it picked.
    public nonisolated func performLoad(after cursor: Cursor?, isFirstPage: Bool, loadedBefore: LoadedBefore) async throws -> LoadedPage {
        let (settled, mark) = walk.withLockedValue { ($0.settled, $0.incremental) }
        let settles = strategy.settlesFromFirstPage && (isFirstPage || settled == nil)
        var request = PageRequest(cursor: cursor, isFirstPage: isFirstPage, paging: settles ? paging : settled ?? paging, options: options)
        if let param = options.incremental?.param, let mark { request.incrementalQuery = (param, mark.text) }
        let page: UpstreamPage
        if settles {
            if let cursor, AutoStrategy.isURL(cursor.text), !cursor.text.hasPrefix("/") { request.paging.strategy = .nextUrl }
            let response = try await client.fetch(request)
            if Task.isCancelled { throw LoadError.cancelled }
            request.paging = try strategy.settle(paging, after: response)
            let picked = request.paging
            // A reset cancels this fetch before it forgets the walk: a
            // cancelled fetch must not settle the next walk.
            walk.withLockedValue { if !Task.isCancelled { $0.settled = picked } }
            page = try UpstreamPage.decode(response, for: request)
        } else {
            page = try await client.send(request)
        }
        // The strategy the walk goes by (for `auto`, the one its first page picked).
        let walking = request.paging.strategy.implementation
        let advance = walking.advance(after: page, request: request, loadedBefore: loadedBefore)
        var loaded = LoadedPage(items: page.items, ids: page.ids, next: advance.next, hasNext: advance.hasNext)
        loaded.marks = page.marks
        loaded.endNote = advance.endNote
        if forecastsPages {
            loaded.ahead = walking.pagesAhead(after: page, request: request, advance: advance, loadedBefore: loadedBefore)
            // What the strategy reads from the page, without its bytes.
            var facts = page
            facts.pendingCheck = nil
            let strategy = walking
            loaded.reread = { [facts, request] before in
                let advance = strategy.advance(after: facts, request: request, loadedBefore: before)
                return (advance, strategy.pagesAhead(after: facts, request: request, advance: advance, loadedBefore: before))
            }
        }
        if let check = page.pendingCheck {
            loaded.pendingCheck = { try await check.runGivingWay() }
        }
        return loaded
    }

    public func didLoad(_ page: LoadedPage) -> PageItems {
        var items = page.items
        var kept = Array(items.indices)
        if var incremental = nextPageState.incremental {
            let marks = page.marks.count == items.count ? page.marks : Array(repeating: nil, count: items.count)
            let withoutBefore = incremental.withoutValue
            kept = kept.filter { index in
                incremental.admit(marks[index]) { IncrementalState.digest(items.array[items.span(index)]) }
            }
            if withoutBefore == 0, incremental.withoutValue > 0, let pointer = options.incremental?.pointer {
                logger?.warning("items without an incremental value are delivered and not counted for it", metadata: [
                    "collection": "\(name)", "pointer": "\(pointer)",
                    "expected": "\(incremental.kind.map { "a \($0.rawValue)" } ?? "a string or a number")",
                ])
            }
            // A walk the source ended (not one a loop guard stopped) sets the value the next one sends.
            if !page.hasNext, page.endNote == nil {
                incremental.walkEnded()
                let value = incremental.value
                walk.withLockedValue { $0.incremental = value }
            }
            nextPageState.incremental = incremental
        }
        if options.dedupe, page.ids.count == items.count {
            kept = kept.filter { index in page.ids[index].map { seenIds.insert($0).inserted } ?? true }
        }
        if kept.count < items.count { items = items.selecting(kept) }
        buffer.append(items)
        if nextPageState.picksPaging, nextPageState.pick == nil {
            nextPageState.pick = walk.withLockedValue { $0.settled }.map(PagingPick.init)
        }
        return items
    }

    public func didReset() {
        buffer.removeAll()
        seenIds = []
        walk.withLockedValue { $0.settled = nil }
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
    /// What the definition decides (whether paging is picked) wins over the
    /// saved state; a saved pick is walked on only by an `auto` collection.
    public func restore(_ saved: NextPageState) {
        resume(from: saved)
        buffer.removeAll(continuingAt: saved.count)
        nextPageState.picksPaging = strategy.settlesFromFirstPage
        if !nextPageState.picksPaging { nextPageState.pick = nil }
        let settled = nextPageState.pick.map { $0.paging(from: paging) }
        if let incremental = options.incremental {
            if nextPageState.incremental == nil { nextPageState.incremental = IncrementalState(value: incremental.initial) }
        } else {
            nextPageState.incremental = nil
        }
        let mark = nextPageState.incremental?.value
        walk.withLockedValue {
            $0.settled = settled
            $0.incremental = mark
        }
    }

    /// Forgets the incremental value too (`reset` with `forgetIncremental`):
    /// the next walk is a first one again, sending `initial` if anything.
    public func forgetIncremental() {
        reset()
        guard let incremental = options.incremental else { return }
        nextPageState.incremental = IncrementalState(value: incremental.initial)
        walk.withLockedValue { $0.incremental = incremental.initial }
    }
}
