/// `page`: page numbers from `paging.start` (default 1). The end is an empty
/// or short page (see `isShort(_:_:after:)`), the `total` pointer, or the
/// `hasNext` pointer. With a `total`, or a `Link` header whose `last`
/// link names the last page (`param` in its query, as GitHub sends), the
/// page numbers up to the last are known ahead (`concurrency`).
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

    public func pagesAhead(after page: UpstreamPage, request: PageRequest, advance: Advance, loadedBefore: LoadedBefore) -> PagesAhead? {
        guard advance.hasNext, let next = advance.next?.integerValue, !page.items.isEmpty else { return nil }
        let current = request.cursor?.integerValue ?? request.paging.start
        let perPage = Int64(page.items.count)
        var last: Int64?
        if let total = page.total {
            // The pages still to come hold the items not seen yet, a page as long as this one each.
            let (left, overflow) = total.subtractingReportingOverflow(seen(page, request, number: current, loadedBefore: loadedBefore))
            if !overflow, left > 0 {
                let (number, tooFar) = current.addingReportingOverflow(left / perPage + (left % perPage == 0 ? 0 : 1))
                if !tooFar { last = number }
            }
        } else if let url = link("last", in: page), let number = HTTPURL.queryValue(request.paging.param, in: url).flatMap({ Int64($0) }) {
            last = number
        }
        guard let last else { return nil }
        return PagesAhead.numbers(after: next, step: 1, through: last, itemsPerPage: page.items.count)
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
