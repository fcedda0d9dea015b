import Jansson
import NextPage
import XCTest

/// Every paging strategy over a real HTTP server, driven through
/// `PagedCollection`: the exact items delivered, the exact requests made.
final class HTTPStrategyTests: HTTPSourceTestCase {
    // MARK: cursor

    func testCursorStrategyPagesThroughInOrder() async throws {
        try await withServer({ request in
            switch request.queryValue("cursor") {
            case nil: return .json(#"{"items": \#(Self.items([1, 2])), "next_cursor": "c2"}"#)
            case "c2": return .json(#"{"items": \#(Self.items([3, 4])), "next_cursor": "c3"}"#)
            case "c3": return .json(#"{"items": \#(Self.items([5])), "next_cursor": null}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(result.pages, 3)
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3"])
            XCTAssertEqual(server.requests.map(\.method), ["GET", "GET", "GET"])
            XCTAssertEqual(server.requests.first?.header("Accept"), "application/json")
        }
    }

    func testFinalPageThatStillCarriesACursorEndsByHasNext() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2])), "next_cursor": "c2", "has_more": true}"#),
            .json(#"{"items": \#(Self.items([3])), "next_cursor": "c3", "has_more": false}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .cursor, hasNext: "/has_more"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2"])
            let state = await collection.state
            XCTAssertFalse(state.hasNext)
            XCTAssertNil(state.lastId)
        }
    }

    func testEmptyPageIsNotTheEndWhileTheSourceSaysMore() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1])), "next_cursor": "c2", "has_more": true}"#),
            .json(#"{"items": [], "next_cursor": "c3", "has_more": true}"#),
            .json(#"{"items": \#(Self.items([2])), "next_cursor": null, "has_more": false}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .cursor, hasNext: "/has_more"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(result.pages, 3)
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3"])
        }
    }

    func testCursorWithReservedAndNonASCIIBytesIsPercentEncodedInTheQuery() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1])), "next_cursor": "a&b#c=d+e f/ü€%"}"#),
            .json(#"{"items": \#(Self.items([2])), "next_cursor": null}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items?sort=a+b&x=%7E")
            let collection = collection(source, Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.count, 2)
            // Existing query items are kept byte for byte; the cursor is encoded outside A-Z a-z 0-9 - . _ ~.
            XCTAssertEqual(server.requests[1].uri, "/items?sort=a+b&x=%7E&cursor=a%26b%23c%3Dd%2Be%20f%2F%C3%BC%E2%82%AC%25")
            XCTAssertEqual(server.requests[1].query, "sort=a+b&x=%7E&cursor=a%26b%23c%3Dd%2Be%20f%2F%C3%BC%E2%82%AC%25")
        }
    }

    func testBracketsAndDollarNamesInTheURLKeepTheCursorEncodedOnce() async throws {
        try await withServer({ request in
            if request.path == "/n" || request.queryValue("cursor") != nil || request.uri.hasSuffix("skip=1&%24top=1") {
                return .json(#"{"items": \#(Self.items([2])), "next_cursor": null, "next": null}"#)
            }
            return .json(#"{"items": \#(Self.items([1])), "next_cursor": "a+b", "next": "/n?page[number]=2&q=a%2Bb"}"#)
        }) { server, transport in
            // JSON:API-style brackets: the cursor went out as `a%252Bb` when the client encoded the query again.
            let source = HTTPSource(url: server.baseURL + "/x?filter[state]=open")
            let cursor = try await loadAll(collection(source, Paging(strategy: .cursor), transport: transport))
            XCTAssertEqual(cursor.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/x?filter%5Bstate%5D=open", "/x?filter%5Bstate%5D=open&cursor=a%2Bb"])

            let next = try await loadAll(collection(source, Paging(strategy: .nextUrl, next: "/next"), transport: transport))
            XCTAssertEqual(next.ids, ["1", "2"])
            XCTAssertEqual(server.requests.last?.uri, "/n?page%5Bnumber%5D=2&q=a%2Bb")

            // OData-style `$skip` in the URL is replaced by the offset, not sent twice.
            let odata = HTTPSource(url: server.baseURL + "/users?$skip=0")
            let offset = collection(
                odata, Paging(strategy: .offset, param: "$skip", limitParam: "$top"), options: CollectionOptions(pageSize: 1), transport: transport)
            _ = try await offset.loadNext()
            _ = try await offset.loadNext()
            XCTAssertEqual(server.requests.suffix(2).map(\.uri), ["/users?%24skip=0&%24top=1", "/users?%24skip=1&%24top=1"])
        }
    }

    // MARK: lastId

    func testLastIdStrategyWithHasNextPointerAndPageSize() async throws {
        try await withServer({ request in
            switch request.queryValue("since_id") {
            case nil: return .json(#"{"items": \#(Self.items([1, 2])), "has_more": true}"#)
            case "2": return .json(#"{"items": \#(Self.items([3, 4])), "has_more": true}"#)
            case "4": return .json(#"{"items": \#(Self.items([5])), "has_more": false}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items?sort=asc", query: [("filter", "open issues")])
            let collection = collection(
                source, Paging(strategy: .lastId, hasNext: "/has_more"),
                options: CollectionOptions(pageSize: 2, pageSizeParam: "per_page"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), [
                "/items?sort=asc&filter=open%20issues&per_page=2",
                "/items?sort=asc&filter=open%20issues&since_id=2&per_page=2",
                "/items?sort=asc&filter=open%20issues&since_id=4&per_page=2",
            ])
        }
    }

    func testLastIdStrategyEndsOnAShortPage() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2]))}"#),
            .json(#"{"items": \#(Self.items([3]))}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(
                source, Paging(strategy: .lastId, param: "after"),
                options: CollectionOptions(pageSize: 2, pageSizeParam: "limit"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?limit=2", "/items?after=2&limit=2"])
        }
    }

    // MARK: page

    func testPageStrategyStartsAtOneAndEndsOnAShortPage() async throws {
        try await withServer({ request in
            switch request.queryValue("page") {
            case "1": return .json(#"{"items": \#(Self.items([1, 2]))}"#)
            case "2": return .json(#"{"items": \#(Self.items([3, 4]))}"#)
            case "3": return .json(#"{"items": \#(Self.items([5]))}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(
                source, Paging(strategy: .page), options: CollectionOptions(pageSize: 2, pageSizeParam: "size"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), ["/items?page=1&size=2", "/items?page=2&size=2", "/items?page=3&size=2"])
        }
    }

    func testPageStrategyEndsWhenTotalIsReached() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2])), "total": 4}"#),
            .json(#"{"items": \#(Self.items([3, 4])), "total": 4}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .page, param: "p", total: "/total"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3", "4"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?p=1", "/items?p=2"])
        }
    }

    func testPageStrategyEndsOnAnEmptyPage() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2]))}"#),
            .json(#"{"items": []}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .page, start: 0), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?page=0", "/items?page=1"])
        }
    }

    // MARK: offset

    func testOffsetStrategySendsOffsetAndLimit() async throws {
        try await withServer({ request in
            switch request.queryValue("offset") {
            case "0": return .json(#"{"items": \#(Self.items([1, 2]))}"#)
            case "2": return .json(#"{"items": \#(Self.items([3, 4]))}"#)
            case "4": return .json(#"{"items": \#(Self.items([5]))}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(
                source, Paging(strategy: .offset), options: CollectionOptions(pageSize: 2), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), [
                "/items?offset=0&limit=2", "/items?offset=2&limit=2", "/items?offset=4&limit=2",
            ])
        }
    }

    func testOffsetStrategyEndsByHasNextAndTotal() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2, 3])), "more": true}"#),
            .json(#"{"items": \#(Self.items([4, 5, 6])), "more": false}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(
                source, Paging(strategy: .offset, param: "skip", limitParam: "take", hasNext: "/more"),
                options: CollectionOptions(pageSize: 3), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...6))
            XCTAssertEqual(server.requests.map(\.uri), ["/items?skip=0&take=3", "/items?skip=3&take=3"])
        }
        try await withServer(answers: [
            .json(#"{"data": \#(Self.items([1, 2])), "count": 3}"#),
            .json(#"{"data": \#(Self.items([3])), "count": 3}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(
                source, Paging(strategy: .offset, items: "/data", total: "/count"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?offset=0", "/items?offset=2"])
        }
    }

    func testOffsetStrategyEndsOnAnEmptyPage() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2, 3]))}"#),
            .json(#"{"items": []}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .offset), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?offset=0", "/items?offset=3"])
        }
    }

    // MARK: link

    func testLinkStrategyFollowsNextLinksVerbatimAndIgnoresABackwardsLast() async throws {
        try await withServer({ request in
            let base = "http://127.0.0.1:\(request.header("Host")?.split(separator: ":").last ?? "0")"
            switch request.uri {
            case "/issues?per_page=2":
                // `last` points backwards; only `next` counts.
                return .json(Self.items([1, 2]), headers: [
                    ("Link", "<\(base)/repositories/7/issues?per_page=2&page=2>; rel=\"next\", <\(base)/issues?per_page=2&page=1>; rel=\"last\""),
                ])
            case "/repositories/7/issues?per_page=2&page=2":
                // A relative next link with an encoded byte and a character that needs no encoding.
                return .json(Self.items([3, 4]), headers: [
                    ("Link", "</repositories/7/issues?per_page=2&page=3&q=a%2Bb~>; rel=\"next\", </issues?per_page=2&page=1>; rel=\"first\""),
                ])
            case "/repositories/7/issues?per_page=2&page=3&q=a%2Bb~":
                return .json(Self.items([5]), headers: [("Link", "</issues?per_page=2&page=1>; rel=\"first\", </repositories/7/issues?page=2>; rel=\"prev\"")])
            default:
                return .status(404, body: "no \(request.uri)")
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/issues", query: [("per_page", "2")])
            let collection = collection(source, Paging(strategy: .link, items: ""), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), [
                "/issues?per_page=2", "/repositories/7/issues?per_page=2&page=2", "/repositories/7/issues?per_page=2&page=3&q=a%2Bb~",
            ])
        }
    }

    // MARK: nextUrl

    func testNextURLStrategyFollowsAbsoluteAndRelativeURLs() async throws {
        try await withServer({ request in
            let base = "http://127.0.0.1:\(request.header("Host")?.split(separator: ":").last ?? "0")"
            switch request.uri {
            case "/v1/items?limit=2":
                return .json(#"{"items": \#(Self.items([1, 2])), "links": {"next": "\#(base)/v1/items?after=b&limit=2"}}"#)
            case "/v1/items?after=b&limit=2":
                return .json(#"{"items": \#(Self.items([3, 4])), "links": {"next": "more?after=d&limit=2"}}"#)
            case "/v1/more?after=d&limit=2":
                return .json(#"{"items": \#(Self.items([5])), "links": {"next": null}}"#)
            default:
                return .status(404, body: "no \(request.uri)")
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/v1/items?limit=2", headers: [("X-Tenant", "acme")])
            let collection = collection(source, Paging(strategy: .nextUrl, next: "/links/next"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), ["/v1/items?limit=2", "/v1/items?after=b&limit=2", "/v1/more?after=d&limit=2"])
            // Headers are kept on followed URLs.
            XCTAssertEqual(server.requests.map { $0.header("X-Tenant") }, ["acme", "acme", "acme"])
        }
    }

    // MARK: Where the cursor goes

    func testPostWithCursorAtABodyPointerGraphQLStyle() async throws {
        func page(_ ids: [Int], end: String, more: Bool) -> HTTPScriptedAnswer {
            let nodes = Self.items(ids)
            return .json(#"{"data": {"x": {"nodes": \#(nodes), "pageInfo": {"hasNextPage": \#(more), "endCursor": "\#(end)"}}}}"#)
        }
        try await withServer(answers: [
            page([1, 2], end: "Y3Vyc29yOjI=", more: true),
            page([3, 4], end: "Y3Vyc29yOjQ=", more: true),
            page([5], end: "Y3Vyc29yOjU=", more: false),
        ]) { server, transport in
            let body = RawJSON(trusted: Array(#"{"query":"query($after: String) { x(first: 2, after: $after) { nodes { id } } }","variables":{"first":2}}"#.utf8))
            let source = HTTPSource(url: server.baseURL + "/graphql", method: .post, body: body)
            let paging = Paging(
                strategy: .cursor, bodyPointer: "/variables/after", items: "/data/x/nodes",
                next: "/data/x/pageInfo/endCursor", hasNext: "/data/x/pageInfo/hasNextPage")
            let collection = collection(source, paging, transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5))
            let requests = server.requests
            XCTAssertEqual(requests.map(\.method), ["POST", "POST", "POST"])
            XCTAssertEqual(requests.map(\.uri), ["/graphql", "/graphql", "/graphql"])
            XCTAssertEqual(requests.map { $0.header("Content-Type") }, ["application/json", "application/json", "application/json"])
            let variables = try requests.map { try JSON.parse($0.body).pointer("/variables")!.compactString }
            XCTAssertEqual(variables, [
                #"{"first":2}"#, #"{"first":2,"after":"Y3Vyc29yOjI="}"#, #"{"first":2,"after":"Y3Vyc29yOjQ="}"#,
            ])
            XCTAssertEqual(try JSON.parse(requests[0].body).pointer("/query")?.string,
                           "query($after: String) { x(first: 2, after: $after) { nodes { id } } }")
        }
    }

    func testBodyPointerCreatesMissingObjectsAndSendsPageNumbersAsNumbers() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1, 2]))}"#),
            .json(#"{"items": []}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/search", method: .post)
            let collection = collection(source, Paging(strategy: .page, bodyPointer: "/paging/page"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/search", "/search"])
            XCTAssertEqual(server.requests.map(\.bodyText), [#"{"paging":{"page":1}}"#, #"{"paging":{"page":2}}"#])
        }
    }

    func testCursorInAHeaderIsSentVerbatim() async throws {
        let cursor = "a&b c+d=ü/%2B"
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1])), "next_cursor": "\#(cursor)"}"#),
            .json(#"{"items": \#(Self.items([2])), "next_cursor": null}"#),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items", query: [("q", "x")])
            let collection = collection(source, Paging(strategy: .cursor, header: "X-Page-Cursor"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?q=x", "/items?q=x"])
            XCTAssertEqual(server.requests.map { $0.header("X-Page-Cursor") }, [nil, cursor])
        }
    }

    func testConfiguredHeadersAndQueryArePlacedOnEveryRequest() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1])), "next_cursor": "n"}"#),
            .json(#"{"items": \#(Self.items([2])), "next_cursor": ""}"#),
        ]) { server, transport in
            let source = HTTPSource(
                url: server.baseURL + "/items?fixed=1#fragment", query: [("state", "all"), ("fixed", "2")],
                headers: [("Authorization", "Bearer abc123"), ("Accept", "application/vnd.example+json"), ("X-Trace", "t1")])
            let collection = collection(source, Paging(strategy: .cursor, param: "page_token"), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?fixed=2&state=all", "/items?fixed=2&state=all&page_token=n"])
            for request in server.requests {
                XCTAssertEqual(request.header("Authorization"), "Bearer abc123")
                XCTAssertEqual(request.header("Accept"), "application/vnd.example+json")
                XCTAssertEqual(request.header("X-Trace"), "t1")
                XCTAssertEqual(request.headers.filter { $0.name.lowercased() == "accept" }.count, 1)
            }
        }
    }
}
