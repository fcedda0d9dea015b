import Jansson
import NextPage

/// The built-in `demo` collection: 250 bundled items over 10 pages, walked
/// with the `cursor` strategy, so a first run needs no config.
public enum Demo {
    public static let name = "demo"
    public static let pageCount = 10
    public static let pageSize = 25

    /// The demo definition.
    public static var definition: CollectionDefinition {
        CollectionDefinition(
            source: .bundled(pages: pages),
            paging: Paging(strategy: .cursor, items: "/items", next: "/next_cursor", id: "/id"),
            options: CollectionOptions())
    }

    /// Page bodies by file name, as a `file` source would hold them.
    static let pages: [String: [UInt8]] = {
        let colours = ["amber", "blue", "coral", "denim", "emerald", "fuchsia", "gold"]
        let animals = ["otter", "heron", "lynx", "badger", "gecko", "marten", "ibis"]
        var pages: [String: [UInt8]] = [:]
        for page in 1...pageCount {
            var items: [RawJSON] = []
            for index in 1...pageSize {
                let id = (page - 1) * pageSize + index
                items.append(.object([
                    "id": .integer(id),
                    "name": .string("\(colours[id % colours.count]) \(animals[id % animals.count]) \(id)"),
                    "page": .integer(page),
                    "tags": .array([RawJSON.string(colours[id % colours.count]), .string(id % 2 == 0 ? "even" : "odd")]),
                ]))
            }
            let next: RawJSON = page < pageCount ? .string("page-\(page + 1)") : .null
            let body = RawJSON.object(["items": .array(items), "next_cursor": next])
            pages[page == 1 ? "first.json" : "page-\(page).json"] = body.bytes
        }
        return pages
    }()
}
