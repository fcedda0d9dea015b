import Jansson

/// What the `items` method returns: items kept so far, from an absolute offset.
public struct ItemSlice: Sendable {
    public let collection: String
    public let items: [JSON]
    /// Items loaded so far.
    public let count: Int
    /// The absolute offset of the first item.
    public let offset: Int

    public init(_ json: JSON) throws(NextPageClientError) {
        let fields = ReplyFields(json: json, method: "items")
        collection = try fields.string("collection")
        items = try fields.array("items")
        count = try fields.int("count")
        offset = try fields.int("offset")
    }
}
