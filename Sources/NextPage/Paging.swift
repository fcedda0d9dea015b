/// How a collection walks its source (`paging` in a collection definition).
public struct Paging: Sendable, Equatable {
    /// The strategies of docs/config.md.
    public enum Strategy: String, Sendable, CaseIterable {
        case cursor, lastId, page, offset, link, nextUrl, auto
    }

    /// The fields as the definition gave them, before the strategy's
    /// defaults filled them in: what `auto` takes as hints.
    public struct Given: Sendable, Equatable {
        public var param: String?
        public var items: String?
        public var next: String?

        public init(param: String? = nil, items: String? = nil, next: String? = nil) {
            self.param = param
            self.items = items
            self.next = next
        }
    }

    public var strategy: Strategy
    /// Query parameter that carries the cursor.
    public var param: String
    /// Query parameter that carries `pageSize` for the `offset` strategy.
    public var limitParam: String
    /// First page number (`page`) or offset (`offset`).
    public var start: Int64
    /// Where the cursor goes in a JSON request body, instead of the query.
    public var bodyPointer: String?
    /// Request header that carries the cursor, instead of the query.
    public var header: String?
    /// Pointer to the item array (`""` when the page is the array).
    public var items: String
    /// Pointer to the next cursor (`cursor`) or next URL (`nextUrl`).
    public var next: String?
    /// Response header that carries the next cursor (or URL) instead of the
    /// page (`X-Next-Cursor`), for strategies that read one (`readsNext`):
    /// `next` is then not read; a missing or empty header is the end.
    public var nextHeader: String?
    /// Where the next cursor is read when `next` holds nothing (missing or
    /// null) and was not given (`PagingStrategy.nextFallback`: `/next` for `nextUrl`).
    public var nextFallback: String?
    /// Pointer into an item to its id (`lastId` strategy, `dedupe`).
    public var id: String?
    /// Pointer to a boolean that says whether there is more; the end test when given.
    public var hasNext: String?
    /// Where the strategy looks for that boolean when `hasNext` was not
    /// given (`PagingStrategy.hasNextFallback`: `/has_more` for `lastId`,
    /// Stripe and its like). Only a boolean found there counts; a page
    /// without one ends as it would without the pointer.
    public var hasNextFallback: String? {
        hasNext == nil ? strategy.implementation.hasNextFallback : nil
    }
    /// Pointer to the total number of items.
    public var total: String?
    /// `param`, `items` and `next` as given, before defaults.
    public var given: Given

    /// Missing fields take the strategy's defaults (`PagingStrategy`).
    public init(
        strategy: Strategy, param: String? = nil, limitParam: String? = nil, start: Int64? = nil,
        bodyPointer: String? = nil, header: String? = nil, items: String? = nil,
        next: String? = nil, id: String? = nil, hasNext: String? = nil, total: String? = nil, nextHeader: String? = nil
    ) {
        let implementation = strategy.implementation
        self.given = Given(param: param, items: items, next: next)
        self.strategy = strategy
        self.param = param ?? implementation.defaultParam
        self.limitParam = limitParam ?? "limit"
        self.start = start ?? implementation.defaultStart
        self.bodyPointer = bodyPointer
        self.header = header
        self.items = items ?? "/items"
        self.next = next ?? implementation.defaultNext
        self.nextFallback = next == nil ? implementation.nextFallback : nil
        self.id = id ?? implementation.defaultId
        self.hasNext = hasNext
        self.total = total
        self.nextHeader = nextHeader
    }
}

/// Per-collection options beyond the strategy.
public struct CollectionOptions: Sendable, Equatable {
    /// What to do when the source hands back the cursor it was just asked for.
    public enum RepeatedCursorPolicy: String, Sendable, CaseIterable {
        /// Deliver the page with `hasNext: false` and say why in `lastError`.
        case stop
        /// Fail the request (-32003) and stop the collection.
        case error
    }

    public var pageSize: Int?
    public var pageSizeParam: String?
    public var maxItems: Int
    public var prefetch: Int
    public var dedupe: Bool
    public var onRepeatedCursor: RepeatedCursorPolicy
    public var maxEmptyPages: Int
    /// Incremental sync: the value kept between walks, and where it is sent.
    public var incremental: Incremental?
    /// Pages fetched at once when the pages ahead are known (a `total`, a
    /// `Link` rel="last"), from sources whose reads have no effects; 1: one
    /// at a time (docs/config.md, fan-out).
    public var concurrency: Int

    public init(
        pageSize: Int? = nil, pageSizeParam: String? = nil, maxItems: Int = 100_000, prefetch: Int = 0,
        dedupe: Bool = false, onRepeatedCursor: RepeatedCursorPolicy = .stop, maxEmptyPages: Int = 10,
        incremental: Incremental? = nil,
        concurrency: Int = 1
    ) {
        self.pageSize = pageSize
        self.pageSizeParam = pageSizeParam
        self.maxItems = maxItems
        self.prefetch = prefetch
        self.dedupe = dedupe
        self.onRepeatedCursor = onRepeatedCursor
        self.maxEmptyPages = maxEmptyPages
        self.incremental = incremental
        self.concurrency = concurrency
    }
}
