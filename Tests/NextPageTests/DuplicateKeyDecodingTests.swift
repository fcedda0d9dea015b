import Jansson
@testable import NextPage
import XCTest

/// Repeated keys follow jansson's rule, the last one wins, and both ways of
/// decoding a page (scanned, or parsed whole) deliver the same bytes: an
/// item is never forwarded with a key twice.
final class DuplicateKeyDecodingTests: XCTestCase {
    private let paging = Paging(strategy: .cursor, items: "/items", next: "/next", id: "/id")

    /// The items as delivered by `decode` (scanned when it can be) and by `decodeWhole`.
    private func bothWays(_ page: String, wantsIds: Bool = false, paging: Paging? = nil) throws -> (decoded: UpstreamPage, whole: UpstreamPage) {
        let paging = paging ?? self.paging
        let response = UpstreamResponse(body: Array(page.utf8))
        let request = PageRequest(cursor: .string("c"), isFirstPage: false, paging: paging, options: CollectionOptions(dedupe: wantsIds))
        XCTAssertNotNil(UpstreamPage.decodeScanned(response, paging: paging, wantsIds: wantsIds), "the page takes the scanned path")
        var decoded = try UpstreamPage.decode(response, for: request)
        try decoded.completeChecks()
        let whole = try UpstreamPage.decodeWhole(response.body, headers: [], paging: paging, wantsIds: wantsIds)
        return (decoded, whole)
    }

    func testRepeatedKeyInAnItemKeepsTheLastValueInThePlaceOfTheFirst() throws {
        let (decoded, whole) = try bothWays(#"{"items": [{"id": 1, "v": 1, "w": 0, "v": 2}, {"id": 2, "deep": {"a": 1, "a": [3]}}], "next": "n"}"#)
        let expected = [#"{"id":1,"v":2,"w":0}"#, #"{"id":2,"deep":{"a":[3]}}"#]
        XCTAssertEqual(decoded.items.map(\.description), expected)
        XCTAssertEqual(whole.items.map(\.description), expected)
        XCTAssertEqual(decoded.items.json.description, whole.items.json.description)
        XCTAssertEqual(decoded.next, .string("n"))
    }

    func testRepeatedIdKeyGivesTheLastIdToCursorsAndDedupe() throws {
        let (decoded, whole) = try bothWays(#"{"items": [{"id": 1}, {"id": 5, "id": 7}], "next": null}"#, wantsIds: true)
        XCTAssertEqual(decoded.ids, [.integer(1), .integer(7)])
        XCTAssertEqual(whole.ids, decoded.ids)
        XCTAssertEqual(decoded.items.map(\.description), [#"{"id":1}"#, #"{"id":7}"#])
        let keyset = Paging(strategy: .lastId, items: "/items", id: "/id")
        let (decodedKeyset, wholeKeyset) = try bothWays(#"{"items": [{"id": 1}, {"id": 5, "id": 7}]}"#, paging: keyset)
        XCTAssertEqual(decodedKeyset.lastItemId, .integer(7))
        XCTAssertEqual(wholeKeyset.lastItemId, .integer(7))
    }

    func testRepeatedPageKeysKeepTheLastItemsAndCursor() throws {
        let (decoded, whole) = try bothWays(#"{"items": [{"id": 0}], "next": "a", "items": [{"id": 3}], "next": "b"}"#)
        XCTAssertEqual(decoded.items.map(\.description), [#"{"id":3}"#])
        XCTAssertEqual(whole.items.map(\.description), [#"{"id":3}"#])
        XCTAssertEqual(decoded.next, .string("b"))
        XCTAssertEqual(whole.next, .string("b"))
    }

    func testKeysEqualOnceUnescapedAreRepeatedKeys() throws {
        let (decoded, whole) = try bothWays(#"{"items": [{"id": 1, "a": 1, "\u0061": 2}], "next": null}"#)
        XCTAssertEqual(decoded.items.map(\.description), [#"{"id":1,"a":2}"#])
        XCTAssertEqual(whole.items.map(\.description), decoded.items.map(\.description))
    }

    func testARepeatedKeyIsFoundInWhicheverRunItLies() throws {
        // Items are checked in runs of `PageCheck.runBytes`: a repeated key
        // in the first, a middle or the last run is found all the same, and
        // colons inside strings are not taken for members.
        let filler = String(repeating: "x:", count: 200)
        let count = 3 * PageCheck.runBytes / 400
        for repeatedAt in [0, count / 2, count - 1] {
            var items: [String] = []
            for index in 0..<count {
                let extra = index == repeatedAt ? #", "v": 2"# : ""
                items.append(#"{"id": \#(index), "s": "\#(filler)", "v": 1\#(extra)}"#)
            }
            let (decoded, whole) = try bothWays(#"{"items": ["# + items.joined(separator: ", ") + #"], "next": null}"#)
            XCTAssertEqual(decoded.items.count, count)
            XCTAssertEqual(decoded.items.map(\.description), whole.items.map(\.description), "repeated at \(repeatedAt)")
            XCTAssertEqual(decoded.items[repeatedAt].description, #"{"id":\#(repeatedAt),"s":"\#(filler)","v":2}"#)
            if repeatedAt > 0 {
                XCTAssertEqual(decoded.items[0].description, #"{"id":0,"s":"\#(filler)","v":1}"#)
            }
        }
    }

    func testItemsWithoutRepeatedKeysAreForwardedAsSent() throws {
        // The scanned path keeps the source's spelling (jansson's dump would respell 1E+2).
        let (decoded, _) = try bothWays(#"{"items": [{"id": 1, "n": 1E+2, "s": "\u00e9"}], "next": null}"#)
        XCTAssertEqual(decoded.items.map(\.description), [#"{"id":1,"n":1E+2,"s":"\u00e9"}"#])
    }

    func testAPagedCollectionDeliversTheResolvedItems() async throws {
        let page = #"{"items": [{"id": 1, "v": "first", "v": "last"}], "next": null}"#
        let collection = PagedCollection(name: "d", client: StaticPageClient(body: Array(page.utf8)), paging: paging)
        let result = try await collection.loadNext()
        XCTAssertEqual(result.items.map(\.description), [#"{"id":1,"v":"last"}"#])
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(kept.items.map(\.description), [#"{"id":1,"v":"last"}"#])
    }
}

/// A client that answers every request with the same page.
private struct StaticPageClient: Client {
    let body: [UInt8]

    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        UpstreamResponse(body: body)
    }
}
