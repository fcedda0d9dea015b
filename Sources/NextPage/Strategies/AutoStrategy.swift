import Jansson

/// `auto`: the walk's strategy and its item array are decided from the
/// answer to the walk's first request (docs/config.md), once per walk, and the rest
/// of the walk goes by what was picked.
///
/// How the next page is found, in this order (the first that matches wins):
///
/// 1. A `Link` response header with `rel="next"`: `link`.
/// 2. A next-page URL (a string starting with `http://`, `https://` or `/`)
///    at `/next`, `/links/next`, `/pagination/next` or `/@odata.nextLink`:
///    `nextUrl`, reading it there.
/// 3. A next cursor (a non-empty string or an integer) at `/next_cursor`,
///    `/nextCursor`, `/cursor`, `/pagination/next_cursor`,
///    `/meta/next_cursor` or `/response_metadata/next_cursor`: `cursor`.
/// 4. The signs of a last page: a `Link` header with another paging
///    relation (`prev`, `first`, `last`) picks `link`; one of the pointers
///    of 2 or 3 present with `null` or `""` picks `nextUrl` or `cursor`. The
///    walk then ends with this page, as it would by the picked strategy.
/// 5. A boolean at `/has_more` (or at `paging.hasNext`), Stripe's lists:
///    `lastId`, the cursor being the last item's `id` (`paging.id`, default
///    `/id`), sent as `paging.param` (default `starting_after`), ending when
///    `has_more` is false.
///
/// The items: the page itself when it is an array; else the one member of
/// the page's object that is an array; else, among several arrays, the first
/// of `/data`, `/items`, `/results`, `/value`, `/records`, `/entries`,
/// `/rows`, `/entities`, `/objects`, `/content` and `/payload`.
///
/// Fields given in the definition are hints that win over detection:
/// `items` is where the items are; `next` (or `nextHeader`) is where the
/// next cursor is read, a URL there picking `nextUrl` and anything else
/// `cursor`; `id`, `hasNext` and `param` go to the strategy picked.
/// A first page that matches nothing is `LoadError.definition` naming what
/// was looked for (JSON-RPC -32004); the page does not land.
public struct AutoStrategy: PagingStrategy {
    public init() {}

    public var settlesFromFirstPage: Bool { true }

    /// Never reached: a walk's pages are walked by the strategy `settle` picked.
    public func advance(after page: UpstreamPage, request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
        Advance(next: nil, hasNext: false)
    }

    public func settle(_ paging: Paging, after response: UpstreamResponse) throws(LoadError) -> Paging {
        try Self.pick(response, hints: paging)
    }

    // MARK: What is looked for

    /// Where a next-page URL is looked for.
    public static let nextURLPointers = ["/next", "/links/next", "/pagination/next", "/@odata.nextLink"]
    /// Where a next cursor is looked for.
    public static let cursorPointers = [
        "/next_cursor", "/nextCursor", "/cursor", "/pagination/next_cursor", "/meta/next_cursor", "/response_metadata/next_cursor",
    ]
    /// Where Stripe-style lists say whether there is more.
    public static let hasMorePointer = "/has_more"
    /// The item arrays looked for when the page's object has several arrays.
    public static let itemNames = ["data", "items", "results", "value", "records", "entries", "rows", "entities", "objects", "content", "payload"]
    /// `Link` relations that show a response is one page of several.
    static let pagingRelations: Set<String> = ["next", "prev", "previous", "first", "last"]
    /// The cursor parameter of a `lastId` pick when `param` is not given
    /// (the shape it is picked for is Stripe's, whose parameter this is).
    public static let lastIdParam = "starting_after"

    /// What a first page that matches nothing is told it lacked.
    public static var expectedPaging: String {
        "a first page that shows how it pages (auto looks for a Link header with rel=\"next\"; a next URL at "
            + list(nextURLPointers) + "; a next cursor at " + list(cursorPointers) + "; or a boolean at " + hasMorePointer
            + "); this page has none of them: name the strategy, or give paging.next or paging.nextHeader"
    }

    /// What a first page whose items were not found is told it lacked.
    public static var expectedItems: String {
        "a first page whose items auto can find (the page itself as an array, the one array member of its object, or an array at "
            + list(itemNames.map { "/" + $0 }) + "); give paging.items"
    }

    private static func list(_ names: [String]) -> String {
        names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    // MARK: Deciding

    /// The paging of the walk whose first page is `response`, from the
    /// definition's `hints` (an `auto` paging).
    public static func pick(_ response: UpstreamResponse, hints: Paging) throws(LoadError) -> Paging {
        let found: Result<Found, LoadError>
        do throws(JSONParseError) {
            found = try JSON.parseScratch(response.body) { root in detect(root, headers: response.headers, hints: hints) }
        } catch {
            throw .undecodable(PageDecodingFailure(line: error.line, column: error.column, message: "page is not JSON: \(error.text)"))
        }
        let picked = try found.get()
        return Paging(
            strategy: picked.strategy,
            param: hints.given.param ?? (picked.strategy == .lastId ? lastIdParam : nil),
            limitParam: hints.limitParam, start: hints.start, bodyPointer: hints.bodyPointer, header: hints.header,
            items: picked.items, next: picked.next, id: hints.id, hasNext: hints.hasNext ?? picked.hasNext, total: hints.total,
            nextHeader: picked.nextHeader)
    }

    /// What detection found.
    struct Found {
        var strategy: Paging.Strategy
        var items: String
        var next: String?
        var nextHeader: String?
        var hasNext: String?
    }

    static func detect(_ root: JSON, headers: [(name: String, value: String)], hints: Paging) -> Result<Found, LoadError> {
        guard let how = detectPaging(root, headers: headers, hints: hints) else {
            return .failure(.definition(field: "paging.strategy", expected: expectedPaging))
        }
        let items: String
        if let given = hints.given.items {
            items = given
        } else if let found = detectItems(root) {
            items = found
        } else {
            return .failure(.definition(field: "paging.items", expected: expectedItems))
        }
        return .success(Found(strategy: how.strategy, items: items, next: how.next, nextHeader: how.nextHeader, hasNext: how.hasNext))
    }

    /// The strategy, and where it reads the next cursor.
    private static func detectPaging(
        _ root: JSON, headers: [(name: String, value: String)], hints: Paging
    ) -> (strategy: Paging.Strategy, next: String?, nextHeader: String?, hasNext: String?)? {
        // A place named in the definition decides where the cursor is read.
        if let header = hints.nextHeader {
            let value = UpstreamPage.headerCursor(header, in: headers)
            return (value.map { isURL($0.text) } ?? false ? .nextUrl : .cursor, nil, header, nil)
        }
        if let pointer = hints.given.next {
            let value = root.pointer(pointer)
            return (value?.string.map(isURL) ?? false ? .nextUrl : .cursor, pointer, nil, nil)
        }
        let links = LinkHeader.parse(headers.filter { $0.name.lowercased() == "link" }.map(\.value))
        if links.contains(where: { $0.relations.contains("next") }) { return (.link, nil, nil, nil) }
        for pointer in nextURLPointers {
            if let text = root.pointer(pointer)?.string, isURL(text) { return (.nextUrl, pointer, nil, nil) }
        }
        for pointer in cursorPointers {
            if let value = root.pointer(pointer), value.kind == .integer || (value.string.map { !$0.isEmpty } ?? false) {
                return (.cursor, pointer, nil, nil)
            }
        }
        // A last page says so.
        if links.contains(where: { !pagingRelations.isDisjoint(with: $0.relations) }) { return (.link, nil, nil, nil) }
        func ended(_ value: JSON?) -> Bool { value.map { $0.isNull || $0.string == "" } ?? false }
        if let pointer = nextURLPointers.first(where: { ended(root.pointer($0)) }) { return (.nextUrl, pointer, nil, nil) }
        if let pointer = cursorPointers.first(where: { ended(root.pointer($0)) }) { return (.cursor, pointer, nil, nil) }
        let hasMore = hints.hasNext ?? hasMorePointer
        if root.pointer(hasMore)?.bool != nil { return (.lastId, nil, nil, hasMore) }
        return nil
    }

    /// Where the item array is, when the page shows it.
    static func detectItems(_ root: JSON) -> String? {
        switch root.kind {
        case .array:
            return ""
        case .object:
            let arrays = root.members.filter { $0.value.kind == .array }.map(\.key)
            if arrays.count == 1 { return "/" + escape(arrays[0]) }
            return itemNames.first { root[$0]?.kind == .array }.map { "/" + $0 }
        default:
            return nil
        }
    }

    /// Whether a value read as a next page is a URL: absolute http(s), or
    /// relative to the server's root.
    static func isURL(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://") || text.hasPrefix("/")
    }

    /// A member name as a JSON Pointer token (`~` is `~0`, `/` is `~1`).
    static func escape(_ name: String) -> String {
        var token = ""
        for character in name {
            switch character {
            case "~": token += "~0"
            case "/": token += "~1"
            default: token.append(character)
            }
        }
        return token
    }
}
