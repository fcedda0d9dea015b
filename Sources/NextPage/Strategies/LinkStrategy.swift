/// `link`: the next page is the `rel="next"` target of the RFC 8288 `Link`
/// response header (GitHub style), followed exactly as given. No `next` link
/// is the end, whatever `last` says.
public struct LinkStrategy: PagingStrategy {
    public init() {}

    public var cursorIsURL: Bool { true }
    public var needsResponseHeaders: String? { "link reads HTTP headers" }

    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        let values = page.headers.filter { $0.name.lowercased() == "link" }.map(\.value)
        let next = LinkHeader.parse(values).first { $0.relations.contains("next") }?.target
        return resolve(next: next.map(Cursor.string), page: page, otherwise: true)
    }
}
