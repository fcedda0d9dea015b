import Jansson
@testable import NextPage
import XCTest

/// Reading ahead (docs/methods.md, docs/config.md `prefetch`): pages are fetched before they are
/// asked for, always in cursor order, never twice, and never land unasked;
/// `reset` drops them, and a failure reaches the call that asks (one nobody
/// asked for is dropped, and the page fetched again when asked for).
final class ReadAheadTests: XCTestCase {
    private func collection(
        _ client: ScriptedClient, paging: Paging = Paging(strategy: .cursor), options: CollectionOptions = CollectionOptions()
    ) -> PagedCollection {
        PagedCollection(name: "test", client: client, paging: paging, options: options)
    }

    /// A page whose item array is not JSON, though the rest of the page is.
    private static func brokenItems(next: String) -> Scripted {
        .text(#"{"items": [{"id": 1}, {"id": tru}], "next_cursor": "\#(next)"}"#)
    }

    // MARK: Sources without effects (files), with calls waiting

    func testQueuedCallsOnAFileLikeSourceGetSuccessivePagesEachFetchedOnce() async throws {
        let client = ScriptedClient(
            [.page([1], next: "c2"), .page([2], next: "c3"), .page([3], next: "c4"), .page([4], next: nil)],
            hold: [0], noEffects: true)
        let collection = collection(client)
        var tickets: [LoadTicket] = []
        for _ in 0..<4 { tickets.append(await collection.enqueueLoadNext()) }
        let calls = tickets.map { ticket in Task { try await collection.loadNext(ticket) } }
        await client.release(0)
        var delivered: [[Int]] = []
        for call in calls { delivered.append(itemIds(try await call.value.items)) }
        XCTAssertEqual(delivered, [[1], [2], [3], [4]])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c3"), .string("c4")])
        let state = await collection.state
        XCTAssertEqual(state.count, 4)
        XCTAssertFalse(state.hasNext)
    }

    func testAPageReadAheadOfABrokenPageIsDroppedAndFetchedAgainLater() async throws {
        // The page read ahead is held, so nothing is read beyond it before the broken page fails.
        let client = ScriptedClient(
            [Self.brokenItems(next: "c2"), .page([20], next: "c3"), .page([1], next: "c2"), .page([2], next: nil)],
            hold: [1], noEffects: true)
        let collection = collection(client)
        let first = await collection.enqueueLoadNext()
        let second = await collection.enqueueLoadNext()
        let firstCall = Task { try await collection.loadNext(first) }
        let secondCall = Task { try await collection.loadNext(second) }
        // The first page's items are not JSON: its call fails, though the page after it was already read.
        let failure = await expectLoadError { try await firstCall.value }
        guard case .undecodable = failure else { return XCTFail("expected -32003, got \(String(describing: failure))") }
        // The waiting call asks for the first page again (a failed first page resets the collection);
        // the page read ahead of the broken one never lands.
        let retried = try await secondCall.value
        XCTAssertEqual(itemIds(retried.items), [1])
        XCTAssertEqual(retried.page, 1)
        let last = try await collection.loadNext()
        XCTAssertEqual(itemIds(last.items), [2])
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [1, 2], "the page after the broken one never landed")
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), nil, .string("c2")])
        await client.release(1)
    }

    func testSourcesWithEffectsAreNotReadAheadOfAPageStillBeingChecked() async throws {
        let client = ScriptedClient([Self.brokenItems(next: "c2"), .page([1], next: nil)])
        let collection = collection(client)
        let first = await collection.enqueueLoadNext()
        let second = await collection.enqueueLoadNext()
        let firstCall = Task { try await collection.loadNext(first) }
        let secondCall = Task { try await collection.loadNext(second) }
        _ = await expectLoadError { try await firstCall.value }
        let retried = try await secondCall.value
        XCTAssertEqual(itemIds(retried.items), [1])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, nil], "no cursor read from a page that failed its checks was fetched")
    }

    func testNoReadAheadWithoutWaitingCalls() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([2], next: nil)], noEffects: true)
        let collection = collection(client)
        _ = try await collection.loadNext()
        let state = await collection.state
        XCTAssertFalse(state.isLoading)
        // Nothing asked for page 2: the next call fetches it.
        let calls = await client.calls
        XCTAssertEqual(calls.count, 1)
        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [2])
    }

    func testReadAheadStopsAtARepeatedCursor() async throws {
        let client = ScriptedClient(
            [.page([1], next: "same"), .page([2], next: "same"), .page([3], next: nil)], noEffects: true)
        let collection = collection(client)
        var tickets: [LoadTicket] = []
        for _ in 0..<4 { tickets.append(await collection.enqueueLoadNext()) }
        var results: [PageResult] = []
        for ticket in tickets { results.append(try await collection.loadNext(ticket)) }
        XCTAssertEqual(results.map { itemIds($0.items) }, [[1], [2], [], []])
        XCTAssertFalse(results[1].state.hasNext)
        XCTAssertNotNil(results[1].state.lastError)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("same")], "the repeated cursor is never fetched a second time")
    }

    func testACallerWithAPageLimitHasNoPageReadBeyondItsLast() async throws {
        // loadAll with maxPages 2: its first call in line, and one page declared beyond it.
        let client = ScriptedClient(
            [.page([1], next: "c2"), .page([2], next: "c3"), .page([3], next: "c4"), .page([4], next: nil)], noEffects: true)
        let collection = collection(client)
        await collection.streamingDemand(pages: 1)
        let first = try await collection.loadNext()
        XCTAssertEqual(itemIds(first.items), [1])
        await collection.streamingDemand(pages: -1)
        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [2])
        await client.waitForFinish(2)
        let pending = await collection.fetchesNotTaken
        XCTAssertEqual(pending, 0)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2")], "page 2 was read ahead for the caller, and nothing after its last page")
    }

    func testACallInLineHasNoPageReadBeyondItsOwn() async throws {
        let client = ScriptedClient(
            [.page([1], next: "c2"), .page([2], next: "c3"), .page([3], next: "c4"), .page([4], next: nil)], noEffects: true)
        let collection = collection(client)
        _ = try await collection.loadNext()
        // One call in line, not yet waiting: its page is read ahead, and no page after it.
        let ticket = await collection.enqueueLoadNext()
        for _ in 0..<5000 where await collection.fetchesDoneNotTaken < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let fetches = await collection.fetchesNotTaken
        XCTAssertEqual(fetches, 1, "only the page the call in line will take")
        let page = try await collection.loadNext(ticket)
        XCTAssertEqual(itemIds(page.items), [2])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2")])
    }

    // MARK: prefetch

    func testPrefetchFetchesTheNextPageAfterDeliveryAndTheNextCallUsesIt() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([2], next: "c3"), .page([3], next: nil)])
        let collection = collection(client, options: CollectionOptions(prefetch: 1))
        let first = try await collection.loadNext()
        XCTAssertEqual(itemIds(first.items), [1])
        // Nobody asked yet, and page 2 is fetched in the background.
        await client.waitForStart(2)
        await client.waitForFinish(2)
        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [2])
        let third = try await collection.loadNext()
        XCTAssertEqual(itemIds(third.items), [3])
        XCTAssertFalse(third.state.hasNext)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c3")], "each page fetched once, in order, and none after the end")
    }

    func testPrefetchOfTwoKeepsTwoPagesAhead() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([2], next: "c3"), .page([3], next: "c4"), .page([4], next: nil)])
        let collection = collection(client, options: CollectionOptions(prefetch: 2))
        _ = try await collection.loadNext()
        await client.waitForFinish(3)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c3")])
        let state = await collection.state
        XCTAssertEqual(state.pages, 1, "pages fetched ahead have not landed")
        XCTAssertEqual(state.lastId, .string("c2"))
    }

    func testResetDiscardsAPrefetchedPage() async throws {
        let client = ScriptedClient(
            [.page([1], next: "c2"), .page([2], next: nil), .page([1], next: "c2")], hold: [1])
        let collection = collection(client, options: CollectionOptions(prefetch: 1))
        _ = try await collection.loadNext()
        await client.waitForStart(2)
        await collection.reset()
        await client.release(1)
        let again = try await collection.loadNext()
        XCTAssertEqual(itemIds(again.items), [1], "after reset the first page is loaded again")
        XCTAssertEqual(again.page, 1)
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [1], "the prefetched page never landed")
        let cursors = await client.cursors
        XCTAssertEqual(cursors.prefix(3), [nil, .string("c2"), nil])
    }

    func testAFailedPrefetchIsFetchedAgainByTheNextCall() async throws {
        // docs/methods.md (Guarantees): after a failed fetch, the next loadNext asks for the same
        // page again; a failure nobody asked for is not handed to it.
        let failure = LoadError.upstream(UpstreamFailure(status: 503, retryable: true, message: "unavailable"))
        let client = ScriptedClient([.page([1], next: "c2"), .failure(failure), .page([2], next: "c3"), .page([3], next: nil)])
        let collection = collection(client, options: CollectionOptions(prefetch: 1))
        _ = try await collection.loadNext()
        await client.waitForFinish(2)
        // The failed fetch is dropped once the collection hears of it.
        for _ in 0..<5000 where await collection.fetchesNotTaken > 0 { try await Task.sleep(for: .milliseconds(1)) }
        let pending = await collection.fetchesNotTaken
        XCTAssertEqual(pending, 0, "a failure nobody asked for is not kept")
        let state = await collection.state
        XCTAssertEqual(state.lastId, .string("c2"), "the cursor stays")
        XCTAssertNil(state.lastError, "no call failed")
        let next = try await collection.loadNext()
        XCTAssertEqual(itemIds(next.items), [2])
        // Pages land again: fetching ahead goes on.
        await client.waitForFinish(4)
        let last = try await collection.loadNext()
        XCTAssertEqual(itemIds(last.items), [3])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c2"), .string("c3")])
    }
}
