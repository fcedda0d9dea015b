/// `page`: page numbers from `paging.start` (default 1). The end is an empty
/// or short page (see `isShort(_:_:after:)`), the `total` pointer, or the
/// `hasNext` pointer.
public struct PageNumberStrategy: PagingStrategy {
    public init() {}

    public var defaultParam: String { "page" }

    public func firstCursor(_ paging: Paging) -> Cursor? { .integer(paging.start) }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        let current = request.cursor?.integerValue ?? request.paging.start
        // Past the last page number there is nothing to ask for.
        let (following, overflow) = current.addingReportingOverflow(1)
        return resolve(
            next: overflow ? nil : .integer(following), page: page,
            otherwise: !page.items.isEmpty && !isShort(page, request, after: loadedBefore)
                && !reachedTotal(page, seen: seen(page, request, number: current, loadedBefore: loadedBefore)))
    }

    /// The items up to and including page `number`, for the `total` test.
    /// Exact when every page from `start` was received since the last reset
    /// (or counted in a restored state); after a resume from a saved cursor
    /// the pages before it are taken to be as long as `pageSize`, or as
    /// those received since, or as this one.
    func seen(_ page: UpstreamPage, _ request: PageRequest, number: Int64, loadedBefore: LoadedBefore) -> Int64 {
        let received = Int64(loadedBefore.items) + Int64(page.items.count)
        let (pagesBefore, overflow) = number.subtractingReportingOverflow(request.paging.start)
        guard !overflow, pagesBefore > Int64(loadedBefore.pages) else { return received }
        let unknown = pagesBefore - Int64(loadedBefore.pages)
        let perPage = request.pageSize ?? loadedBefore.averagePage ?? page.items.count
        let (estimate, tooMany) = unknown.multipliedReportingOverflow(by: Int64(perPage))
        let (total, tooManyAgain) = received.addingReportingOverflow(estimate)
        return tooMany || tooManyAgain ? .max : total
    }
}
