import Jansson
import NextPage
import XCTest

/// Each strategy's `advance` end rules (docs/config.md) and `UpstreamPage.decode`.
final class StrategyTests: XCTestCase {
    private func request(_ paging: Paging, cursor: Cursor?, first: Bool = false, pageSize: Int? = nil) -> PageRequest {
        PageRequest(cursor: cursor, isFirstPage: first, paging: paging, options: CollectionOptions(pageSize: pageSize))
    }

    private func decode(_ body: String, _ paging: Paging, cursor: Cursor? = nil, headers: [(name: String, value: String)] = [],
                        dedupe: Bool = false) throws -> UpstreamPage {
        let request = PageRequest(cursor: cursor, isFirstPage: cursor == nil, paging: paging, options: CollectionOptions(dedupe: dedupe))
        var page = try UpstreamPage.decode(UpstreamResponse(headers: headers, body: Array(body.utf8)), for: request)
        try page.completeChecks()
        return page
    }

    /// Decodes `body` and advances with the paging's strategy.
    private func advance(_ body: String, _ paging: Paging, cursor: Cursor? = nil, pageSize: Int? = nil, loadedBefore: LoadedBefore = LoadedBefore(),
                         headers: [(name: String, value: String)] = []) throws -> Advance {
        let request = PageRequest(cursor: cursor, isFirstPage: cursor == nil, paging: paging, options: CollectionOptions(pageSize: pageSize))
        var page = try UpstreamPage.decode(UpstreamResponse(headers: headers, body: Array(body.utf8)), for: request)
        try page.completeChecks()
        return paging.strategy.implementation.advance(after: page, request: request, loadedBefore: loadedBefore)
    }

    private func decodingFailure(_ body: String, _ paging: Paging, dedupe: Bool = false,
                                 file: StaticString = #filePath, line: UInt = #line) -> PageDecodingFailure? {
        do {
            let page = try decode(body, paging, dedupe: dedupe)
            XCTFail("decoded \(page.items.count) items from \(body)", file: file, line: line)
        } catch LoadError.undecodable(let failure) {
            return failure
        } catch {
            XCTFail("expected LoadError.undecodable, got \(error)", file: file, line: line)
        }
        return nil
    }

    // MARK: cursor

    func testCursorStrategyEndsOnNullEmptyOrMissingNext() throws {
        let paging = Paging(strategy: .cursor)
        XCTAssertEqual(paging.next, "/next_cursor")
        XCTAssertEqual(paging.param, "cursor")
        XCTAssertEqual(try advance(#"{"items": [1], "next_cursor": "abc"}"#, paging), Advance(next: .string("abc"), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [1], "next_cursor": 42}"#, paging), Advance(next: .integer(42), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [1], "next_cursor": null}"#, paging), Advance(next: nil, hasNext: false))
        XCTAssertEqual(try advance(#"{"items": [1], "next_cursor": ""}"#, paging), Advance(next: nil, hasNext: false))
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging), Advance(next: nil, hasNext: false))
        // An empty page with a cursor is not the end.
        XCTAssertEqual(try advance(#"{"items": [], "next_cursor": "more"}"#, paging), Advance(next: .string("more"), hasNext: true))
        XCTAssertNil(PagingStrategyProbe.firstCursor(paging))
    }

    func testHasNextPointerDecidesForTheCursorStrategy() throws {
        // GraphQL: the last page still carries an endCursor.
        let paging = Paging(strategy: .cursor, items: "/data/x/nodes", next: "/data/x/pageInfo/endCursor",
                            hasNext: "/data/x/pageInfo/hasNextPage")
        let last = #"{"data": {"x": {"nodes": [{"id": 1}], "pageInfo": {"endCursor": "Y3Vy", "hasNextPage": false}}}}"#
        XCTAssertEqual(try advance(last, paging).hasNext, false)
        let more = #"{"data": {"x": {"nodes": [], "pageInfo": {"endCursor": "Y3Vy", "hasNextPage": true}}}}"#
        XCTAssertEqual(try advance(more, paging), Advance(next: .string("Y3Vy"), hasNext: true))
    }

    // MARK: lastId

    func testLastIdStrategy() throws {
        let paging = Paging(strategy: .lastId)
        XCTAssertEqual(paging.id, "/id")
        XCTAssertEqual(paging.param, "since_id")
        // The cursor is the last item's id.
        XCTAssertEqual(try advance(#"{"items": [{"id": 4}, {"id": 9}]}"#, paging), Advance(next: .integer(9), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [{"id": "a"}, {"id": "b"}]}"#, paging, cursor: .string("0")),
                       Advance(next: .string("b"), hasNext: true))
        // An empty page ends.
        XCTAssertEqual(try advance(#"{"items": []}"#, paging, cursor: .integer(9)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": []}"#, paging).hasNext, false)
        // A short page ends when pageSize is set; a full one does not.
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}]}"#, paging, pageSize: 3).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}, {"id": 3}]}"#, paging, pageSize: 3),
                       Advance(next: .integer(3), hasNext: true))
    }

    func testHasNextPointerOverridesTheLastIdRules() throws {
        let paging = Paging(strategy: .lastId, hasNext: "/has_more")
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}, {"id": 3}], "has_more": false}"#, paging, pageSize: 3).hasNext,
                       false, "has_more false ends a full page")
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}], "has_more": true}"#, paging, pageSize: 3),
                       Advance(next: .integer(1), hasNext: true), "has_more true continues after a short page")
    }

    func testLastIdReadsHasMoreWhenNoHasNextPointerIsGiven() throws {
        let paging = Paging(strategy: .lastId)
        XCTAssertEqual(paging.hasNext, nil)
        XCTAssertEqual(paging.hasNextFallback, "/has_more")
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}], "has_more": false}"#, paging).hasNext,
                       false, "has_more false ends a page that nothing else ends")
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}], "has_more": true}"#, paging, pageSize: 3),
                       Advance(next: .integer(1), hasNext: true), "has_more true continues after a short page")
        // Anything but a boolean there, or nothing, leaves the end to the other rules; no error.
        for other in [#""yes""#, "1", "null", "{}"] {
            XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}], "has_more": \#(other)}"#, paging),
                           Advance(next: .integer(2), hasNext: true), other)
        }
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}, {"id": 2}]}"#, paging), Advance(next: .integer(2), hasNext: true))
        // A hasNext pointer of the collection's own is the only end test then.
        let own = Paging(strategy: .lastId, hasNext: "/more")
        XCTAssertEqual(own.hasNextFallback, nil)
        XCTAssertEqual(try advance(#"{"items": [{"id": 1}], "has_more": false, "more": true}"#, own).hasNext, true)
        // Other strategies read no has_more of their own accord.
        XCTAssertEqual(Paging(strategy: .cursor).hasNextFallback, nil)
        XCTAssertEqual(try advance(#"{"items": [1], "next_cursor": "c", "has_more": false}"#, Paging(strategy: .cursor)),
                       Advance(next: .string("c"), hasNext: true))
    }

    // MARK: page

    func testPageStrategy() throws {
        let paging = Paging(strategy: .page)
        XCTAssertEqual(paging.param, "page")
        XCTAssertEqual(PagingStrategyProbe.firstCursor(paging), .integer(1))
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(1)), Advance(next: .integer(2), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(7)), Advance(next: .integer(8), hasNext: true))
        // Empty ends.
        XCTAssertEqual(try advance(#"{"items": []}"#, paging, cursor: .integer(3)).hasNext, false)
        // Short ends.
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging, cursor: .integer(3), pageSize: 2).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(3), pageSize: 2).hasNext, true)
        // A first request without a cursor numbers from start.
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging).next, .integer(2))
    }

    func testPageStrategyWithoutPageSizeEndsOnAPageShorterThanThoseBefore() throws {
        let paging = Paging(strategy: .page)
        // Pages of 3 and 3 before: a page of 2 is the last, one of 3 or more is not.
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(3), loadedBefore: LoadedBefore(items: 6, pages: 2)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3]}"#, paging, cursor: .integer(3), loadedBefore: LoadedBefore(items: 6, pages: 2)).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4]}"#, paging, cursor: .integer(3), loadedBefore: LoadedBefore(items: 6, pages: 2)).hasNext, true)
        // The first page has nothing before it to be shorter than.
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging, cursor: .integer(1)).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging).hasNext, true)
        // Nothing received before (a walk resumed at page 5): no evidence, read on.
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging, cursor: .integer(5), loadedBefore: LoadedBefore()).hasNext, true)
        // Pages counted from `start`: the evidence is what was received, not the page number.
        let fromZero = Paging(strategy: .page, start: 0)
        XCTAssertEqual(try advance(#"{"items": [1]}"#, fromZero, cursor: .integer(1), loadedBefore: LoadedBefore(items: 2, pages: 1)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, fromZero, cursor: .integer(1), loadedBefore: LoadedBefore(items: 2, pages: 1)).hasNext, true)
        // `pageSize`, when set, is the measure: a page as long as those before but short of it ends.
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(2), pageSize: 3, loadedBefore: LoadedBefore(items: 2, pages: 1)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(2), pageSize: 2, loadedBefore: LoadedBefore(items: 5, pages: 1)).hasNext, true)
        // A hasNext pointer still decides.
        let flagged = Paging(strategy: .page, hasNext: "/more")
        XCTAssertEqual(try advance(#"{"items": [1], "more": true}"#, flagged, cursor: .integer(3), loadedBefore: LoadedBefore(items: 6, pages: 2)).hasNext, true)
    }

    func testPageStrategyTotal() throws {
        let paging = Paging(strategy: .page, total: "/total")
        XCTAssertEqual(try advance(#"{"items": [1, 2], "total": 5}"#, paging, cursor: .integer(2), loadedBefore: LoadedBefore(items: 2, pages: 1)).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1], "total": 5}"#, paging, cursor: .integer(3), loadedBefore: LoadedBefore(items: 4, pages: 2)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2], "total": 4}"#, paging, cursor: .integer(2), loadedBefore: LoadedBefore(items: 2, pages: 1)).hasNext, false)
        // Resumed at page 2 with nothing received before: the page before is taken to be as long as this one,
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3], "total": 6}"#, paging, cursor: .integer(2)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3], "total": 7}"#, paging, cursor: .integer(2)).hasNext, true)
        // or as pageSize says,
        XCTAssertEqual(try advance(#"{"items": [1], "total": 7}"#, paging, cursor: .integer(3), pageSize: 3).hasNext, false)
        // or as the pages received since the resume (resumed at 3, which held 4 items; page 4 holds 4).
        let resumed = LoadedBefore(items: 4, pages: 1)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4], "total": 16}"#, paging, cursor: .integer(4), loadedBefore: resumed).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4], "total": 17}"#, paging, cursor: .integer(4), loadedBefore: resumed).hasNext, true)
    }

    func testPageStrategyNumbersFromStart() throws {
        let paging = Paging(strategy: .page, start: 0)
        XCTAssertEqual(PagingStrategyProbe.firstCursor(paging), .integer(0))
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging, cursor: .integer(0)).next, .integer(1))
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging).next, .integer(1), "no cursor means page `start`")
    }

    // MARK: offset

    func testOffsetStrategy() throws {
        let paging = Paging(strategy: .offset)
        XCTAssertEqual(paging.param, "offset")
        XCTAssertEqual(paging.limitParam, "limit")
        XCTAssertEqual(paging.start, 0)
        XCTAssertEqual(PagingStrategyProbe.firstCursor(paging), .integer(0))
        // Next offset = previous offset + items on the page.
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3]}"#, paging, cursor: .integer(0)), Advance(next: .integer(3), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4, 5]}"#, paging, cursor: .integer(10), pageSize: 5),
                       Advance(next: .integer(15), hasNext: true))
        // Short and empty pages end.
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4]}"#, paging, cursor: .integer(10), pageSize: 5).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": []}"#, paging, cursor: .integer(10)).hasNext, false)
        XCTAssertEqual(Paging(strategy: .offset, limitParam: "count").limitParam, "count")
    }

    func testOffsetStrategyWithoutPageSizeEndsOnAPageShorterThanThoseBefore() throws {
        let paging = Paging(strategy: .offset)
        // Pages of 3 and 3 before: a page of 2 is the last, one of 3 or more is not.
        let twoPages = LoadedBefore(items: 6, pages: 2)
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(6), loadedBefore: twoPages),
                       Advance(next: .integer(8), hasNext: false))
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3]}"#, paging, cursor: .integer(6), loadedBefore: twoPages).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4]}"#, paging, cursor: .integer(6), loadedBefore: twoPages).hasNext, true)
        // The average is rounded down: after pages of 5 and 4, a page of 4 is not short, one of 3 is.
        let uneven = LoadedBefore(items: 9, pages: 2)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3, 4]}"#, paging, cursor: .integer(9), loadedBefore: uneven).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1, 2, 3]}"#, paging, cursor: .integer(9), loadedBefore: uneven).hasNext, false)
        // The first page, and the first after a resume, have no evidence: read on.
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging).hasNext, true)
        XCTAssertEqual(try advance(#"{"items": [1]}"#, paging, cursor: .integer(40)).hasNext, true)
        // `pageSize`, when set, is the measure.
        XCTAssertEqual(try advance(#"{"items": [1, 2]}"#, paging, cursor: .integer(6), pageSize: 2, loadedBefore: twoPages).hasNext, true)
        // A hasNext pointer still decides.
        let flagged = Paging(strategy: .offset, hasNext: "/more")
        XCTAssertEqual(try advance(#"{"items": [1], "more": true}"#, flagged, cursor: .integer(6), loadedBefore: twoPages).hasNext, true)
    }

    func testOffsetStrategyTotalAndHasNext() throws {
        let withTotal = Paging(strategy: .offset, total: "/meta/total")
        XCTAssertEqual(try advance(#"{"items": [1, 2], "meta": {"total": 12}}"#, withTotal, cursor: .integer(10)).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1, 2], "meta": {"total": 13}}"#, withTotal, cursor: .integer(10)).hasNext, true)
        let withFlag = Paging(strategy: .offset, hasNext: "/more")
        XCTAssertEqual(try advance(#"{"items": [], "more": true}"#, withFlag, cursor: .integer(4)),
                       Advance(next: .integer(4), hasNext: true), "the hasNext pointer overrides an empty page")
        XCTAssertEqual(try advance(#"{"items": [1, 2], "more": false}"#, withFlag, cursor: .integer(4)).hasNext, false)
        // With both pointers, hasNext is the end test: a page without a total is not an error.
        for strategy in [Paging.Strategy.offset, .page] {
            let both = Paging(strategy: strategy, hasNext: "/more", total: "/total")
            XCTAssertEqual(try advance(#"{"items": [3], "more": false}"#, both, cursor: .integer(2)).hasNext, false, "\(strategy)")
            XCTAssertEqual(try advance(#"{"items": [3], "more": true}"#, both, cursor: .integer(2)).hasNext, true, "\(strategy)")
            XCTAssertEqual(try advance(#"{"items": [3], "more": true, "total": null}"#, both, cursor: .integer(2)).hasNext, true, "\(strategy)")
        }
    }

    // MARK: nextUrl and link

    func testNextURLStrategy() throws {
        let paging = Paging(strategy: .nextUrl, next: "/links/next")
        // Without `next`: `/links/next`, else `/next` (docs/config.md).
        let byDefault = Paging(strategy: .nextUrl)
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": "https://x/2"}, "next": "https://x/9"}"#, byDefault).next, .string("https://x/2"))
        XCTAssertEqual(try advance(#"{"items": [1], "next": "https://x/3"}"#, byDefault).next, .string("https://x/3"))
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": null}, "next": "https://x/4"}"#, byDefault).next, .string("https://x/4"))
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": null}}"#, byDefault).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1]}"#, byDefault).hasNext, false)
        // A `next` that is given is the only place looked at.
        XCTAssertEqual(try advance(#"{"items": [1], "next": "https://x/5"}"#, paging).hasNext, false)
        let url = "https://api.example.com/things?page=2&per_page=50"
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": "\#(url)"}}"#, paging), Advance(next: .string(url), hasNext: true))
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": null}}"#, paging).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1], "links": {}}"#, paging).hasNext, false)
        XCTAssertEqual(try advance(#"{"items": [1], "links": {"next": ""}}"#, paging).hasNext, false)
    }

    func testLinkStrategyFollowsRelNext() throws {
        let paging = Paging(strategy: .link, items: "")
        let github = #"<https://api.github.com/repositories/1000/issues?per_page=3&page=2>; rel="next", <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel="last""#
        let next = try advance("[1, 2, 3]", paging, headers: [("Link", github)])
        XCTAssertEqual(next, Advance(next: .string("https://api.github.com/repositories/1000/issues?per_page=3&page=2"), hasNext: true))
        // Header names are case-insensitive.
        XCTAssertEqual(try advance("[1]", paging, headers: [("link", "<https://x/2>; rel=next")]).next, .string("https://x/2"))
        // No next link is the end, whatever `last` says.
        let lastPage = #"<https://x/1>; rel="first", <https://x/4>; rel="prev", <https://x/5>; rel="last""#
        XCTAssertEqual(try advance("[1]", paging, headers: [("Link", lastPage)]), Advance(next: nil, hasNext: false))
        XCTAssertEqual(try advance("[1]", paging), Advance(next: nil, hasNext: false))
        // Other headers are ignored.
        XCTAssertEqual(try advance("[1]", paging, headers: [("X-Link", "<https://x/2>; rel=next")]).hasNext, false)
    }

    // MARK: decode

    func testDecodeReadsItemsAsCompactBytes() throws {
        let page = try decode(#"{"items": [ {"id" : 1, "s": "a\nb"} , [ 2 ] , "three", null ], "x": 1}"#, Paging(strategy: .cursor))
        XCTAssertEqual(page.items.map(\.description), [#"{"id":1,"s":"a\nb"}"#, "[2]", #""three""#, "null"])
        let whole = try decode(#"[{"id": 1}, {"id": 2}]"#, Paging(strategy: .cursor, items: ""))
        XCTAssertEqual(itemIds(whole.items), [1, 2], "items \"\" is the page itself")
    }

    func testDecodeReadsIdsWhenAskedFor() throws {
        let paging = Paging(strategy: .cursor, id: "/id")
        let page = try decode(#"{"items": [{"id": 1}, {"id": "b"}, {"no": 0}, {"id": null}]}"#, paging, dedupe: true)
        XCTAssertEqual(page.ids, [.integer(1), .string("b"), nil, nil])
        let plain = try decode(#"{"items": [{"id": 1}]}"#, paging)
        XCTAssertEqual(plain.ids, [], "ids are read only for dedupe")
        XCTAssertNil(plain.lastItemId, "only the lastId strategy reads the last item's id")
        let keyset = try decode(#"{"items": [{"id": 1}, {"id": 2}]}"#, Paging(strategy: .lastId, id: "/id"))
        XCTAssertEqual(keyset.lastItemId, .integer(2))
    }

    func testDecodeErrorNotJSONCarriesLineAndColumn() {
        let failure = decodingFailure("{\"items\": [1,\n2,\n  tru]}", Paging(strategy: .cursor))
        XCTAssertEqual(failure?.line, 3)
        XCTAssertEqual(failure?.column, 5)
        XCTAssertNil(failure?.pointer)
        XCTAssertTrue(failure?.message.contains("not JSON") ?? false, failure?.message ?? "")
        let garbage = decodingFailure("<html>502 Bad Gateway</html>", Paging(strategy: .cursor))
        XCTAssertEqual(garbage?.line, 1)
        XCTAssertEqual(garbage?.column, 1)
        XCTAssertNotNil(decodingFailure("", Paging(strategy: .cursor)))
        XCTAssertNotNil(decodingFailure(#"{"items": []} {"items": []}"#, Paging(strategy: .cursor)))
    }

    func testDecodeErrorMissingItemsPointer() {
        let failure = decodingFailure(#"{"data": []}"#, Paging(strategy: .cursor, items: "/items"))
        XCTAssertEqual(failure?.pointer, "/items")
        XCTAssertTrue(failure?.message.contains("/items") ?? false, failure?.message ?? "")
        XCTAssertEqual(decodingFailure(#"{"data": []}"#, Paging(strategy: .cursor, items: "/data/0"))?.pointer, "/data/0")
    }

    func testDecodeErrorItemsNotAnArray() {
        for body in [#"{"items": {}}"#, #"{"items": "x"}"#, #"{"items": null}"#, #"{"items": 3}"#] {
            let failure = decodingFailure(body, Paging(strategy: .cursor))
            XCTAssertEqual(failure?.pointer, "/items", body)
            XCTAssertTrue(failure?.message.contains("array") ?? false, failure?.message ?? "")
        }
        XCTAssertEqual(decodingFailure(#"{"items": []}"#, Paging(strategy: .cursor, items: ""))?.pointer, "")
    }

    func testDecodeErrorHasNextNotABool() {
        let paging = Paging(strategy: .cursor, hasNext: "/has_more")
        for body in [#"{"items": [], "has_more": "yes"}"#, #"{"items": [], "has_more": 1}"#, #"{"items": [], "has_more": null}"#] {
            let failure = decodingFailure(body, paging)
            XCTAssertEqual(failure?.pointer, "/has_more", body)
        }
        XCTAssertEqual(decodingFailure(#"{"items": []}"#, paging)?.pointer, "/has_more", "missing hasNext")
    }

    func testDecodeErrorIdOfTheWrongKind() {
        let paging = Paging(strategy: .lastId)
        for body in [#"{"items": [{"id": 1.5}]}"#, #"{"items": [{"id": {}}]}"#, #"{"items": [{"id": [1]}]}"#, #"{"items": [{"id": true}]}"#] {
            let failure = decodingFailure(body, paging)
            XCTAssertEqual(failure?.pointer, "/id", body)
        }
        // lastId needs the last item's id.
        XCTAssertEqual(decodingFailure(#"{"items": [{"id": 1}, {"name": "x"}]}"#, paging)?.pointer, "/id")
        // dedupe reads every id.
        XCTAssertEqual(decodingFailure(#"{"items": [{"id": 1.5}, {"id": 2}]}"#, Paging(strategy: .cursor, id: "/id"), dedupe: true)?.pointer, "/id")
    }

    func testDecodeErrorNextOfTheWrongKind() {
        let failure = decodingFailure(#"{"items": [], "next_cursor": {"a": 1}}"#, Paging(strategy: .cursor))
        XCTAssertEqual(failure?.pointer, "/next_cursor")
    }

    func testDecodeErrorTotalNotANumber() {
        let paging = Paging(strategy: .page, total: "/total")
        XCTAssertEqual(decodingFailure(#"{"items": [], "total": "12"}"#, paging)?.pointer, "/total")
        XCTAssertEqual(decodingFailure(#"{"items": []}"#, paging)?.pointer, "/total")
    }

    // MARK: Client.send

    func testDefaultSendFetchesThenDecodes() async throws {
        let client = ScriptedClient([.page([1, 2], next: "n")])
        let page = try await client.send(PageRequest(cursor: nil, isFirstPage: true, paging: Paging(strategy: .cursor), options: CollectionOptions()))
        XCTAssertEqual(itemIds(page.items), [1, 2])
        XCTAssertEqual(page.next, .string("n"))
    }

    func testDefaultSendThrowsCancelledWhenTheTaskIsCancelled() async throws {
        let client = ScriptedClient([.page([1], next: nil)])
        let task = Task { () async throws -> UpstreamPage in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(PageRequest(cursor: nil, isFirstPage: true, paging: Paging(strategy: .cursor), options: CollectionOptions()))
        }
        do {
            _ = try await task.value
            XCTFail("a cancelled send delivered a page")
        } catch let error as LoadError {
            XCTAssertEqual(error, .cancelled)
        }
    }
}

/// Calls a strategy's `firstCursor` through the existential, as `PagedCollection` does.
private enum PagingStrategyProbe {
    static func firstCursor(_ paging: Paging) -> Cursor? { paging.strategy.implementation.firstCursor(paging) }
}

final class CursorTests: XCTestCase {
    func testCursorFromJSON() throws {
        func cursor(_ text: String?) -> Result<Cursor?, CursorKindError> {
            Cursor.from(text.flatMap { try? JSON.parse($0) })
        }
        XCTAssertEqual(try cursor(#""abc""#).get(), .string("abc"))
        XCTAssertEqual(try cursor("17").get(), .integer(17))
        XCTAssertNil(try cursor(#""""#).get())
        XCTAssertNil(try cursor("null").get())
        XCTAssertNil(try cursor(nil).get())
        for text in ["1.5", "true", "[]", "{}"] {
            guard case .failure = cursor(text) else { return XCTFail("\(text) is not a cursor") }
        }
    }

    func testCursorText() {
        XCTAssertEqual(Cursor.string("a b").text, "a b")
        XCTAssertEqual(Cursor.integer(-3).text, "-3")
        XCTAssertEqual(Cursor.integer(5).integerValue, 5)
        XCTAssertEqual(Cursor.string("12").integerValue, 12)
        XCTAssertNil(Cursor.string("x").integerValue)
        XCTAssertEqual(Cursor.string("q\"").json.description, #""q\"""#)
        XCTAssertEqual(Cursor.integer(9).json.description, "9")
        XCTAssertNotEqual(Cursor.string("1"), Cursor.integer(1))
    }
}
