import Jansson
import NextPage
import XCTest

/// `prefetch` over a real HTTP server: the next page is requested right
/// after a page is delivered, each page exactly once, none after the end,
/// and `reset` drops a prefetched page.
final class HTTPPrefetchTests: HTTPSourceTestCase {
    private static let threePages: HTTPTestServer.Script = { request in
        switch request.queryValue("cursor") {
        case nil: return .json(#"{"items": \#(items([1, 2])), "next_cursor": "c2"}"#)
        case "c2": return .json(#"{"items": \#(items([3, 4])), "next_cursor": "c3"}"#)
        case "c3": return .json(#"{"items": \#(items([5])), "next_cursor": null}"#)
        default: return .status(404)
        }
    }

    func testTheNextPageIsRequestedAfterDeliveryAndNothingAfterTheEnd() async throws {
        try await withServer(Self.threePages) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .cursor), options: CollectionOptions(prefetch: 1), transport: transport)
            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2"])
            // Nobody asked for page 2 yet: it is requested in the background.
            await server.waitForRequests(2)
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3", "4"])
            await server.waitForRequests(3)
            let third = try await collection.loadNext()
            XCTAssertEqual(Self.ids(third.items), ["5"])
            XCTAssertFalse(third.state.hasNext)
            let after = try await collection.loadNext()
            XCTAssertFalse(after.landed)
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3"],
                           "each page requested once, in order, and none after the last")
        }
    }

    func testResetBetweenDeliveryAndTheNextCallDropsThePrefetchedPage() async throws {
        try await withServer(Self.threePages) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let collection = collection(source, Paging(strategy: .cursor), options: CollectionOptions(prefetch: 1), transport: transport)
            _ = try await collection.loadNext()
            await server.waitForRequests(2)
            await collection.reset()
            let fresh = await collection.state
            XCTAssertEqual(fresh, NextPageState(), "the prefetched page did not land")
            let again = try await collection.loadNext()
            XCTAssertEqual(Self.ids(again.items), ["1", "2"])
            XCTAssertEqual(again.page, 1)
            let next = try await collection.loadNext()
            XCTAssertEqual(Self.ids(next.items), ["3", "4"])
            XCTAssertEqual(next.state.count, 4)
            let kept = await collection.items(offset: 0, limit: nil)
            XCTAssertEqual(Self.ids(kept.items), ["1", "2", "3", "4"])
            XCTAssertEqual(Array(server.requests.map(\.uri).prefix(4)),
                           ["/items", "/items?cursor=c2", "/items", "/items?cursor=c2"])
        }
    }
}
