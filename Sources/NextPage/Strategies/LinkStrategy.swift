/// `link`: the next page is the `rel="next"` target of the RFC 8288 `Link`
/// response header (GitHub style), followed exactly as given. No `next` link
/// is the end, whatever `last` says. When the `last` link is the `next`
/// one with a larger page number (GitHub), the pages between are known
/// ahead (`concurrency`).
public struct LinkStrategy: PagingStrategy {
    public init() {}

    public var cursorIsURL: Bool { true }
    public var needsResponseHeaders: String? { "link reads HTTP headers" }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        resolve(next: link("next", in: page).map(Cursor.string), page: page, otherwise: true)
    }

    public func pagesAhead(after page: UpstreamPage, request: PageRequest, advance: Advance, loadedBefore: LoadedBefore) -> PagesAhead? {
        guard advance.hasNext, case .string(let next)? = advance.next, let last = link("last", in: page) else { return nil }
        return PagesAhead.numberedURLs(next: next, last: last, itemsPerPage: page.items.count)
    }
}
