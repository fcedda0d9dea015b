import Jansson

/// The value of a `$/progress` notification of `loadAll` (not Foundation's `Progress`): `begin`, a `report` per page, `end`.
public struct LoadAllProgress: Sendable, Equatable {
    public let kind: String
    /// Pages and items of this call so far.
    public let pages: Int
    public let count: Int

    public init(_ json: JSON) throws(NextPageClientError) {
        let fields = ReplyFields(json: json, method: "$/progress")
        kind = try fields.string("kind")
        pages = try fields.int("pages")
        count = try fields.int("count")
    }
}
