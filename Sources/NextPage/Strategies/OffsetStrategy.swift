/// `offset`: the cursor is the number of items before the page
/// (`paging.param`), with `pageSize` sent as `paging.limitParam`. The end is an
/// empty or short page (see `isShort(_:_:after:)`), the `total` pointer, or
/// the `hasNext` pointer. With a `total`, the offsets of the pages up to
/// it are known ahead (`concurrency`), a page as long as this one each.
public struct OffsetStrategy: PagingStrategy {
    public init() {}

    public var defaultParam: String { "offset" }
    public var defaultStart: Int64 { 0 }
    public var sendsLimit: Bool { true }

    public func firstCursor(_ paging: Paging) -> Cursor? { .integer(paging.start) }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        let current = request.cursor?.integerValue ?? request.paging.start
        let (next, overflow) = current.addingReportingOverflow(Int64(page.items.count))
        return resolve(
            next: overflow ? nil : .integer(next), page: page,
            otherwise: !page.items.isEmpty && !isShort(page, request, after: loadedBefore) && !reachedTotal(page, seen: next))
    }

    public func pagesAhead(after page: UpstreamPage, request: PageRequest, advance: Advance, loadedBefore: LoadedBefore) -> PagesAhead? {
        guard advance.hasNext, let next = advance.next?.integerValue, let total = page.total, total > next else { return nil }
        let step = Int64(page.items.count)
        // The pages at next + k step for every such offset below the total.
        return PagesAhead.numbers(after: next, step: step, through: total - 1, itemsPerPage: page.items.count)
    }
}
