import Jansson
import NextPage
import NIOConcurrencyHelpers
import XCTest

/// http sources over a real server: a `GET` page is read ahead while the
/// page before it is checked, as file pages are, and with `concurrency`
/// the pages a walk knows ahead (a `total`, GitHub's `Link` rel="last") are
/// requested several at once; a `POST` is sent only for a page asked for.
/// Every page is requested once and lands in order.
final class HTTPReadAheadTests: HTTPSourceTestCase {
    /// Three pages by cursor; the first time the first page is asked for,
    /// its items are not JSON when `brokenFirst`.
    private static func cursorPages(brokenFirst: Bool) -> HTTPTestServer.Script {
        let firstPages = NIOLockedValueBox(0)
        return { request in
            switch request.queryValue("cursor") {
            case nil:
                let time = firstPages.withLockedValue { count -> Int in
                    count += 1
                    return count
                }
                return .json(brokenFirst && time == 1
                    ? #"{"items": [{"id": 1}, {"id": tru}], "next_cursor": "c2"}"# : #"{"items": [{"id": 1}], "next_cursor": "c2"}"#)
            case "c2": return .json(#"{"items": \#(items([2])), "next_cursor": "c3"}"#)
            case "c3": return .json(#"{"items": \#(items([3])), "next_cursor": null}"#)
            default: return .status(404)
            }
        }
    }

    func testAGetPageIsReadAheadWhileThePageBeforeItIsCheckedAndDroppedWhenThatOneFails() async throws {
        try await withServer(Self.cursorPages(brokenFirst: true)) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            let first = await collection.enqueueLoadNext()
            let second = await collection.enqueueLoadNext()
            async let failing = collection.loadNext(first)
            async let retried = collection.loadNext(second)
            do {
                _ = try await failing
                XCTFail("the first page's items are not JSON")
            } catch {
                guard case .undecodable? = error as? LoadError else { return XCTFail("expected -32003, got \(error)") }
            }
            // The page after the broken one was requested while it was checked,
            // and never landed: the next call asks for the first page again.
            let again = try await retried
            XCTAssertEqual(Self.ids(again.items), ["1"])
            XCTAssertEqual(again.page, 1)
            // Page 2 may have been requested while page 1 was checked (or its
            // fetch cancelled first; or, on a loaded machine, its request may
            // reach the server after the retry): either way page 1 is asked
            // for again.
            let uris = server.requests.map(\.uri)
            let orders = [["/items", "/items"], ["/items", "/items?cursor=c2", "/items"], ["/items", "/items", "/items?cursor=c2"]]
            XCTAssert(orders.contains(Array(uris.prefix(3))), "\(uris)")
            let kept = await collection.items(offset: 0, limit: nil)
            XCTAssertEqual(Self.ids(kept.items), ["1"], "nothing from the page read ahead of the broken one landed")
        }
    }

    func testGetSourcesAreReadAheadAndFanOutAndPostSourcesAreNot() {
        let transport = HTTPNetworkTransport()
        for (method, expected) in [(HTTPSource.Method.get, true), (.post, false)] {
            let source = HTTPSource(url: "http://127.0.0.1:9/items", method: method)
            let collection = collection(source, Paging(strategy: .page, total: "/total"), options: CollectionOptions(concurrency: 8), transport: transport)
            XCTAssertEqual(collection.client.fetchesHaveNoEffects, expected, method.rawValue)
            XCTAssertEqual(collection.readAhead.whileChecking > 0, expected, method.rawValue)
            XCTAssertEqual(collection.readAhead.fanOut, expected ? 8 : 1, method.rawValue)
        }
    }

    func testGetPagesWaitedForAreReadAheadEachOnceAndLandInOrder() async throws {
        try await withServer(Self.cursorPages(brokenFirst: false)) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            var tickets: [LoadTicket] = []
            for _ in 0..<4 { tickets.append(await collection.enqueueLoadNext()) }
            var delivered: [[String]] = []
            for ticket in tickets { delivered.append(Self.ids(try await collection.loadNext(ticket).items)) }
            XCTAssertEqual(delivered, [["1"], ["2"], ["3"], []])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3"], "each page once, none after the end")
        }
    }

    func testAPostPageIsNotSentBeforeThePageBeforeItPassedItsChecks() async throws {
        try await withServer({ request in
            request.bodyText.contains("c2")
                ? .json(#"{"items": \#(Self.items([2])), "next_cursor": null}"#)
                : .json(#"{"items": [{"id": 1}, {"id": tru}], "next_cursor": "c2"}"#)
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/graphql", method: .post)
            let collection = collection(source, Paging(strategy: .cursor, bodyPointer: "/after"), transport: transport)
            let first = await collection.enqueueLoadNext()
            let second = await collection.enqueueLoadNext()
            async let failing = collection.loadNext(first)
            async let retried = collection.loadNext(second)
            _ = try? await failing
            _ = try? await retried
            XCTAssertFalse(server.requests.contains { $0.bodyText.contains("c2") },
                           "no cursor read from a page that failed its checks was sent in a POST")
        }
    }

    /// GitHub's shape: `Link` with `next` and `last` on every page but the last, `per_page` items a page.
    private static func gitHubPages(pages: Int, perPage: Int, base: @escaping @Sendable () -> String) -> HTTPTestServer.Script {
        { request in
            let page = Int(request.queryValue("page") ?? "1") ?? 1
            // Past the last page GitHub answers an empty list.
            guard page <= pages else { return .json("[]") }
            let first = (page - 1) * perPage + 1
            var links: [String] = []
            if page < pages {
                links.append("<\(base())/repos/o/r/issues?per_page=\(perPage)&page=\(page + 1)>; rel=\"next\"")
                links.append("<\(base())/repos/o/r/issues?per_page=\(perPage)&page=\(pages)>; rel=\"last\"")
            }
            if page > 1 { links.append("<\(base())/repos/o/r/issues?per_page=\(perPage)&page=1>; rel=\"first\"") }
            return .json(items(Array(first..<(first + perPage))), headers: links.isEmpty ? [] : [("Link", links.joined(separator: ", "))])
        }
    }

    func testALinkWalkWithALastLinkFansOutAndLandsEveryPageOnceInOrder() async throws {
        let port = PortBox()
        try await withServer(Self.gitHubPages(pages: 12, perPage: 3, base: { "http://127.0.0.1:\(port.value)" })) { server, transport in
            port.value = server.port
            let source = HTTPSource(url: server.baseURL + "/repos/o/r/issues", query: [("per_page", "3")])
            let collection = collection(
                source, Paging(strategy: .link, items: ""), options: CollectionOptions(concurrency: 4), transport: transport)
            await collection.streamingDemand(1)
            var ids: [String] = []
            while true {
                let page = try await collection.loadNext()
                ids += Self.ids(page.items)
                if !page.state.hasNext { break }
            }
            await collection.streamingDemand(-1)
            XCTAssertEqual(ids, Self.strings(1...36), "every issue once, in order")
            let pages = server.requests.map { Int($0.queryValue("page") ?? "1") ?? 1 }
            XCTAssertEqual(pages.sorted(), Array(1...12), "each page requested once, none past the last")
        }
    }

    func testAPageWalkReadsTheLastPageFromTheLinkHeader() async throws {
        let port = PortBox()
        try await withServer(Self.gitHubPages(pages: 7, perPage: 2, base: { "http://127.0.0.1:\(port.value)" })) { server, transport in
            port.value = server.port
            let source = HTTPSource(url: server.baseURL + "/repos/o/r/issues", query: [("per_page", "2")])
            let collection = collection(
                source, Paging(strategy: .page, items: ""), options: CollectionOptions(concurrency: 3), transport: transport)
            await collection.streamingDemand(1)
            var ids: [String] = []
            while true {
                let page = try await collection.loadNext()
                ids += Self.ids(page.items)
                if !page.state.hasNext { break }
            }
            await collection.streamingDemand(-1)
            XCTAssertEqual(ids, Self.strings(1...14))
            let pages = server.requests.map { Int($0.queryValue("page") ?? "1") ?? 1 }
            // Page 8 (empty, past the last) ends a page walk whose last page is full.
            XCTAssertEqual(pages.sorted(), Array(1...8), "each page requested once")
        }
    }
}

/// The test server's port, known once it has started (its script builds links with it).
final class PortBox: Sendable {
    private let port = NIOLockedValueBox(0)
    var value: Int {
        get { port.withLockedValue { $0 } }
        set { port.withLockedValue { $0 = newValue } }
    }
}
