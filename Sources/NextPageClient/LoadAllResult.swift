import Jansson

/// What `loadAll` returns: where the collection stands afterwards.
public struct LoadAllResult: Sendable {
    public let collection: String
    public let pages: Int
    public let count: Int
    public let hasNext: Bool
    public let lastId: JSON?

    public init(_ json: JSON) throws(NextPageClientError) {
        let fields = ReplyFields(json: json, method: "loadAll")
        collection = try fields.string("collection")
        pages = try fields.int("pages")
        count = try fields.int("count")
        hasNext = try fields.bool("hasNext")
        lastId = fields.optional("lastId")
    }
}
