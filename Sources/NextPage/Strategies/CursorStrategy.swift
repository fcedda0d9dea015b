/// `cursor`: the next cursor is read from the page (`paging.next`); the end is
/// a missing, null or empty cursor (or the `hasNext` pointer).
public struct CursorStrategy: PagingStrategy {
    public init() {}

    public var defaultNext: String? { "/next_cursor" }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        resolve(next: page.next, page: page, otherwise: true)
    }
}

/// `nextUrl`: the page carries the full URL of the next page (`paging.next`),
/// used as the cursor; the end is a missing, null or empty URL.
public struct NextURLStrategy: PagingStrategy {
    public init() {}

    /// "`/links/next`, `/next`" (docs/config.md): the first, then the second when the
    /// page holds nothing at the first.
    public var defaultNext: String? { "/links/next" }
    public var nextFallback: String? { "/next" }
    public var cursorIsURL: Bool { true }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        resolve(next: page.next, page: page, otherwise: true)
    }
}
