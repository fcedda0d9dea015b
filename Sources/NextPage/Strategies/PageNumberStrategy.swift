/// `page`: page numbers from `paging.start` (default 1). The end is an empty
/// or short page, the `total` pointer, or the `hasNext` pointer.
///
/// A page is short when it holds fewer items than `pageSize`; without
/// `pageSize`, fewer than the pages before it held on average (pages of 3,
/// 3, then 2 items: the third is the last). Only pages loaded since the
/// walk began count; after a resume from a saved cursor, pages loaded before
/// do not, and a page is not called short on too little evidence.
public struct PageNumberStrategy: PagingStrategy {
    public init() {}

    public func firstCursor(_ paging: Paging) -> Cursor? { .integer(paging.start) }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: Int) -> Advance {
        let current = request.cursor?.integerValue ?? request.paging.start
        let seen = Int64(loadedBefore + page.items.count)
        // Past the last page number there is nothing to ask for.
        let (following, overflow) = current.addingReportingOverflow(1)
        return resolve(
            next: overflow ? nil : .integer(following), page: page,
            otherwise: !page.items.isEmpty && !isShort(page, request, number: current, loadedBefore: loadedBefore)
                && !reachedTotal(page, seen: seen))
    }

    /// Whether page `number` holds fewer items than `pageSize`, or without
    /// it, than the average page before it. `loadedBefore` counts the items of
    /// the pages before it since the walk began, which covers every page from
    /// `start` only when the walk began there; otherwise the average comes
    /// out lower than the pages were, which errs towards reading on.
    func isShort(_ page: UpstreamPage, _ request: PageRequest, number: Int64, loadedBefore: Int) -> Bool {
        if request.pageSize != nil { return isShort(page, request) }
        let (pagesBefore, overflow) = number.subtractingReportingOverflow(request.paging.start)
        guard !overflow, pagesBefore > 0, loadedBefore > 0 else { return false }
        return Int64(page.items.count) < Int64(loadedBefore) / pagesBefore
    }
}
