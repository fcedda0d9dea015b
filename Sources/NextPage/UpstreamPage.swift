import Jansson

/// One page as the source sent it: its items (as compact JSON bytes) and the
/// values the paging strategy reads (next cursor, `hasNext`, `total`).
///
/// The page is parsed once with jansson; items are kept as the bytes they
/// dump to, never as Swift values.
public struct UpstreamPage: JSONDecodable {
    /// The items, compact, in source order.
    public var items: [RawJSON]
    /// Each item's id (read through `paging.id`) when ids were asked for; otherwise empty.
    public var ids: [Cursor?]
    /// The id of the last item, when `paging.id` is set and there are items.
    public var lastItemId: Cursor?
    /// The value at `paging.next`, as a cursor.
    public var next: Cursor?
    /// The value at `paging.hasNext`, when that pointer is set.
    public var hasNextFlag: Bool?
    /// The value at `paging.total`, when that pointer is set.
    public var total: Int64?
    /// Response headers (the `link` strategy reads them).
    public var headers: [(name: String, value: String)]

    public init(
        items: [RawJSON], ids: [Cursor?] = [], lastItemId: Cursor? = nil, next: Cursor? = nil,
        hasNextFlag: Bool? = nil, total: Int64? = nil, headers: [(name: String, value: String)] = []
    ) {
        self.items = items
        self.ids = ids
        self.lastItemId = lastItemId
        self.next = next
        self.hasNextFlag = hasNextFlag
        self.total = total
        self.headers = headers
    }

    public static func decode<R: Request>(_ response: UpstreamResponse, for request: R) throws -> UpstreamPage {
        let paging = request.paging
        let root: JSON
        do {
            root = try JSON.parse(response.body)
        } catch {
            throw LoadError.undecodable(PageDecodingFailure(
                line: error.line, column: error.column, message: "page is not JSON: \(error.text)"))
        }
        guard let array = root.pointer(paging.items) else {
            throw missing(paging.items, "the item array")
        }
        guard array.kind == .array else {
            throw LoadError.undecodable(PageDecodingFailure(
                pointer: paging.items, message: "expected an array of items at '\(paging.items)'"))
        }
        let elements = array.elements
        let wantsIds = (request as? PageRequest)?.wantsIds ?? false
        var page = UpstreamPage(items: elements.map(RawJSON.init), headers: response.headers)

        if let idPointer = paging.id {
            if wantsIds {
                page.ids = try elements.map { try readCursor($0.pointer(idPointer), at: idPointer, required: false) }
                page.lastItemId = page.ids.last ?? nil
            } else if let last = elements.last {
                page.lastItemId = try readCursor(last.pointer(idPointer), at: idPointer, required: paging.strategy == .lastId)
            }
        }
        if let nextPointer = paging.next, paging.strategy == .cursor || paging.strategy == .nextUrl {
            page.next = try readCursor(root.pointer(nextPointer), at: nextPointer, required: false)
        }
        if let hasNextPointer = paging.hasNext {
            guard let flag = root.pointer(hasNextPointer) else { throw missing(hasNextPointer, "the hasNext flag") }
            guard let value = flag.bool else {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: hasNextPointer, message: "expected true or false at '\(hasNextPointer)'"))
            }
            page.hasNextFlag = value
        }
        if let totalPointer = paging.total {
            guard let total = root.pointer(totalPointer) else { throw missing(totalPointer, "the total") }
            guard let value = total.integer ?? total.number.map(clampedInteger) else {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: totalPointer, message: "expected a number at '\(totalPointer)'"))
            }
            page.total = value
        }
        return page
    }

    /// A real total as an integer, saturating beyond the range of `Int64`.
    private static func clampedInteger(_ value: Double) -> Int64 {
        if value >= 0x1p63 { return .max }
        if value <= -0x1p63 { return .min }
        return Int64(value)
    }

    private static func missing(_ pointer: String, _ what: String) -> LoadError {
        .undecodable(PageDecodingFailure(pointer: pointer, message: "page has no \(what) at '\(pointer)'"))
    }

    private static func readCursor(_ value: JSON?, at pointer: String, required: Bool) throws -> Cursor? {
        switch Cursor.from(value) {
        case .success(let cursor):
            if cursor == nil && required {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: pointer, message: "item has no id at '\(pointer)'"))
            }
            return cursor
        case .failure(let error):
            throw LoadError.undecodable(PageDecodingFailure(
                pointer: pointer, message: "expected a string or integer at '\(pointer)', found \(error.kind)"))
        }
    }
}
