/// `lastId`: keyset paging (the seeds' strategy). The cursor is the id of the
/// last item (`paging.id`); the end is the `hasNext` pointer, an empty page, or
/// a short page when `pageSize` is set.
public struct LastIdStrategy: PagingStrategy {
    public init() {}

    public var defaultParam: String { "since_id" }
    public var needsLastItemId: Bool { true }
    public var defaultId: String? { "/id" }
    /// Stripe and its like: `/has_more` ends the walk when the page has one.
    public var hasNextFallback: String? { "/has_more" }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        // An empty page keeps the cursor it was fetched with.
        let next = page.lastItemId ?? request.cursor
        return resolve(next: next, page: page, otherwise: !page.items.isEmpty && !isShort(page, request))
    }
}
