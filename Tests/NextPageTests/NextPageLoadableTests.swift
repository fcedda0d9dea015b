import Jansson
import NextPage
import XCTest

/// The state machine of docs/methods.md (Guarantees), driven through `PagedCollection` (the one
/// conformer) over a scripted `Client`.
final class NextPageLoadableTests: XCTestCase {
    private func collection(
        _ client: ScriptedClient, paging: Paging = Paging(strategy: .cursor), options: CollectionOptions = CollectionOptions()
    ) -> PagedCollection {
        PagedCollection(name: "test", client: client, paging: paging, options: options)
    }

    // MARK: Paging in order

    func testPagesInOrderThenNoFetchAfterTheEnd() async throws {
        let client = ScriptedClient([
            .page([1, 2], next: "c2"),
            .page([3, 4], next: "c3"),
            .page([5], next: nil),
        ])
        let collection = collection(client)
        let fresh = await collection.state
        XCTAssertEqual(fresh, NextPageState())
        XCTAssertTrue(fresh.hasNext)

        let first = try await collection.loadNext()
        XCTAssertEqual(itemIds(first.items), [1, 2])
        XCTAssertEqual(first.page, 1)
        XCTAssertTrue(first.landed)
        XCTAssertFalse(first.skipped)
        XCTAssertTrue(first.state.hasNext)
        XCTAssertEqual(first.state.lastId, .string("c2"))
        XCTAssertEqual(first.state.count, 2)
        XCTAssertEqual(first.state.pages, 1)
        XCTAssertFalse(first.state.isLoading)

        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [3, 4])
        XCTAssertEqual(second.page, 2)
        XCTAssertEqual(second.state.lastId, .string("c3"))
        XCTAssertEqual(second.state.count, 4)

        let third = try await collection.loadNext()
        XCTAssertEqual(itemIds(third.items), [5])
        XCTAssertEqual(third.page, 3)
        XCTAssertFalse(third.state.hasNext)
        XCTAssertNil(third.state.lastId)
        XCTAssertEqual(third.state.count, 5)
        XCTAssertEqual(third.state.pages, 3)
        XCTAssertNil(third.state.lastError)

        let after = try await collection.loadNext()
        XCTAssertEqual(after.items, [])
        XCTAssertFalse(after.landed)
        XCTAssertFalse(after.state.hasNext)
        XCTAssertEqual(after.state.count, 5)
        XCTAssertEqual(after.state.pages, 3)
        let again = try await collection.loadNext(ifLoading: .skip)
        XCTAssertFalse(again.landed)
        XCTAssertFalse(again.skipped, "nothing was loading")

        let calls = await client.calls
        XCTAssertEqual(calls.map(\.cursor), [nil, .string("c2"), .string("c3")], "no fetch after the end")
        XCTAssertEqual(calls.map(\.isFirstPage), [true, false, false])
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [1, 2, 3, 4, 5])
        XCTAssertEqual(kept.count, 5)
        XCTAssertEqual(kept.offset, 0)
    }

    func testIsLoadingWhileAFetchIsInFlight() async throws {
        let client = ScriptedClient([.page([1], next: "c2")], hold: [0])
        let collection = collection(client)
        let task = Task { try await collection.loadNext() }
        await client.waitForStart(1)
        let during = await collection.state
        XCTAssertTrue(during.isLoading)
        XCTAssertEqual(during.pages, 0)
        await client.release(0)
        let result = try await task.value
        XCTAssertEqual(itemIds(result.items), [1])
        let after = await collection.state
        XCTAssertFalse(after.isLoading)
    }

    // MARK: Queueing

    func testQueuedCallsGetSuccessivePagesAndEachCursorIsFetchedOnce() async throws {
        let client = ScriptedClient([
            .page([1, 2], next: "c2"),
            .page([3, 4], next: "c3"),
            .page([5, 6], next: "c4"),
        ], hold: [0])
        let collection = collection(client)
        let first = Task { try await collection.loadNext() }
        await client.waitForStart(1)
        let ticket2 = await collection.enqueueLoadNext()
        let ticket3 = await collection.enqueueLoadNext()
        // Redeemed in the opposite order: the tickets, not the tasks, decide.
        let third = Task { try await collection.loadNext(ticket3) }
        let second = Task { try await collection.loadNext(ticket2) }
        await client.release(0)

        let r1 = try await first.value
        let r2 = try await second.value
        let r3 = try await third.value
        XCTAssertEqual(itemIds(r1.items), [1, 2])
        XCTAssertEqual(itemIds(r2.items), [3, 4])
        XCTAssertEqual(itemIds(r3.items), [5, 6])
        XCTAssertEqual([r1.page, r2.page, r3.page], [1, 2, 3])
        XCTAssertEqual(r3.state.count, 6)
        XCTAssertEqual(r3.state.lastId, .string("c4"))

        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c3")])
        XCTAssertEqual(Set(cursors).count, cursors.count, "no cursor fetched twice")
        let state = await collection.state
        XCTAssertFalse(state.isLoading)
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [1, 2, 3, 4, 5, 6], "no page skipped, no item duplicated")
    }

    func testQueuedCallsAfterTheEndGetNoPageAndNoFetch() async throws {
        let client = ScriptedClient([.page([1], next: nil)], hold: [0])
        let collection = collection(client)
        let first = Task { try await collection.loadNext() }
        await client.waitForStart(1)
        let ticket = await collection.enqueueLoadNext()
        let queued = Task { try await collection.loadNext(ticket) }
        await client.release(0)
        _ = try await first.value
        let result = try await queued.value
        XCTAssertFalse(result.landed)
        XCTAssertEqual(result.items, [])
        XCTAssertFalse(result.state.hasNext)
        let calls = await client.calls
        XCTAssertEqual(calls.count, 1)
    }

    func testSkipWhileLoadingReturnsAtOnceWithoutFetching() async throws {
        let client = ScriptedClient([.page([1, 2], next: "c2"), .page([3], next: nil)], hold: [0])
        let collection = collection(client)
        let first = Task { try await collection.loadNext() }
        await client.waitForStart(1)

        let skipped = try await collection.loadNext(ifLoading: .skip)
        XCTAssertTrue(skipped.skipped)
        XCTAssertFalse(skipped.landed)
        XCTAssertEqual(skipped.items, [])
        XCTAssertTrue(skipped.state.isLoading)
        XCTAssertEqual(skipped.state.pages, 0)
        let callsDuring = await client.calls
        XCTAssertEqual(callsDuring.count, 1)

        await client.release(0)
        let r1 = try await first.value
        XCTAssertEqual(itemIds(r1.items), [1, 2])
        let callsAfter = await client.calls
        XCTAssertEqual(callsAfter.count, 1, "the skipped call never fetched")
        // Once idle, skip loads like queue.
        let r2 = try await collection.loadNext(ifLoading: .skip)
        XCTAssertFalse(r2.skipped)
        XCTAssertEqual(itemIds(r2.items), [3])
    }

    func testCancellingAQueuedCallDoesNotLoseTheTurn() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([2], next: "c3")], hold: [0])
        let collection = collection(client)
        let first = Task { try await collection.loadNext() }
        await client.waitForStart(1)
        let ticket2 = await collection.enqueueLoadNext()
        let ticket3 = await collection.enqueueLoadNext()
        let second = Task { try await collection.loadNext(ticket2) }
        second.cancel()
        await assertCancelled(second, "a cancelled waiting call")
        let third = Task { try await collection.loadNext(ticket3) }
        await client.release(0)
        let r1 = try await first.value
        let r3 = try await third.value
        XCTAssertEqual(itemIds(r1.items), [1])
        XCTAssertEqual(itemIds(r3.items), [2])
        XCTAssertEqual(r3.page, 2)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2")])
        let state = await collection.state
        XCTAssertFalse(state.isLoading)
    }

    // MARK: Reset and cancellation

    func testResetDuringAFetchCancelsItAndItsQueueAndNothingLands() async throws {
        let client = ScriptedClient([
            .page([1, 2], next: "c2"),       // held, then released after the reset
            .page([101, 102], next: "d2"),   // the first page again, after the reset
        ], hold: [0])
        let collection = collection(client)
        let loading = Task { try await collection.loadNext() }
        await client.waitForStart(1)
        let ticket = await collection.enqueueLoadNext()
        let queued = Task { try await collection.loadNext(ticket) }

        await collection.reset()
        await assertCancelled(loading, "the loading call")
        await assertCancelled(queued, "the queued call")
        let afterReset = await collection.state
        XCTAssertEqual(afterReset, NextPageState(), "fresh: hasNext, no cursor, nothing loaded, idle")

        // The held fetch now answers; its page must not land.
        await client.release(0)
        await client.waitForFinish(1)
        let afterRelease = await collection.state
        XCTAssertEqual(afterRelease.count, 0)
        XCTAssertEqual(afterRelease.pages, 0)
        XCTAssertNil(afterRelease.lastId)
        let keptNothing = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(keptNothing.items, [])

        let next = try await collection.loadNext()
        XCTAssertEqual(itemIds(next.items), [101, 102])
        XCTAssertEqual(next.page, 1)
        XCTAssertEqual(next.state.count, 2)
        XCTAssertEqual(next.state.lastId, .string("d2"))
        let calls = await client.calls
        XCTAssertEqual(calls.map(\.cursor), [nil, nil], "the queued call never fetched; the first page is fetched again")
        XCTAssertEqual(calls.map(\.isFirstPage), [true, true])
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [101, 102])
    }

    func testLoadDuringAFetchCancelsItAndLoadsTheFirstPage() async throws {
        let client = ScriptedClient([
            .page([1], next: "c2"),
            .page([2], next: "c3"),          // held
            .page([10, 11], next: "x2"),     // the reload
        ], hold: [1])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let loading = Task { try await collection.loadNext() }
        await client.waitForStart(2)
        let reloaded = try await collection.load()
        await assertCancelled(loading)
        XCTAssertEqual(itemIds(reloaded.items), [10, 11])
        XCTAssertEqual(reloaded.page, 1)
        XCTAssertEqual(reloaded.state.count, 2)
        XCTAssertEqual(reloaded.state.lastId, .string("x2"))
        await client.release(1)
        await client.waitForFinish(3)
        let state = await collection.state
        XCTAssertEqual(state.count, 2, "the cancelled page never landed")
        XCTAssertEqual(state.pages, 1)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), nil])
    }

    func testCancellingTheInFlightCallKeepsTheCursor() async throws {
        let client = ScriptedClient([
            .page([1, 2], next: "c2"),
            .page([3, 4], next: "c3"),   // held, then abandoned
            .page([3, 4], next: "c3"),
        ], hold: [1])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let before = await collection.state

        let loading = Task { try await collection.loadNext() }
        await client.waitForStart(2)
        loading.cancel()
        await assertCancelled(loading)
        var after = await collection.state
        XCTAssertFalse(after.isLoading)
        after.isLoading = before.isLoading
        XCTAssertEqual(after, before, "cursor, counters and hasNext unchanged")
        XCTAssertEqual(after.lastId, .string("c2"))

        await client.release(1)
        await client.waitForFinish(2)
        let afterRelease = await collection.state
        XCTAssertEqual(afterRelease.count, 2, "the abandoned page never landed")

        let next = try await collection.loadNext()
        XCTAssertEqual(itemIds(next.items), [3, 4])
        XCTAssertEqual(next.page, 2)
        XCTAssertEqual(next.state.count, 4)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c2")])
    }

    // MARK: Failures

    func testFailedFetchKeepsTheCursorAndRecordsLastError() async throws {
        let failure = LoadError.upstream(UpstreamFailure(status: 503, attempts: 3, retryable: true, message: "HTTP 503"))
        let client = ScriptedClient([
            .page([1, 2], next: "c2"),
            .failure(failure),
            .page([3], next: nil),
        ])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let error = await expectLoadError { try await collection.loadNext() }
        XCTAssertEqual(error, failure)
        let state = await collection.state
        XCTAssertEqual(state.lastError, "HTTP 503")
        XCTAssertEqual(state.lastId, .string("c2"))
        XCTAssertEqual(state.pages, 1)
        XCTAssertEqual(state.count, 2)
        XCTAssertTrue(state.hasNext)
        XCTAssertFalse(state.isLoading)

        let retry = try await collection.loadNext()
        XCTAssertEqual(itemIds(retry.items), [3])
        XCTAssertEqual(retry.page, 2)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c2")], "the failed cursor is asked for again")
    }

    func testUndecodablePageIsAFailureThatKeepsTheCursor() async throws {
        let client = ScriptedClient([
            .page([1], next: "c2"),
            .text("{\"items\": [1,\n  oops]}"),
            .page([2], next: nil),
        ])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let error = await expectLoadError { try await collection.loadNext() }
        guard case .undecodable(let failure)? = error else {
            return XCTFail("expected .undecodable, got \(String(describing: error))")
        }
        XCTAssertEqual(failure.line, 2)
        XCTAssertNotNil(failure.column)
        let state = await collection.state
        XCTAssertEqual(state.lastId, .string("c2"))
        XCTAssertNotNil(state.lastError)
        let retry = try await collection.loadNext()
        XCTAssertEqual(itemIds(retry.items), [2])
    }

    func testFailedFirstPageResetsTheCollection() async throws {
        let failure = LoadError.upstream(UpstreamFailure(retryable: false, message: "no such host"))
        let client = ScriptedClient([.failure(failure), .page([1], next: "c2")])
        let collection = collection(client)
        let error = await expectLoadError { try await collection.loadNext() }
        XCTAssertEqual(error, failure)
        let state = await collection.state
        XCTAssertEqual(state.pages, 0)
        XCTAssertNil(state.lastId)
        XCTAssertEqual(state.count, 0)
        XCTAssertTrue(state.hasNext)
        XCTAssertFalse(state.isLoading)
        XCTAssertEqual(state.lastError, "no such host")

        let retry = try await collection.loadNext()
        XCTAssertEqual(itemIds(retry.items), [1])
        XCTAssertEqual(retry.page, 1)
        let calls = await client.calls
        XCTAssertEqual(calls.map(\.isFirstPage), [true, true])
    }

    func testAFailureWakesTheNextQueuedCall() async throws {
        let failure = LoadError.upstream(UpstreamFailure(retryable: true, message: "timeout"))
        let client = ScriptedClient([.page([1], next: "c2"), .failure(failure), .page([2], next: nil)], hold: [1])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let failing = Task { try await collection.loadNext() }
        await client.waitForStart(2)
        let ticket = await collection.enqueueLoadNext()
        let queued = Task { try await collection.loadNext(ticket) }
        await client.release(1)
        let error = await expectLoadError { try await failing.value }
        XCTAssertEqual(error, failure)
        let result = try await queued.value
        XCTAssertEqual(itemIds(result.items), [2], "the queued call asks for the failed cursor again")
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c2")])
    }

    // MARK: Loop guards

    func testRepeatedCursorStopsWithThePageDelivered() async throws {
        let client = ScriptedClient([
            .page([1], next: "c2"),
            .page([2], next: "c2"),   // asked with c2, answers c2 again
            .page([99], next: "c3"),  // must never be fetched
        ])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let stopped = try await collection.loadNext()
        XCTAssertEqual(itemIds(stopped.items), [2], "the page just loaded is the reply")
        XCTAssertTrue(stopped.landed)
        XCTAssertFalse(stopped.state.hasNext)
        XCTAssertNotNil(stopped.state.lastError)
        XCTAssertTrue(stopped.state.lastError?.contains("c2") ?? false, stopped.state.lastError ?? "")
        XCTAssertEqual(stopped.state.count, 2)

        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2")], "the repeated cursor is never fetched a second time")
    }

    func testACursorOfAnEarlierPageStopsACycle() async throws {
        let client = ScriptedClient([
            .page([1], next: "a"),
            .page([2], next: "b"),
            .page([3], next: "a"),    // back to page 2: a cycle
            // After the reset:
            .page([4], next: "a"),
            .page([5], next: "b"),
            .page([6], next: nil),
        ])
        let collection = collection(client)
        for _ in 0..<2 { _ = try await collection.loadNext() }
        let stopped = try await collection.loadNext()
        XCTAssertEqual(itemIds(stopped.items), [3], "the page just loaded is the reply")
        XCTAssertFalse(stopped.state.hasNext)
        XCTAssertNil(stopped.state.lastId)
        XCTAssertTrue(stopped.state.lastError?.contains("'a' of an earlier page") ?? false, stopped.state.lastError ?? "")
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        var cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("a"), .string("b")], "no cursor is fetched a second time")

        // A reset forgets the cursors landed: the walk runs again.
        await collection.reset()
        for expected in [4, 5, 6] {
            let page = try await collection.loadNext()
            XCTAssertEqual(itemIds(page.items), [expected])
            XCTAssertNil(page.state.lastError)
        }
        cursors = await client.cursors
        XCTAssertEqual(cursors.suffix(3), [nil, .string("a"), .string("b")])
    }

    func testRepeatedCursorWithErrorPolicyThrows() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([2], next: "c2"), .page([3], next: nil)])
        let collection = collection(client, options: CollectionOptions(onRepeatedCursor: .error))
        _ = try await collection.loadNext()
        let error = await expectLoadError { try await collection.loadNext() }
        guard case .undecodable? = error else { return XCTFail("expected .undecodable, got \(String(describing: error))") }
        let state = await collection.state
        XCTAssertFalse(state.hasNext)
        XCTAssertNil(state.lastId, "no cursor is left once hasNext is false")
        XCTAssertNotNil(state.lastError)
        XCTAssertFalse(state.isLoading)
        let after = try await collection.loadNext()
        XCTAssertNil(after.state.lastId)
        XCTAssertFalse(after.landed)
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2")])
    }

    func testTooManyEmptyPagesThatClaimMoreStop() async throws {
        let script: [Scripted] = (1...3).map { .page([], next: "e\($0)") } + [.page([7], next: nil)]
        let client = ScriptedClient(script)
        let collection = collection(client, options: CollectionOptions(maxEmptyPages: 2))
        let r1 = try await collection.loadNext()
        let r2 = try await collection.loadNext()
        XCTAssertTrue(r1.state.hasNext, "an empty page is not the end while the source says there is more")
        XCTAssertTrue(r2.state.hasNext)
        XCTAssertNil(r2.state.lastError)
        let r3 = try await collection.loadNext()
        XCTAssertFalse(r3.state.hasNext)
        XCTAssertNotNil(r3.state.lastError)
        XCTAssertTrue(r3.state.lastError?.contains("empty") ?? false, r3.state.lastError ?? "")
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        let calls = await client.calls
        XCTAssertEqual(calls.count, 3)
    }

    func testDefaultMaxEmptyPagesIsTen() async throws {
        let script: [Scripted] = (1...11).map { .page([], next: "e\($0)") }
        let client = ScriptedClient(script)
        let collection = collection(client)
        for index in 1...10 {
            let result = try await collection.loadNext()
            XCTAssertTrue(result.state.hasNext, "empty page \(index)")
        }
        let eleventh = try await collection.loadNext()
        XCTAssertFalse(eleventh.state.hasNext)
        XCTAssertNotNil(eleventh.state.lastError)
    }

    func testItemsBreakTheEmptyPageStreak() async throws {
        let script: [Scripted] = [
            .page([], next: "a"), .page([], next: "b"), .page([1], next: "c"),
            .page([], next: "d"), .page([], next: "e"), .page([2], next: nil),
        ]
        let client = ScriptedClient(script)
        let collection = collection(client, options: CollectionOptions(maxEmptyPages: 2))
        var last: PageResult?
        for _ in script { last = try await collection.loadNext() }
        XCTAssertNil(last?.state.lastError)
        XCTAssertEqual(last?.state.count, 2)
        XCTAssertEqual(last?.state.pages, 6)
        let calls = await client.calls
        XCTAssertEqual(calls.count, 6)
    }

    // MARK: Resume, buffer, dedupe

    func testLoadLastIdResumesFromTheGivenCursor() async throws {
        let client = ScriptedClient([.page([1], next: "c2"), .page([51, 52], next: "c27")])
        let collection = collection(client)
        _ = try await collection.loadNext()
        let resumed = try await collection.load(lastId: .string("c26"))
        XCTAssertEqual(itemIds(resumed.items), [51, 52])
        XCTAssertEqual(resumed.page, 1)
        XCTAssertEqual(resumed.state.count, 2, "load resets before resuming")
        XCTAssertEqual(resumed.state.lastId, .string("c27"))
        let calls = await client.calls
        XCTAssertEqual(calls.last?.cursor, .string("c26"))
        XCTAssertEqual(calls.last?.isFirstPage, false)
    }

    func testLoadLastIdWithANumberOnThePageStrategy() async throws {
        let client = ScriptedClient([.page([7, 8]), .page([9])])
        let collection = collection(client, paging: Paging(strategy: .page), options: CollectionOptions(pageSize: 2))
        let resumed = try await collection.load(lastId: .integer(4))
        XCTAssertEqual(resumed.state.lastId, .integer(5))
        let last = try await collection.loadNext()
        XCTAssertFalse(last.state.hasNext, "a short page ends")
        let calls = await client.calls
        XCTAssertEqual(calls.map(\.cursor), [.integer(4), .integer(5)])
        XCTAssertEqual(calls.map(\.isFirstPage), [false, false])
        XCTAssertEqual(calls.map(\.pageSize), [2, 2])
    }

    func testMaxItemsKeepsTheNewestWithAbsoluteOffsets() async throws {
        let client = ScriptedClient([.page([1, 2], next: "b"), .page([3, 4], next: "c"), .page([5], next: nil)])
        let collection = collection(client, options: CollectionOptions(maxItems: 3))
        for _ in 0..<3 { _ = try await collection.loadNext() }
        let state = await collection.state
        XCTAssertEqual(state.count, 5, "pages still flow past maxItems")

        let all = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(all.offset, 2, "offsets 0 and 1 were dropped")
        XCTAssertEqual(itemIds(all.items), [3, 4, 5])
        XCTAssertEqual(all.count, 5)

        let one = await collection.items(offset: 3, limit: 1)
        XCTAssertEqual(one.offset, 3)
        XCTAssertEqual(itemIds(one.items), [4])

        let tail = await collection.items(offset: 4, limit: 10)
        XCTAssertEqual(itemIds(tail.items), [5])

        let past = await collection.items(offset: 10, limit: nil)
        XCTAssertEqual(past.items, [])

        // Asking below the oldest kept item starts at the oldest kept item, and the
        // reply's offset says where that is (item N is at absolute offset N - 1).
        let straddling = await collection.items(offset: 1, limit: 2)
        XCTAssertEqual(straddling.offset, 2)
        XCTAssertEqual(itemIds(straddling.items).first, 3)
        XCTAssertLessThanOrEqual(straddling.items.count, 2)
        XCTAssertEqual(itemIds(straddling.items), Array(3..<(3 + straddling.items.count)))
    }

    func testDedupeDropsItemsAlreadyDelivered() async throws {
        let client = ScriptedClient([.page([1, 2, 3], next: "b"), .page([3, 4, 2, 5, 4], next: nil)])
        let paging = Paging(strategy: .cursor, id: "/id")
        let collection = collection(client, paging: paging, options: CollectionOptions(dedupe: true))
        let first = try await collection.loadNext()
        XCTAssertEqual(itemIds(first.items), [1, 2, 3])
        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [4, 5])
        XCTAssertEqual(second.state.count, 5)
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(itemIds(kept.items), [1, 2, 3, 4, 5])
    }

    func testWithoutDedupeDuplicatesAreDelivered() async throws {
        let client = ScriptedClient([.page([1, 2], next: "b"), .page([2, 3], next: nil)])
        let collection = collection(client, paging: Paging(strategy: .cursor, id: "/id"))
        _ = try await collection.loadNext()
        let second = try await collection.loadNext()
        XCTAssertEqual(itemIds(second.items), [2, 3])
    }

    func testResetForgetsItemsAndSeenIds() async throws {
        let client = ScriptedClient([.page([1, 2], next: "b"), .page([1, 2], next: nil)])
        let paging = Paging(strategy: .cursor, id: "/id")
        let collection = collection(client, paging: paging, options: CollectionOptions(dedupe: true))
        _ = try await collection.loadNext()
        await collection.reset()
        let state = await collection.state
        XCTAssertEqual(state, NextPageState())
        let empty = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(empty.items, [])
        let again = try await collection.loadNext()
        XCTAssertEqual(itemIds(again.items), [1, 2], "ids seen before the reset are delivered again")
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(kept.offset, 0)
        XCTAssertEqual(itemIds(kept.items), [1, 2])
    }

    func testDifferentCollectionsLoadConcurrently() async throws {
        let clientA = ScriptedClient([.page([1], next: nil)], hold: [0])
        let clientB = ScriptedClient([.page([2], next: nil)], hold: [0])
        let a = collection(clientA)
        let b = collection(clientB)
        let loadA = Task { try await a.loadNext() }
        let loadB = Task { try await b.loadNext() }
        // Both fetches are in flight at once: neither waits for the other.
        await clientA.waitForStart(1)
        await clientB.waitForStart(1)
        await clientB.release(0)
        let resultB = try await loadB.value
        XCTAssertEqual(itemIds(resultB.items), [2])
        let stateA = await a.state
        XCTAssertTrue(stateA.isLoading, "A is still loading after B finished")
        await clientA.release(0)
        let resultA = try await loadA.value
        XCTAssertEqual(itemIds(resultA.items), [1])
    }

    func testPrefetchNeverChangesWhichCursorIsFetched() async throws {
        let client = ScriptedClient([.page([1, 2], next: "c2"), .page([3, 4], next: "c3"), .page([5], next: nil)])
        let collection = collection(client, options: CollectionOptions(prefetch: 1))
        var delivered: [Int] = []
        var pages: [Int] = []
        while await collection.state.hasNext {
            let result = try await collection.loadNext()
            delivered += itemIds(result.items)
            pages.append(result.page)
            if pages.count > 3 { break }
        }
        XCTAssertEqual(delivered, [1, 2, 3, 4, 5])
        XCTAssertEqual(pages, [1, 2, 3])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [nil, .string("c2"), .string("c3")], "each cursor once, in order")
    }

    // MARK: Walking whole sources with each counting strategy

    func testOffsetStrategyWalk() async throws {
        let client = ScriptedClient([.page([1, 2]), .page([3, 4]), .page([5])])
        let collection = collection(client, paging: Paging(strategy: .offset), options: CollectionOptions(pageSize: 2))
        var results: [PageResult] = []
        while await collection.state.hasNext { results.append(try await collection.loadNext()) }
        XCTAssertEqual(results.flatMap { itemIds($0.items) }, [1, 2, 3, 4, 5])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [.integer(0), .integer(2), .integer(4)])
    }

    func testPageStrategyWalkFromStart() async throws {
        let client = ScriptedClient([.page([1, 2]), .page([3, 4]), .page([])])
        let collection = collection(client, paging: Paging(strategy: .page, start: 0))
        var results: [PageResult] = []
        while await collection.state.hasNext { results.append(try await collection.loadNext()) }
        XCTAssertEqual(results.flatMap { itemIds($0.items) }, [1, 2, 3, 4])
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [.integer(0), .integer(1), .integer(2)])
    }
}

/// `ItemBuffer` on its own: a ring of the newest `capacity` items with absolute offsets.
final class ItemBufferTests: XCTestCase {
    func testDropsOldestAndKeepsAbsoluteOffsetsAcrossManyAppends() {
        var buffer = ItemBuffer(capacity: 10)
        var next = 0
        for round in 0..<1000 {
            let batch = (0..<(round % 7 + 1)).map { _ -> RawJSON in
                defer { next += 1 }
                return .integer(next)
            }
            buffer.append(contentsOf: batch)
            XCTAssertEqual(buffer.endOffset, next)
            XCTAssertEqual(buffer.count, min(10, next))
            XCTAssertEqual(buffer.firstOffset, max(0, next - 10))
        }
        let slice = buffer.slice(offset: next - 4, limit: 2)
        XCTAssertEqual(slice.offset, next - 4)
        XCTAssertEqual(slice.items.map(\.description), ["\(next - 4)", "\(next - 3)"])
        let whole = buffer.slice(offset: 0, limit: nil)
        XCTAssertEqual(whole.offset, next - 10)
        XCTAssertEqual(whole.items.map(\.description), (next - 10..<next).map { "\($0)" })
        // Below the oldest kept item: the slice starts at the oldest kept item and says so.
        let below = buffer.slice(offset: 0, limit: 3)
        XCTAssertEqual(below.offset, next - 10)
        XCTAssertLessThanOrEqual(below.items.count, 3)
        XCTAssertEqual(below.items.map(\.description), (0..<below.items.count).map { "\(next - 10 + $0)" })
        let past = buffer.slice(offset: next + 5, limit: 3)
        XCTAssertEqual(past.items.count, 0)
        XCTAssertEqual(buffer.slice(offset: next - 1, limit: 0).items.count, 0)
    }

    func testOffsetsAndLimitsNearIntMaxDoNotOverflow() {
        var buffer = ItemBuffer(capacity: 10)
        buffer.append(contentsOf: (0..<5).map { RawJSON.integer($0) })
        XCTAssertEqual(buffer.slice(offset: 1, limit: .max).items.map(\.description), ["1", "2", "3", "4"])
        XCTAssertEqual(buffer.slice(offset: .max, limit: 1).items.count, 0)
        XCTAssertEqual(buffer.slice(offset: .max, limit: .max).items.count, 0)
        XCTAssertEqual(buffer.slice(offset: 1 << 62, limit: 1 << 62).items.count, 0)
        XCTAssertEqual(buffer.slice(offset: .max, limit: nil).offset, 5)
    }

    func testZeroCapacityKeepsNothing() {
        var buffer = ItemBuffer(capacity: 0)
        buffer.append(contentsOf: [.integer(1), .integer(2)])
        XCTAssertEqual(buffer.count, 0)
        XCTAssertEqual(buffer.endOffset, 2)
        XCTAssertEqual(buffer.slice(offset: 0, limit: nil).items.count, 0)
    }

    func testRemoveAllStartsOffsetsAgain() {
        var buffer = ItemBuffer(capacity: 2)
        buffer.append(contentsOf: [.integer(1), .integer(2), .integer(3)])
        buffer.removeAll()
        XCTAssertEqual(buffer.firstOffset, 0)
        XCTAssertEqual(buffer.endOffset, 0)
        buffer.append(contentsOf: [.integer(9)])
        XCTAssertEqual(buffer.slice(offset: 0, limit: nil).items, [.integer(9)])
    }
}
