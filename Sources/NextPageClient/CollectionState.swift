import Jansson

/// A collection's State: what `status`, `reset`, `define` and `collections` return.
public struct CollectionState: Sendable {
    public let collection: String
    /// Whether a `loadNext` would fetch another page.
    public let hasNext: Bool
    /// Whether a fetch is in flight.
    public let isLoading: Bool
    /// The cursor the next `loadNext` sends (`nil` on a fresh collection or after the last page).
    public let lastId: JSON?
    /// Items and pages loaded since the last reset.
    public let count: Int
    public let pages: Int
    /// The last failure, or why the source was stopped.
    public let lastError: String?
    /// The whole reply.
    public let json: JSON

    public init(_ json: JSON, method: String = "status") throws(NextPageClientError) {
        let fields = ReplyFields(json: json, method: method)
        collection = try fields.string("collection")
        hasNext = try fields.bool("hasNext")
        isLoading = try fields.bool("isLoading")
        lastId = fields.optional("lastId")
        count = try fields.int("count")
        pages = try fields.int("pages")
        lastError = fields.optional("lastError")?.string
        self.json = json
    }
}
