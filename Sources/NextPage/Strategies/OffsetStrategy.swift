/// `offset`: the cursor is the number of items before the page
/// (`paging.param`), with `pageSize` sent as `paging.limitParam`. The end is an
/// empty or short page (see `isShort(_:_:after:)`), the `total` pointer, or
/// the `hasNext` pointer.
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
}
