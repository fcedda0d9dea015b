import Foundation
import Jansson
import JSONRPC
import NextPage
@testable import NextPageServer
import XCTest

/// `"strategy": "auto"` through the whole path a config takes (validator,
/// `makeCollection(upstream: .replay)`, `PagedCollection`) over real
/// recordings: GitHub's Link headers and Notion's `next_cursor`
/// (HTTPFixtures, see its README.txt), and the hand-written shapes of
/// Tests/Transcripts/upstream (Stripe, Slack, Microsoft Graph, JSON:API;
/// see the README.md there). Also what `status` and the state file say.
final class AutoReplayTests: XCTestCase {
    private static func folder(_ relative: String) -> String {
        let path = "\(#filePath)"
        return String(path[..<path.lastIndex(of: "/")!]) + "/" + relative
    }

    static let recorded = folder("HTTPFixtures")
    static let handWritten = folder("../Transcripts/upstream")

    private func collection(_ name: String, _ definition: String, from folder: String) throws -> PagedCollection {
        try DefinitionValidator().validate(try JSON.parse(definition)).makeCollection(name: name, upstream: .replay(directory: folder))
    }

    private func answered(_ collection: PagedCollection) async throws -> Int {
        let client = try XCTUnwrap(collection.client as? HTTPPageClient)
        let replay = try XCTUnwrap(client.transport as? ReplayTransport)
        return await replay.answered
    }

    /// Pages to the end; every item's value at `pointer`, and the pages.
    private func walk(_ collection: PagedCollection, pointer: String) async throws -> (values: [String], pages: Int) {
        var values: [String] = []
        var pages = 0
        while pages < 20 {
            let result = try await collection.loadNext()
            pages += 1
            for item in result.items {
                let value = try item.parsed().pointer(pointer)
                values.append(value?.string ?? value?.integer.map(String.init) ?? "?")
            }
            if !result.state.hasNext { break }
        }
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed, "a page after the end")
        return (values, pages)
    }

    func testGitHubIsWalkedByItsLinkHeaders() async throws {
        let collection = try collection("github-issues", """
            {"source": {"type": "http", "url": "https://api.github.com/repos/octokit-fixture-org/paginate-issues/issues",
                        "query": {"per_page": "3"}, "headers": {"Accept": "application/vnd.github.v3+json"}},
             "paging": {"strategy": "auto"}}
            """, from: Self.recorded)
        let fresh = await collection.state
        let status = Wire.state("github-issues", fresh)
        XCTAssertEqual(status.description, #"{"collection":"github-issues","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null,"paging":null}"#)
        let result = try await walk(collection, pointer: "/number")
        XCTAssertEqual(result.values, (1...13).reversed().map(String.init), "each issue once, newest first")
        XCTAssertEqual(result.pages, 5)
        let requests = try await answered(collection)
        XCTAssertEqual(requests, 5)
        let ended = await collection.state
        XCTAssertEqual(
            Wire.state("github-issues", ended).description,
            #"{"collection":"github-issues","hasNext":false,"isLoading":false,"lastId":null,"count":13,"pages":5,"lastError":null,"paging":{"strategy":"link","items":""}}"#)
    }

    func testNotionIsWalkedByItsNextCursor() async throws {
        let collection = try collection("notion-blocks", """
            {"source": {"type": "http", "url": "https://api.notion.com/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children",
                        "query": {"page_size": "2"}, "headers": {"Notion-Version": "2025-09-03"}},
             "paging": {"strategy": "auto", "param": "start_cursor"}}
            """, from: Self.recorded)
        let result = try await walk(collection, pointer: "/id")
        XCTAssertEqual(result.values, [
            "393abc1e-edcd-81b4-97e4-e74d4867a8a1", "393abc1e-edcd-813d-9f29-e8c616b0f017",
            "393abc1e-edcd-817b-900d-c75ec8d2f272", "393abc1e-edcd-8186-8baf-db45a5b6fdba",
            "393abc1e-edcd-81d2-b73d-feaa29f12025",
        ])
        XCTAssertEqual(result.pages, 3)
        let requests = try await answered(collection)
        XCTAssertEqual(requests, 3)
        let state = await collection.state
        XCTAssertEqual(state.pick, PagingPick(strategy: .cursor, items: "/results", next: "/next_cursor", param: "start_cursor"))
    }

    func testHandWrittenShapesAreEachWalkedOnce() async throws {
        let cases: [(name: String, source: String, pointer: String, values: [String], pick: PagingPick)] = [
            ("stripe-customers", #"{"type": "http", "url": "https://api.stripe.com/v1/customers", "query": {"limit": "2"}}"#, "/id",
             (1...5).map { "cus_Q\($0)xYz8kLm\($0)" },
             PagingPick(strategy: .lastId, items: "/data", param: "starting_after", id: "/id", hasNext: "/has_more")),
            ("slack-conversations", #"{"type": "http", "url": "https://slack.com/api/conversations.list", "query": {"limit": "2"}}"#, "/id",
             (1...5).map { "C0\($0)ABCDEF" },
             PagingPick(strategy: .cursor, items: "/channels", next: "/response_metadata/next_cursor", param: "cursor")),
            ("graph-users", #"{"type": "http", "url": "https://graph.microsoft.com/v1.0/users?$top=2"}"#, "/id",
             (1...5).map { "87d349ed-44d7-43e1-9a83-5f2406dee5b\($0)" },
             PagingPick(strategy: .nextUrl, items: "/value", next: "/@odata.nextLink")),
            ("jsonapi-articles", #"{"type": "http", "url": "https://api.example.com/articles", "query": {"page[size]": "2"}}"#, "/id",
             (1...5).map(String.init),
             PagingPick(strategy: .nextUrl, items: "/data", next: "/links/next")),
        ]
        for shape in cases {
            let collection = try collection(shape.name, #"{"source": \#(shape.source), "paging": {"strategy": "auto"}}"#, from: Self.handWritten)
            let result = try await walk(collection, pointer: shape.pointer)
            XCTAssertEqual(result.values, shape.values, shape.name)
            XCTAssertEqual(result.pages, 3, shape.name)
            let requests = try await answered(collection)
            XCTAssertEqual(requests, 3, shape.name)
            let state = await collection.state
            XCTAssertEqual(state.pick, shape.pick, shape.name)
            XCTAssertEqual(state.count, 5, shape.name)
        }
    }

    // MARK: The state file

    func testThePickIsKeptInTheStateFileAndRestored() async throws {
        let dir = NSTemporaryDirectory() + "nextpage-auto-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.json"
        let definition = """
            {"source": {"type": "http", "url": "https://api.stripe.com/v1/customers", "query": {"limit": "2"}}, "paging": {"strategy": "auto"}}
            """
        let first = try collection("stripe-customers", definition, from: Self.handWritten)
        _ = try await first.loadNext()
        let store = try StateStore(path: path, commit: .immediately)
        await first.save(to: store)
        XCTAssertEqual(
            try String(contentsOfFile: path, encoding: .utf8),
            #"{"version":1,"collections":{"stripe-customers":{"hasNext":true,"lastId":"cus_Q2xYz8kLm2","count":2,"pages":1,"lastError":null,"paging":{"strategy":"lastId","items":"/data","param":"starting_after","id":"/id","hasNext":"/has_more"}}}}"# + "\n")

        // A fresh process: the saved pick walks on from the saved cursor, deciding nothing again.
        let reopened = try StateStore(path: path, commit: .immediately)
        let second = try collection("stripe-customers", definition, from: Self.handWritten)
        await second.restore(try XCTUnwrap(reopened.saved["stripe-customers"]))
        let result = try await walk(second, pointer: "/id")
        XCTAssertEqual(result.values, (3...5).map { "cus_Q\($0)xYz8kLm\($0)" })
        let requests = try await answered(second)
        XCTAssertEqual(requests, 2)

        // A collection that is not auto ignores a saved pick.
        let fixed = try collection("stripe-customers", """
            {"source": {"type": "http", "url": "https://api.stripe.com/v1/customers", "query": {"limit": "2"}},
             "paging": {"strategy": "lastId", "param": "starting_after", "items": "/data"}}
            """, from: Self.handWritten)
        await fixed.restore(try XCTUnwrap(reopened.saved["stripe-customers"]))
        let fixedState = await fixed.state
        XCTAssertNil(fixedState.pick)
        XCTAssertFalse(Wire.state("x", fixedState).description.contains("paging"))
    }

    func testASavedPickThatIsNotOneNamesTheField() throws {
        let dir = NSTemporaryDirectory() + "nextpage-auto-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (paging, field, expected) in [
            (#"{"strategy": "page", "items": ""}"#, "collections.c.paging.strategy", "one of link, nextUrl, cursor, lastId"),
            (#"{"strategy": "link"}"#, "collections.c.paging.items", "a JSON Pointer"),
            (#"{"strategy": "cursor", "items": "", "next": "next"}"#, "collections.c.paging.next", "a JSON Pointer"),
            (#"[]"#, "collections.c.paging", "an object"),
        ] {
            let path = dir + "/s.json"
            try #"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 0, "pages": 0, "lastError": null, "paging": \#(paging)}}}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(try StateStore(path: path, commit: .immediately)) { error in
                XCTAssertEqual((error as? StateFileError)?.reason, "\(field): expected \(expected) (fix the file, or delete it to start over)")
            }
        }
    }

    // MARK: Errors

    func testAFirstPageMatchingNothingIsAnInvalidDefinitionError() {
        let error = Wire.error(.definition(field: "paging.strategy", expected: AutoStrategy.expectedPaging), collection: "c")
        XCTAssertEqual(error.code, -32004)
        XCTAssertEqual(error.message, "Invalid collection definition of c, as its first page shows: paging.strategy: expected " + AutoStrategy.expectedPaging)
        let data = try? XCTUnwrap(error.data).parsed()
        XCTAssertEqual(data?["field"]?.string, "paging.strategy")
        XCTAssertEqual(data?["expected"]?.string, AutoStrategy.expectedPaging)
        XCTAssertEqual(data?.memberCount, 2)
    }
}
