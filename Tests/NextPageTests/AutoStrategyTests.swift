import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// `"strategy": "auto"`: what each first page picks, the hints that win,
/// what a page matching nothing is told, and walks over a real HTTP server
/// (the pick made once per walk, kept across pages and restored states).
///
/// First pages are the shapes of real APIs, cut down: GitHub's REST lists
/// (a top-level array, RFC 8288 `Link` header; docs.github.com, "Using
/// pagination in the REST API"), Stripe's list object (`object`, `data`,
/// `has_more`, `url`; docs.stripe.com/api/pagination), Slack's Web API
/// (`response_metadata.next_cursor`, `""` on the last page;
/// api.slack.com/docs/pagination), Microsoft Graph (`value`,
/// `@odata.nextLink`, absent on the last page; learn.microsoft.com/graph/paging),
/// JSON:API (`data`, `included`, `links.next`, null on the last page;
/// jsonapi.org/format, "Pagination"), Notion (`results`, `next_cursor`,
/// `has_more`; the recording in NextPageServerTests/HTTPFixtures), Django
/// REST framework (`next`, `results`), and cursor envelopes under
/// `pagination` and `meta`.
final class AutoStrategyTests: HTTPSourceTestCase {
    private func pick(_ body: String, headers: [(name: String, value: String)] = [], hints: Paging = Paging(strategy: .auto)) throws -> PagingPick {
        PagingPick(try AutoStrategy.pick(UpstreamResponse(status: 200, headers: headers, body: Array(body.utf8)), hints: hints))
    }

    private func failure(_ body: String, headers: [(name: String, value: String)] = [], hints: Paging = Paging(strategy: .auto)) -> LoadError? {
        do {
            let picked = try AutoStrategy.pick(UpstreamResponse(status: 200, headers: headers, body: Array(body.utf8)), hints: hints)
            XCTFail("picked \(PagingPick(picked)) for \(body)")
            return nil
        } catch {
            return error
        }
    }

    // MARK: What each shape picks

    func testEachShapePicksItsStrategyAndItems() throws {
        let github = [(name: "Link", value: #"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#)]
        let cases: [(String, String, [(name: String, value: String)], PagingPick)] = [
            ("GitHub", #"[{"number": 3}, {"number": 2}]"#, github, PagingPick(strategy: .link, items: "")),
            ("GitHub, last page", #"[{"number": 1}]"#, [("link", #"<https://api.github.com/x?page=4>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#)],
             PagingPick(strategy: .link, items: "")),
            ("Stripe", #"{"object": "list", "url": "/v1/customers", "has_more": true, "data": [{"id": "cus_1"}]}"#, [],
             PagingPick(strategy: .lastId, items: "/data", param: "starting_after", id: "/id", hasNext: "/has_more")),
            ("Slack", #"{"ok": true, "channels": [{"id": "C1"}], "response_metadata": {"next_cursor": "dGVhbTpDMDYx"}}"#, [],
             PagingPick(strategy: .cursor, items: "/channels", next: "/response_metadata/next_cursor", param: "cursor")),
            ("Slack, last page", #"{"ok": true, "members": [], "response_metadata": {"next_cursor": ""}}"#, [],
             PagingPick(strategy: .cursor, items: "/members", next: "/response_metadata/next_cursor", param: "cursor")),
            ("Graph", #"{"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users", "value": [{"id": "u1"}], "@odata.nextLink": "https://graph.microsoft.com/v1.0/users?$skiptoken=X"}"#, [],
             PagingPick(strategy: .nextUrl, items: "/value", next: "/@odata.nextLink")),
            ("JSON:API", #"{"data": [{"type": "articles", "id": "1"}], "included": [{"type": "people", "id": "9"}], "links": {"self": "https://e.com/a", "next": "https://e.com/a?page%5Bnumber%5D=2"}}"#, [],
             PagingPick(strategy: .nextUrl, items: "/data", next: "/links/next")),
            ("JSON:API, last page", #"{"data": [], "included": [], "links": {"next": null}}"#, [],
             PagingPick(strategy: .nextUrl, items: "/data", next: "/links/next")),
            ("Notion", #"{"object": "list", "results": [{"id": "b1"}], "next_cursor": "b2", "has_more": true, "type": "block", "block": {}}"#, [],
             PagingPick(strategy: .cursor, items: "/results", next: "/next_cursor", param: "cursor")),
            ("DRF", #"{"count": 9, "next": "/api/items/?page=2", "previous": null, "results": [{"id": 1}]}"#, [],
             PagingPick(strategy: .nextUrl, items: "/results", next: "/next")),
            ("integer nextCursor", #"{"items": [{"id": 1}], "nextCursor": 40}"#, [],
             PagingPick(strategy: .cursor, items: "/items", next: "/nextCursor", param: "cursor")),
            ("pagination envelope", #"{"data": [{"id": 1}], "pagination": {"next_cursor": "p2"}}"#, [],
             PagingPick(strategy: .cursor, items: "/data", next: "/pagination/next_cursor", param: "cursor")),
            ("pagination next URL", #"{"records": [{"id": 1}], "pagination": {"next": "https://e.com/r?page=2"}}"#, [],
             PagingPick(strategy: .nextUrl, items: "/records", next: "/pagination/next")),
            ("meta envelope", #"{"entries": [{"id": 1}], "meta": {"next_cursor": "m2"}}"#, [],
             PagingPick(strategy: .cursor, items: "/entries", next: "/meta/next_cursor", param: "cursor")),
            ("several arrays, a known name", #"{"tags": ["a"], "items": [{"id": 1}], "cursor": "k2"}"#, [],
             PagingPick(strategy: .cursor, items: "/items", next: "/cursor", param: "cursor")),
            ("an odd member name", #"{"a/b~c": [1], "next_cursor": "z"}"#, [],
             PagingPick(strategy: .cursor, items: "/a~1b~0c", next: "/next_cursor", param: "cursor")),
        ]
        for (name, body, headers, expected) in cases {
            XCTAssertEqual(try pick(body, headers: headers), expected, name)
        }
    }

    func testALiveSignalWinsOverALastPageSign() throws {
        // `/next` holds null, `/next_cursor` a cursor: the cursor is followed.
        XCTAssertEqual(try pick(#"{"items": [1], "next": null, "next_cursor": "c2"}"#).strategy, .cursor)
        // A next link wins over any body pointer.
        XCTAssertEqual(try pick(#"{"items": [1], "next_cursor": "c2"}"#, headers: [("Link", "<https://e.com/2>; rel=\"next\"")]).strategy, .link)
        // A next URL wins over a cursor.
        XCTAssertEqual(try pick(#"{"items": [1], "next_cursor": "c2", "links": {"next": "https://e.com/2"}}"#).next, "/links/next")
        // A value at /next that is no URL is not a next URL (and /next is not a cursor pointer).
        XCTAssertEqual(try pick(#"{"items": [1], "next": "abc", "cursor": "k"}"#).next, "/cursor")
    }

    // MARK: Hints

    func testFieldsGivenInTheDefinitionWin() throws {
        XCTAssertEqual(try pick(#"{"rows": [1], "more": {"data": [2]}, "next_cursor": "c"}"#, hints: Paging(strategy: .auto, items: "/more/data")).items, "/more/data")
        XCTAssertEqual(
            try pick(#"{"items": [1], "page": {"after": "https://e.com/p2"}}"#, hints: Paging(strategy: .auto, next: "/page/after")),
            PagingPick(strategy: .nextUrl, items: "/items", next: "/page/after"))
        XCTAssertEqual(
            try pick(#"{"items": [1], "page": {"after": "a2"}}"#, hints: Paging(strategy: .auto, param: "after", next: "/page/after")),
            PagingPick(strategy: .cursor, items: "/items", next: "/page/after", param: "after"))
        // A hinted place that holds nothing: the walk picks `cursor` and ends with this page.
        XCTAssertEqual(try pick(#"{"items": [1]}"#, hints: Paging(strategy: .auto, next: "/page/after")).strategy, .cursor)
        XCTAssertEqual(
            try pick(#"{"items": [1]}"#, headers: [("X-Next-Cursor", "h2")], hints: Paging(strategy: .auto, nextHeader: "X-Next-Cursor")),
            PagingPick(strategy: .cursor, items: "/items", nextHeader: "X-Next-Cursor", param: "cursor"))
        XCTAssertEqual(
            try pick(#"{"items": [1]}"#, headers: [("X-Next-Page", "https://e.com/p2")], hints: Paging(strategy: .auto, nextHeader: "X-Next-Page")),
            PagingPick(strategy: .nextUrl, items: "/items", nextHeader: "X-Next-Page"))
        XCTAssertEqual(
            try pick(#"{"data": [{"uid": 1}], "meta": {"more": true}}"#, hints: Paging(strategy: .auto, param: "after", id: "/uid", hasNext: "/meta/more")),
            PagingPick(strategy: .lastId, items: "/data", param: "after", id: "/uid", hasNext: "/meta/more"))
    }

    // MARK: Pages that match nothing

    func testAFirstPageMatchingNothingNamesWhatWasLookedFor() throws {
        for (body, headers) in [
            (#"{"items": [1, 2]}"#, [(name: String, value: String)]()),
            (#"[1, 2]"#, []),
            (#"{"items": [1], "next": "not a url", "cursor": {"after": "x"}, "has_more": "yes"}"#, []),
            (#"{"items": [1]}"#, [("Link", #"<https://cdn.e.com/app.css>; rel="preload""#)]),
        ] {
            guard case .definition(let field, let expected)? = failure(body, headers: headers) else {
                XCTFail("no definition error for \(body)")
                continue
            }
            XCTAssertEqual(field, "paging.strategy")
            XCTAssertEqual(expected, AutoStrategy.expectedPaging)
        }
        for named in ["rel=\"next\""] + AutoStrategy.nextURLPointers + AutoStrategy.cursorPointers + ["/has_more", "paging.next", "paging.nextHeader"] {
            XCTAssert(AutoStrategy.expectedPaging.contains(named), "\(named) is not named in: \(AutoStrategy.expectedPaging)")
        }
        guard case .definition(let field, let expected)? = failure(#"{"a": [1], "b": [2], "next_cursor": "c"}"#) else {
            return XCTFail("no definition error for the items")
        }
        XCTAssertEqual(field, "paging.items")
        XCTAssertEqual(expected, AutoStrategy.expectedItems)
        for named in AutoStrategy.itemNames { XCTAssert(expected.contains("/" + named), named) }
        guard case .undecodable(let notJSON)? = failure("<html>\n<body>") else { return XCTFail("HTML was understood") }
        XCTAssertEqual(notJSON.line, 1)
    }

    // MARK: Walks over a real server

    /// A Stripe-style list of customers 1...5, two to a page.
    static let stripeScript: HTTPTestServer.Script = { request in
        let all = (1...5).map { #"{"id": "cus_\#($0)", "object": "customer"}"# }
        let start = request.queryValue("starting_after").flatMap { Int($0.dropFirst(4)) } ?? 0
        guard start < all.count else { return .status(400, body: "no such customer") }
        let page = all[start..<min(start + 2, all.count)]
        return .json(#"{"object": "list", "url": "/v1/customers", "has_more": \#(start + 2 < all.count), "data": [\#(page.joined(separator: ","))]}"#)
    }

    func testAStripeListIsWalkedByLastIdAndThePickIsKeptAcrossPages() async throws {
        try await withServer(Self.stripeScript) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/v1/customers?limit=2"), Paging(strategy: .auto), transport: transport)
            let fresh = await collection.state
            XCTAssertTrue(fresh.picksPaging)
            XCTAssertNil(fresh.pick)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["cus_1", "cus_2", "cus_3", "cus_4", "cus_5"], "each item once, in order")
            XCTAssertEqual(server.requests.map(\.uri), [
                "/v1/customers?limit=2", "/v1/customers?limit=2&starting_after=cus_2", "/v1/customers?limit=2&starting_after=cus_4",
            ])
            let state = await collection.state
            XCTAssertEqual(state.pick, PagingPick(strategy: .lastId, items: "/data", param: "starting_after", id: "/id", hasNext: "/has_more"))
            XCTAssertEqual(state.count, 5)

            // A reset forgets the pick; the next walk decides again from its own first page.
            await collection.reset()
            let reset = await collection.state
            XCTAssertNil(reset.pick)
            XCTAssertTrue(reset.picksPaging)
            _ = try await collection.loadNext()
            XCTAssertEqual(server.requests.count, 4)
            let again = await collection.state
            XCTAssertEqual(again.pick?.strategy, .lastId)
        }
    }

    func testAFirstPageMatchingNothingFailsAndTheCollectionKeepsItsPlace() async throws {
        let shape = NIOLockedValueBox(#"{"items": [{"id": 1}]}"#)
        try await withServer({ _ in .json(shape.withLockedValue { $0 }) }) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .auto), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("a page matching nothing landed")
            } catch let error as LoadError {
                XCTAssertEqual(error, .definition(field: "paging.strategy", expected: AutoStrategy.expectedPaging))
            }
            let state = await collection.state
            XCTAssertEqual(state.count, 0, "nothing landed")
            XCTAssertEqual(state.pages, 0)
            XCTAssertTrue(state.hasNext)
            XCTAssertNil(state.lastId)
            XCTAssertNil(state.pick)
            XCTAssertEqual(state.lastError, "paging.strategy: expected " + AutoStrategy.expectedPaging)
            let kept = await collection.items(offset: 0, limit: nil)
            XCTAssertEqual(kept.items.count, 0)

            // Once the source shows how it pages, the same collection walks it.
            shape.withLockedValue { $0 = #"{"items": [{"id": 1}], "next_cursor": null}"# }
            let page = try await collection.loadNext()
            XCTAssertEqual(Self.ids(page.items), ["1"])
            XCTAssertFalse(page.state.hasNext)
            XCTAssertNil(page.state.lastError)
            XCTAssertEqual(server.requests.count, 2)
        }
    }

    func testARestoredPickIsWalkedOnWithoutDecidingAgain() async throws {
        try await withServer({ request in
            // The page a resumed walk asks for has no paging signs of its own: only the saved pick can walk it.
            request.queryValue("after") == "k2" ? .json(#"{"rows": [{"id": 3}], "later": "k3"}"#) : .json(#"{"rows": [{"id": 4}]}"#)
        }) { server, transport in
            let definition = Paging(strategy: .auto, param: "after")
            let collection = collection(HTTPSource(url: server.baseURL + "/rows"), definition, transport: transport)
            var saved = NextPageState()
            saved.lastId = .string("k2")
            saved.count = 2
            saved.pages = 1
            saved.pick = PagingPick(strategy: .cursor, items: "/rows", next: "/later", param: "after")
            await collection.restore(saved)
            let restored = await collection.state
            XCTAssertTrue(restored.picksPaging)
            XCTAssertEqual(restored.pick, saved.pick)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["3", "4"])
            XCTAssertEqual(server.requests.map(\.uri), ["/rows?after=k2", "/rows?after=k3"])
        }
    }

    func testLoadWithAURLAsLastIdAndNothingPickedRequestsThatURL() async throws {
        try await withServer({ request in
            switch request.uri {
            case "/a?page=2": return .json(#"{"value": [{"id": 2}], "@odata.nextLink": "/a?page=3"}"#)
            case "/a?page=3": return .json(#"{"value": [{"id": 3}]}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/a"), Paging(strategy: .auto), transport: transport)
            let first = try await collection.load(lastId: .string(server.baseURL + "/a?page=2"))
            XCTAssertEqual(Self.ids(first.items), ["2"])
            XCTAssertEqual(first.state.pick, PagingPick(strategy: .nextUrl, items: "/value", next: "/@odata.nextLink"))
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/a?page=2", "/a?page=3"])
        }
    }

    func testReadAheadOfAFileLikeSourceWalksWithTheFirstPagesPick() async throws {
        // A source without effects is read ahead while a page is checked: the
        // page fetched ahead must already go by the first page's pick.
        // Pages 2 and 3 hold two arrays of no known name: deciding again
        // from one of them would not find the items.
        let pages: [String: String] = [
            "": #"{"things": [{"id": 1}], "next": "/p2"}"#,
            "/p2": #"{"things": [{"id": 2}], "other": [0], "next": "/p3"}"#,
            "/p3": #"{"things": [{"id": 3}], "other": [0], "next": null}"#,
        ]
        let client = ScriptedPages(pages: pages)
        let collection = PagedCollection(name: "ahead", client: client, paging: Paging(strategy: .auto))
        await collection.streamingDemand(1)
        var ids: [String] = []
        while true {
            let page = try await collection.loadNext()
            ids += Self.ids(page.items)
            if !page.state.hasNext { break }
        }
        XCTAssertEqual(ids, ["1", "2", "3"])
        XCTAssertEqual(client.asked, ["", "/p2", "/p3"])
    }
}

/// A source without effects that answers each cursor (a next URL) from a table.
private final class ScriptedPages: Client, Sendable {
    let pages: [String: String]
    private let lock = NIOLockedValueBox<[String]>([])

    init(pages: [String: String]) {
        self.pages = pages
    }

    var asked: [String] { lock.withLockedValue { $0 } }
    var fetchesHaveNoEffects: Bool { true }

    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        let key = request.cursor?.text ?? ""
        lock.withLockedValue { $0.append(key) }
        guard let page = pages[key] else { throw LoadError.upstream(UpstreamFailure(retryable: false, message: "no page \(key)")) }
        return UpstreamResponse(status: 200, body: Array(page.utf8))
    }
}
