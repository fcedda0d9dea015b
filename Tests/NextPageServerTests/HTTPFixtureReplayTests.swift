import Jansson
import NextPage
import NextPageServer
import XCTest

/// Real recorded APIs (GitHub's Link headers, Notion's has_more/next_cursor;
/// see HTTPFixtures/README.txt) replayed through the whole path a config
/// takes: validator, `makeCollection(upstream: .replay)`, `PagedCollection`.
final class HTTPFixtureReplayTests: XCTestCase {
    /// The folder of replay files next to this file.
    private static let fixtures: String = {
        let path = "\(#filePath)"
        return String(path[..<path.lastIndex(of: "/")!]) + "/HTTPFixtures"
    }()

    private func collection(_ name: String, _ definition: String) throws -> PagedCollection {
        let validator = DefinitionValidator(environment: ["GITHUB_TOKEN": "ghp_notarealtoken", "NOTION_TOKEN": "ntn_notarealtoken"])
        let parsed = try validator.validate(try JSON.parse(definition))
        return parsed.makeCollection(name: name, upstream: .replay(directory: Self.fixtures))
    }

    private func answered(_ collection: PagedCollection) async throws -> Int {
        let client = try XCTUnwrap(collection.client as? HTTPPageClient)
        let replay = try XCTUnwrap(client.transport as? ReplayTransport)
        return await replay.answered
    }

    /// Pages to the end; returns every item's value at `pointer`, the pages and the `lastId` after each page.
    private func pageThrough(_ collection: PagedCollection, pointer: String) async throws -> (values: [String], pages: Int, lastIds: [Cursor?]) {
        var values: [String] = []
        var lastIds: [Cursor?] = []
        var pages = 0
        while pages < 20 {
            let result = try await collection.loadNext()
            XCTAssertTrue(result.landed)
            pages += 1
            lastIds.append(result.state.lastId)
            for item in result.items {
                let value = try item.parsed().pointer(pointer)
                values.append(value?.string ?? value?.integer.map(String.init) ?? "?")
            }
            if !result.state.hasNext { break }
        }
        return (values, pages, lastIds)
    }

    func testGitHubLinkHeadersPageThroughAllFivePagesOnce() async throws {
        let collection = try collection("github-issues", """
            {"source": {"type": "http", "url": "https://api.github.com/repos/octokit-fixture-org/paginate-issues/issues",
                        "query": {"per_page": "3"},
                        "headers": {"Authorization": "token ${env:GITHUB_TOKEN}", "Accept": "application/vnd.github.v3+json"}},
             "paging": {"strategy": "link", "items": "", "id": "/number"}}
            """)
        let result = try await pageThrough(collection, pointer: "/number")
        XCTAssertEqual(result.values, (1...13).reversed().map(String.init))
        XCTAssertEqual(result.pages, 5)
        XCTAssertEqual(result.lastIds, [
            .string("https://api.github.com/repositories/1000/issues?per_page=3&page=2"),
            .string("https://api.github.com/repositories/1000/issues?per_page=3&page=3"),
            .string("https://api.github.com/repositories/1000/issues?per_page=3&page=4"),
            .string("https://api.github.com/repositories/1000/issues?per_page=3&page=5"),
            nil,
        ])
        let requests = try await answered(collection)
        XCTAssertEqual(requests, 5)

        // No request after the last page.
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        XCTAssertEqual(after.items.count, 0)
        let stillRequests = try await answered(collection)
        XCTAssertEqual(stillRequests, 5)
        let state = await collection.state
        XCTAssertEqual(state.count, 13)
        XCTAssertFalse(state.hasNext)
    }

    func testNotionHasMoreAndNextCursorPageThroughAllThreePagesOnce() async throws {
        let collection = try collection("notion-blocks", """
            {"source": {"type": "http", "url": "https://api.notion.com/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children",
                        "query": {"page_size": "2"},
                        "headers": {"Authorization": "Bearer ${env:NOTION_TOKEN}", "Notion-Version": "2025-09-03"}},
             "paging": {"strategy": "cursor", "param": "start_cursor", "next": "/next_cursor",
                        "items": "/results", "hasNext": "/has_more"}}
            """)
        let result = try await pageThrough(collection, pointer: "/id")
        XCTAssertEqual(result.values, [
            "393abc1e-edcd-81b4-97e4-e74d4867a8a1", "393abc1e-edcd-813d-9f29-e8c616b0f017",
            "393abc1e-edcd-817b-900d-c75ec8d2f272", "393abc1e-edcd-8186-8baf-db45a5b6fdba",
            "393abc1e-edcd-81d2-b73d-feaa29f12025",
        ])
        XCTAssertEqual(Set(result.values).count, 5)
        XCTAssertEqual(result.pages, 3)
        XCTAssertEqual(result.lastIds, [
            .string("393abc1e-edcd-817b-900d-c75ec8d2f272"), .string("393abc1e-edcd-81d2-b73d-feaa29f12025"), nil,
        ])
        let requests = try await answered(collection)
        XCTAssertEqual(requests, 3)

        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        let stillRequests = try await answered(collection)
        XCTAssertEqual(stillRequests, 3)
    }

    func testAStrategyThatAsksForOtherPagesFindsNoRecording() async throws {
        // The same Notion recording read with the wrong cursor parameter: the
        // second request is not in the recording, and the error says which,
        // and which recorded request is nearest: the one with the same
        // cursor under the parameter Notion takes.
        let collection = try collection("notion-blocks", """
            {"source": {"type": "http", "url": "https://api.notion.com/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children?page_size=2"},
             "paging": {"strategy": "cursor", "param": "cursor", "next": "/next_cursor", "items": "/results", "hasNext": "/has_more"}}
            """)
        _ = try await collection.loadNext()
        do {
            _ = try await collection.loadNext()
            XCTFail("expected a failure")
        } catch {
            guard case .upstream(let failure)? = error as? LoadError else { return XCTFail("\(error)") }
            XCTAssertFalse(failure.retryable)
            XCTAssertEqual(
                failure.message,
                "GET https://api.notion.com/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children?page_size=2&cursor=393abc1e-edcd-817b-900d-c75ec8d2f272: no recorded answer in \(Self.fixtures)/notion-blocks.jsonl"
                    + "; nearest recorded: GET https://api.notion.com/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children?start_cursor=393abc1e-edcd-817b-900d-c75ec8d2f272&page_size=2"
                    + " (query: start_cursor=393abc1e-edcd-817b-900d-c75ec8d2f272, not cursor=393abc1e-edcd-817b-900d-c75ec8d2f272)")
        }
    }
}
