/// `page`: page numbers from `paging.start` (default 1). The end is an empty
/// or short page (see `isShort(_:_:after:)`), the `total` pointer, or the
/// `hasNext` pointer.
public struct PageNumberStrategy: PagingStrategy {
    public init() {}

    public func firstCursor(_ paging: Paging) -> Cursor? { .integer(paging.start) }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        let current = request.cursor?.integerValue ?? request.paging.start
        let seen = Int64(loadedBefore.items + page.items.count)
        // Past the last page number there is nothing to ask for.
        let (following, overflow) = current.addingReportingOverflow(1)
        return resolve(
            next: overflow ? nil : .integer(following), page: page,
            otherwise: !page.items.isEmpty && !isShort(page, request, after: loadedBefore) && !reachedTotal(page, seen: seen))
    }
}
