/// What comes after a page: the cursor of the next page and whether there is one.
public struct Advance: Sendable, Equatable {
    public var next: Cursor?
    public var hasNext: Bool
    /// Why paging ends although the page claimed more (see `LoadedPage.endNote`).
    public var endNote: String?

    public init(next: Cursor?, hasNext: Bool, endNote: String? = nil) {
        self.next = next
        self.hasNext = hasNext
        self.endNote = endNote
    }
}

/// A way of walking a paginated source (docs/config.md, `paging.strategy`).
///
/// A strategy is one conforming type, one case of `Paging.Strategy` (see
/// `Paging.Strategy.implementation`) and its name in the schemas: every
/// decision that differs between strategies (where the cursor comes from,
/// whether it is a URL, what `paging` defaults to) is a requirement here,
/// and the rest of the code asks the strategy instead of naming it.
public protocol PagingStrategy: Sendable {
    /// The cursor sent with the first page.
    ///
    /// The default implementation returns `nil` (no cursor on the first request).
    func firstCursor(_ paging: Paging) -> Cursor?

    /// Decides the next cursor and whether the source has more, from the page
    /// just fetched with `request`; `loadedBefore` counts the items and pages
    /// received before it.
    func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance

    /// The query parameter that carries the cursor when `paging.param` is not given.
    ///
    /// The default implementation returns `"cursor"`.
    var defaultParam: String { get }

    /// Where the next cursor is read in a page when `paging.next` is not
    /// given; `nil` for a strategy that does not read one.
    ///
    /// The default implementation returns `nil`.
    var defaultNext: String? { get }

    /// Where the next cursor is read when `paging.next` was not given and the
    /// page holds nothing (missing or null) at `defaultNext`.
    ///
    /// The default implementation returns `nil` (no second place).
    var nextFallback: String? { get }

    /// Whether the next cursor is read from the page, at `paging.next` (or
    /// from the response header `paging.nextHeader`).
    ///
    /// The default implementation returns whether `defaultNext` is set.
    var readsNext: Bool { get }

    /// Whether the cursor is the URL of the next page, requested as given,
    /// rather than a value put into the source's own request.
    ///
    /// The default implementation returns `false`.
    var cursorIsURL: Bool { get }

    /// Whether the cursor is the id (`paging.id`) of the page's last item,
    /// which decoding then reads.
    ///
    /// The default implementation returns `false`.
    var needsLastItemId: Bool { get }

    /// The pointer into an item to its id when `paging.id` is not given.
    ///
    /// The default implementation returns `nil` (ids are read only for `dedupe`).
    var defaultId: String? { get }

    /// Where a boolean saying whether there is more is read when
    /// `paging.hasNext` is not given; only a boolean found there counts.
    ///
    /// The default implementation returns `nil`.
    var hasNextFallback: String? { get }

    /// The first page number or offset when `paging.start` is not given.
    ///
    /// The default implementation returns 1.
    var defaultStart: Int64 { get }

    /// Whether `pageSize` is also sent as `paging.limitParam`.
    ///
    /// The default implementation returns `false`.
    var sendsLimit: Bool { get }

    /// Why a source without response headers (`file`, `command`) cannot serve
    /// this strategy, or `nil` when any source can.
    ///
    /// The default implementation returns `nil`.
    var needsResponseHeaders: String? { get }

    /// Whether the paging of a walk is decided from the answer to its first
    /// request (`settle(_:after:)`), rather than fixed by the definition.
    ///
    /// The default implementation returns `false`.
    var settlesFromFirstPage: Bool { get }

    /// The paging a walk goes by, decided from `response`, the answer to its
    /// first request, and the definition's `paging`; called only when
    /// `settlesFromFirstPage`. Throws `LoadError.definition` when the page
    /// does not show how to walk on, or `LoadError.undecodable`.
    ///
    /// The default implementation returns `paging` unchanged.
    func settle(_ paging: Paging, after response: UpstreamResponse) throws(LoadError) -> Paging

    /// The pages known to follow `advance.next`, when the page says where
    /// the walk ends, so that they may be fetched at once (`concurrency`).
    ///
    /// The default implementation returns `nil`: each page's cursor is
    /// known only from the page before it.
    func pagesAhead(after page: UpstreamPage, request: PageRequest, advance: Advance, loadedBefore: LoadedBefore) -> PagesAhead?
}

/// The items and pages received from the source before a page, since the
/// collection's last reset: the evidence by which `page` and `offset` judge
/// a page short when no `pageSize` says what a full page is.
public struct LoadedBefore: Sendable, Equatable {
    public var items: Int
    public var pages: Int

    public init(items: Int = 0, pages: Int = 0) {
        self.items = items
        self.pages = pages
    }

    /// The count after one more page of `items` items.
    public func adding(items count: Int) -> LoadedBefore {
        LoadedBefore(items: items + count, pages: pages + 1)
    }

    /// Items per page on average, rounded down; `nil` before any page.
    public var averagePage: Int? {
        pages > 0 ? items / pages : nil
    }
}

extension PagingStrategy {
    public func firstCursor(_ paging: Paging) -> Cursor? { nil }
    public var defaultParam: String { "cursor" }
    public var defaultNext: String? { nil }
    public var nextFallback: String? { nil }
    public var readsNext: Bool { defaultNext != nil }
    public var cursorIsURL: Bool { false }
    public var needsLastItemId: Bool { false }
    public var defaultId: String? { nil }
    public var hasNextFallback: String? { nil }
    public var defaultStart: Int64 { 1 }
    public var sendsLimit: Bool { false }
    public var needsResponseHeaders: String? { nil }
    public var settlesFromFirstPage: Bool { false }
    public func settle(_ paging: Paging, after response: UpstreamResponse) throws(LoadError) -> Paging { paging }

    public func pagesAhead(after page: UpstreamPage, request: PageRequest, advance: Advance, loadedBefore: LoadedBefore) -> PagesAhead? {
        nil
    }

    /// The targets of the page's `Link` header with relation `relation` (`next`, `last`).
    func link(_ relation: String, in page: UpstreamPage) -> String? {
        let values = page.headers.filter { $0.name.lowercased() == "link" }.map(\.value)
        guard !values.isEmpty else { return nil }
        return LinkHeader.parse(values).first { $0.relations.contains(relation) }?.target
    }

    /// The end test shared by every strategy: a `hasNext` pointer, when given,
    /// decides; without a cursor to continue from there is nothing more (and
    /// when the pointer said there was, the end says why).
    func resolve(next: Cursor?, page: UpstreamPage, otherwise hasMore: @autoclosure () -> Bool) -> Advance {
        guard let next else {
            let note = page.hasNextFlag == true ? "the page says there is more (hasNext) but gives no cursor to continue from" : nil
            return Advance(next: nil, hasNext: false, endNote: note)
        }
        return Advance(next: next, hasNext: page.hasNextFlag ?? hasMore())
    }

    /// Whether a page is shorter than the page size asked for.
    func isShort(_ page: UpstreamPage, _ request: PageRequest) -> Bool {
        guard let size = request.pageSize else { return false }
        return page.items.count < size
    }

    /// Whether a page is shorter than `pageSize`, or without it, than the
    /// pages before it held on average (pages of 3, 3, then 2 items: the
    /// third is short). Only pages received since the last reset count: the
    /// first page of a walk, or of a resume from a saved cursor, is never
    /// called short on no evidence.
    func isShort(_ page: UpstreamPage, _ request: PageRequest, after before: LoadedBefore) -> Bool {
        if request.pageSize != nil { return isShort(page, request) }
        guard let average = before.averagePage else { return false }
        return page.items.count < average
    }

    /// Whether the `total` pointer says every item has been seen.
    func reachedTotal(_ page: UpstreamPage, seen: Int64) -> Bool {
        guard let total = page.total else { return false }
        return seen >= total
    }
}

extension Paging.Strategy {
    /// The strategy that implements this name.
    public var implementation: any PagingStrategy {
        switch self {
        case .cursor: return CursorStrategy()
        case .lastId: return LastIdStrategy()
        case .page: return PageNumberStrategy()
        case .offset: return OffsetStrategy()
        case .link: return LinkStrategy()
        case .nextUrl: return NextURLStrategy()
        case .auto: return AutoStrategy()
        }
    }
}
