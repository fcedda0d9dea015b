/// How a collection walks its source (`paging` in a collection definition).
public struct Paging: Sendable, Equatable {
    /// The strategies of SPEC §5.
    public enum Strategy: String, Sendable, CaseIterable {
        case cursor, lastId, page, offset, link, nextUrl
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
    /// Where the next URL is read when `next` holds nothing (missing or
    /// null): `/next`, for a `nextUrl` collection whose `next` was not given.
    public var nextFallback: String?
    /// Pointer into an item to its id (`lastId` strategy, `dedupe`).
    public var id: String?
    /// Pointer to a boolean that says whether there is more; the end test when given.
    public var hasNext: String?
    /// Where a `lastId` collection whose `hasNext` was not given looks for
    /// that boolean: `/has_more` (Stripe and its like). Only a boolean found
    /// there counts; a page without one ends as it would without the pointer.
    public var hasNextFallback: String? {
        hasNext == nil && strategy == .lastId ? "/has_more" : nil
    }
    /// Pointer to the total number of items.
    public var total: String?

    public init(
        strategy: Strategy, param: String? = nil, limitParam: String? = nil, start: Int64? = nil,
        bodyPointer: String? = nil, header: String? = nil, items: String = "/items",
        next: String? = nil, id: String? = nil, hasNext: String? = nil, total: String? = nil
    ) {
        self.strategy = strategy
        self.param = param ?? Paging.defaultParam(strategy)
        self.limitParam = limitParam ?? "limit"
        self.start = start ?? (strategy == .offset ? 0 : 1)
        self.bodyPointer = bodyPointer
        self.header = header
        self.items = items
        self.next = next ?? Paging.defaultNext(strategy)
        self.nextFallback = next == nil && strategy == .nextUrl ? "/next" : nil
        self.id = id ?? (strategy == .lastId ? "/id" : nil)
        self.hasNext = hasNext
        self.total = total
    }

    /// The query parameter a strategy uses when `param` is not given.
    public static func defaultParam(_ strategy: Strategy) -> String {
        switch strategy {
        case .cursor, .link, .nextUrl: return "cursor"
        case .lastId: return "since_id"
        case .page: return "page"
        case .offset: return "offset"
        }
    }

    /// The `next` pointer a strategy uses when none is given (for
    /// `nextUrl`, then `nextFallback`: SPEC's "`/links/next`, `/next`").
    public static func defaultNext(_ strategy: Strategy) -> String? {
        switch strategy {
        case .cursor: return "/next_cursor"
        case .nextUrl: return "/links/next"
        default: return nil
        }
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
    /// Pages fetched at once when the pages ahead are known (a `total`, a
    /// `Link` rel="last"), from sources whose reads have no effects; 1: one
    /// at a time (SPEC §10, fan-out).
    public var concurrency: Int

    public init(
        pageSize: Int? = nil, pageSizeParam: String? = nil, maxItems: Int = 100_000, prefetch: Int = 0,
        dedupe: Bool = false, onRepeatedCursor: RepeatedCursorPolicy = .stop, maxEmptyPages: Int = 10,
        concurrency: Int = 1
    ) {
        self.pageSize = pageSize
        self.pageSizeParam = pageSizeParam
        self.maxItems = maxItems
        self.prefetch = prefetch
        self.dedupe = dedupe
        self.onRepeatedCursor = onRepeatedCursor
        self.maxEmptyPages = maxEmptyPages
        self.concurrency = concurrency
    }
}
