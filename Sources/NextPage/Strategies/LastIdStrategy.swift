/// `lastId`: keyset paging (the seeds' strategy). The cursor is the id of the
/// last item (`paging.id`); the end is the `hasNext` pointer, an empty page, or
/// a short page when `pageSize` is set.
public struct LastIdStrategy: PagingStrategy {
    public init() {}

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        // An empty page keeps the cursor it was fetched with.
        let next = page.lastItemId ?? request.cursor
        return resolve(next: next, page: page, otherwise: !page.items.isEmpty && !isShort(page, request))
    }
}
