import Jansson

/// What `load` and `loadNext` return, and what a `page` notification carries.
public struct Page: Sendable {
    /// The collection's name.
    public let collection: String
    /// The page's items, as the source wrote them.
    public let items: [JSON]
    /// The 1-based number of this page.
    public let page: Int
    /// Whether there is a page after this one.
    public let hasNext: Bool
    /// The cursor the next `loadNext` sends (a string or a number; `nil` after the last page).
    public let lastId: JSON?
    /// Items loaded so far.
    public let count: Int
    /// `ifLoading: "skip"` found a fetch in flight (the page is empty).
    public let skipped: Bool
    /// Why the source was stopped, on the page that stopped it.
    public let lastError: String?
    /// The whole reply.
    public let json: JSON

    /// Reads a Page; `method` names the call in errors.
    public init(_ json: JSON, method: String = "loadNext") throws(NextPageClientError) {
        let fields = ReplyFields(json: json, method: method)
        collection = try fields.string("collection")
        items = try fields.array("items")
        page = try fields.int("page")
        hasNext = try fields.bool("hasNext")
        lastId = fields.optional("lastId")
        count = try fields.int("count")
        skipped = json["skipped"]?.bool ?? false
        lastError = fields.optional("lastError")?.string
        self.json = json
    }
}
