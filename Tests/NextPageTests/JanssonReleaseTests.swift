import Foundation
import Jansson
import NextPage
import XCTest

/// Every `json_t` reference taken while paging is released exactly once:
/// after thousands of pages through every decoding path (scanned and
/// checked, whole page, failed checks, pages that are not JSON) and a
/// `reset`, jansson's live block count is back where it started.
///
/// The count is process-wide, so the paging runs in a child copy of this
/// test binary (`JanssonReleaseProbes`), where no other test's tasks can
/// allocate or free jansson blocks while it is being compared.
final class JanssonReleaseTests: XCTestCase {
    static let probeVariable = "NEXTPAGE_UNIT_JANSSON_RELEASE_PROBE"

    func testPagingThousandsOfPagesLeavesNoJanssonBlockLive() throws {
        let outcome = try ChildTestProcess.run("NextPageTests.JanssonReleaseProbes", variable: Self.probeVariable)
        let text = outcome.output
        let lines = text.split(separator: "\n")
        let failures = lines.filter { $0.contains("error:") || $0.contains("Fatal error") }.joined(separator: "\n")
        XCTAssertTrue(outcome.exited, "the probe crashed:\n\(lines.suffix(20).joined(separator: "\n"))")
        XCTAssertEqual(outcome.status, 0, "the probe failed:\n\(failures)")
        XCTAssertTrue(lines.contains { $0.contains("Executed 1 test") }, "the probe did not run:\n\(text)")
    }
}

/// Generated pages, fetched from memory: page `n` of `count` at cursor
/// `"p<n>"`, with nested items, in one of several shapes. Every seventh page
/// fails once (not JSON, or items jansson rejects after the scan), and is
/// answered properly when asked again.
private struct GeneratedPages: Client {
    enum Shape: Sendable {
        /// `{"items": [...], "next_cursor": ...}`: scanned, then checked.
        case scanned
        /// The `hasNext` flag inside the first item: parsed whole.
        case whole
        /// The page is the item array (the `page` strategy).
        case array
    }

    let shape: Shape
    let count: Int
    let perPage: Int
    /// Pages that have failed once already.
    let failed = LockedSet()

    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        let number: Int
        switch request.cursor {
        case nil: number = 1
        case .integer(let value): number = Int(value)
        case .string(let text): number = Int(text.dropFirst()) ?? 0
        }
        guard (1...count).contains(number) else {
            throw LoadError.upstream(UpstreamFailure(retryable: false, message: "no page \(number)"))
        }
        let firstFailure = number % 7 == 0 && failed.insert(number)
        return UpstreamResponse(body: Array(body(number, failing: firstFailure).utf8))
    }

    /// An item; `more` says whether pages follow (the `whole` shape's end test).
    private func item(_ id: Int, more: Bool) -> String {
        #"{"id": \#(id), "name": "item \#(id) é😀\n", "tags": ["a", {"deep": [null, true, 1.5e3]}], "more": \#(more)}"#
    }

    /// The last page is one item short, which ends the `page` strategy.
    private func body(_ number: Int, failing: Bool) -> String {
        let first = (number - 1) * perPage + 1
        let size = number == count ? perPage - 1 : perPage
        var items = (first..<(first + size)).map { item($0, more: number < count) }
        if failing {
            // Odd pages: the items hold a raw control byte, which the scan
            // copies and jansson's check rejects. Even pages: not JSON at all.
            if number % 2 == 1 { items[0] = "{\"id\": \"\u{01}\"}" } else { return #"{"items": [\#(items[0]), "# }
        }
        let list = " [ " + items.joined(separator: " ,\n ") + " ] "
        let next = number < count ? #""p\#(number + 1)""# : "null"
        switch shape {
        case .scanned, .whole: return #"{"items":\#(list), "next_cursor": \#(next), "total": \#(count * perPage)}"#
        case .array: return list
        }
    }
}

/// A set shared by the copies of a `GeneratedPages`.
private final class LockedSet: @unchecked Sendable {
    private let lock = NSLock()
    private var values: Set<Int> = []

    /// Whether `value` was new.
    func insert(_ value: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return values.insert(value).inserted
    }
}

/// The paging itself; runs only in the child process `JanssonReleaseTests` starts.
final class JanssonReleaseProbes: XCTestCase {
    override func setUpWithError() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment[JanssonReleaseTests.probeVariable] == "1",
                          "runs only in the child process that JanssonReleaseTests starts")
    }

    /// Pages `collection` to its end, some calls queued behind others, asking
    /// again after a failure; returns the items delivered and the failures.
    private func pageToTheEnd(_ collection: PagedCollection) async throws -> (items: Int, failures: Int) {
        var items = 0
        var failures = 0
        var rounds = 0
        while await collection.state.hasNext {
            rounds += 1
            guard rounds < 10_000 else { XCTFail("\(collection.name) does not end"); break }
            // Three calls at once: they queue and get successive pages.
            let calls = (0..<3).map { _ in Task { try await collection.loadNext() } }
            for call in calls {
                do {
                    items += try await call.value.items.count
                } catch let error as LoadError {
                    guard case .undecodable = error else { throw error }
                    failures += 1
                }
            }
        }
        return (items, failures)
    }

    func testPagingThousandsOfPages() async throws {
        JanssonAllocations.startCounting()
        // Counting is on: a parsed value holds blocks.
        let probe = JanssonAllocations.live
        let value = try JSON.parse(#"{"a": [1, "b"]}"#)
        XCTAssertGreaterThan(JanssonAllocations.live, probe)
        withExtendedLifetime(value) {}

        let pagesEach = 1100
        let perPage = 8
        let collections = [
            PagedCollection(
                name: "scanned", client: GeneratedPages(shape: .scanned, count: pagesEach, perPage: perPage),
                paging: Paging(strategy: .cursor, items: "/items", id: "/id", total: "/total"),
                options: CollectionOptions(maxItems: 500, dedupe: true)),
            PagedCollection(
                name: "whole", client: GeneratedPages(shape: .whole, count: pagesEach, perPage: perPage),
                paging: Paging(strategy: .cursor, items: "/items", hasNext: "/items/0/more"),
                options: CollectionOptions(maxItems: 500)),
            PagedCollection(
                name: "array", client: GeneratedPages(shape: .array, count: pagesEach, perPage: perPage),
                paging: Paging(strategy: .page, items: "", id: "/id"),
                options: CollectionOptions(pageSize: perPage, maxItems: 500)),
        ]
        let before = JanssonAllocations.live
        var pages = 0
        for collection in collections {
            let (items, failures) = try await pageToTheEnd(collection)
            let state = await collection.state
            pages += state.pages
            XCTAssertGreaterThan(failures, 0, "\(collection.name): the failing pages were reached")
            XCTAssertEqual(state.pages, pagesEach, collection.name)
            XCTAssertEqual(items, pagesEach * perPage - 1, collection.name)
            // A reply through `items` and a resumed load take and drop values too.
            let slice = await collection.items(offset: 0, limit: 10)
            XCTAssertFalse(slice.items.isEmpty)
            _ = try await collection.load(lastId: collection.name == "array" ? .integer(5) : .string("p5"))
            await collection.reset()
        }
        XCTAssertGreaterThan(pages, 2500, "thousands of pages were decoded")
        XCTAssertEqual(JanssonAllocations.live, before, "jansson blocks still live after paging \(pages) pages and reset")
    }
}
