import Jansson
@testable import NextPage
import XCTest

/// Pages to the end as `loadAll` does (declaring that it will ask for
/// page after page); the ids of the items, in the order they landed.
func walkToTheEnd(_ collection: PagedCollection, maxPages: Int = 100) async throws -> [Int] {
    await collection.streamingDemand(1)
    var ids: [Int] = []
    do {
        for _ in 0..<maxPages {
            let result = try await collection.loadNext()
            ids += itemIds(result.items)
            if !result.state.hasNext { break }
        }
    } catch {
        await collection.streamingDemand(-1)
        throw error
    }
    await collection.streamingDemand(-1)
    return ids
}

/// A `Client` test double that answers by cursor (a page number or an
/// offset), not by the order in which fetches reach it, which fan-out does
/// not fix. It can hold chosen pages until the test releases them, records
/// every fetch, how many were in flight at once, and which fetches found
/// their task cancelled when they were let go. No sleeps, no timing.
actor NumberedPagesClient: Client {
    /// What to answer for a cursor, on its `attempt`-th fetch (from 1).
    typealias Script = @Sendable (_ cursor: Int64, _ attempt: Int) -> Scripted

    private let script: Script
    private var held: Set<Int64>
    private var gates: [Int64: [CheckedContinuation<Void, Never>]] = [:]
    private var startWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var finishWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var attempts: [Int64: Int] = [:]

    /// Cursors fetched, in the order the fetches reached the client.
    private(set) var fetched: [Int64] = []
    private(set) var finished = 0
    private(set) var inFlight = 0
    private(set) var maxInFlight = 0
    /// Held cursors whose task was cancelled by the time they were released.
    private(set) var cancelledWhileHeld: [Int64] = []

    nonisolated let fetchesHaveNoEffects = true

    init(hold: Set<Int64> = [], _ script: @escaping Script) {
        self.script = script
        self.held = hold
    }

    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        let cursor = request.cursor?.integerValue ?? -1
        fetched.append(cursor)
        attempts[cursor, default: 0] += 1
        let attempt = attempts[cursor]!
        inFlight += 1
        maxInFlight = max(maxInFlight, inFlight)
        resume(&startWaiters, reached: fetched.count)
        if held.contains(cursor) {
            await withCheckedContinuation { gates[cursor, default: []].append($0) }
            if Task.isCancelled { cancelledWhileHeld.append(cursor) }
        }
        defer {
            inFlight -= 1
            finished += 1
            resume(&finishWaiters, reached: finished)
        }
        switch script(cursor, attempt) {
        case .response(let response): return response
        case .failure(let error): throw error
        }
    }

    /// Lets the fetches of `cursor` answer, now and from now on.
    func release(_ cursor: Int64) {
        held.remove(cursor)
        for gate in gates.removeValue(forKey: cursor) ?? [] { gate.resume() }
    }

    func waitForStart(_ count: Int) async {
        if fetched.count >= count { return }
        await withCheckedContinuation { startWaiters.append((count, $0)) }
    }

    func waitForFinish(_ count: Int) async {
        if finished >= count { return }
        await withCheckedContinuation { finishWaiters.append((count, $0)) }
    }

    func times(_ cursor: Int64) -> Int { fetched.filter { $0 == cursor }.count }

    private func resume(_ waiters: inout [(count: Int, continuation: CheckedContinuation<Void, Never>)], reached: Int) {
        let ready = waiters.filter { $0.count <= reached }
        waiters.removeAll { $0.count <= reached }
        for waiter in ready { waiter.continuation.resume() }
    }
}

/// Fan-out (docs/config.md, `concurrency`): a `page` or `offset` walk whose total
/// is known fetches up to `concurrency` pages at once, and they land in
/// order, one at a time, with every guarantee of docs/methods.md (Guarantees): each page lands
/// once, a failed page is asked for again and the pages fetched after it
/// are dropped, `reset` cancels them all, the loop guards hold.
final class FanOutTests: XCTestCase {
    /// Page `number` of two items, ids from `(number - 1) * 2 + 1`, with `total`.
    static func page(_ number: Int64, total: Int64?, size: Int64 = 2) -> Scripted {
        let first = Int((number - 1) * size) + 1
        let ids = Array(first..<(first + Int(size)))
        return .page(ids, ["total": total.map(RawJSON.integer)])
    }

    private func collection(_ client: NumberedPagesClient, strategy: Paging.Strategy = .page, concurrency: Int = 4,
                            hasNext: String? = nil, options: CollectionOptions = CollectionOptions()) -> PagedCollection {
        var options = options
        options.concurrency = concurrency
        return PagedCollection(
            name: "test", client: client, paging: Paging(strategy: strategy, hasNext: hasNext, total: hasNext == nil ? "/total" : nil),
            options: options)
    }

    /// Waits (bounded, without timing anything) until `condition` holds.
    private func eventually(_ what: String, _ condition: () async -> Bool) async throws {
        for _ in 0..<10_000 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("never: \(what)")
    }

    func testPagesAreFetchedUpToConcurrencyAtOnceAndLandInOrderEachOnce() async throws {
        // Ten pages of two items; page 2 is held, so the pages after it wait for it to land.
        let client = NumberedPagesClient(hold: [2]) { number, _ in Self.page(number, total: 20) }
        let collection = collection(client)
        let walker = Task { try await walkToTheEnd(collection) }
        // Page 1 told the total: pages 2 to 5 are fetched at once (concurrency 4).
        await client.waitForStart(5)
        try await eventually("pages 3 to 5 done and kept") { await collection.fetchesDoneNotTaken == 3 }
        let fetchedWhileHeld = await client.fetched
        XCTAssertEqual(fetchedWhileHeld.sorted(), [1, 2, 3, 4, 5], "no more than 4 pages at once, and none before page 2 lands")
        let state = await collection.state
        XCTAssertEqual(state.pages, 1, "pages after a page not landed do not land")
        await client.release(2)
        let ids = try await walker.value
        XCTAssertEqual(ids, Array(1...20), "every item once, in order")
        let fetched = await client.fetched
        XCTAssertEqual(fetched.sorted(), Array(1...10), "each page fetched once, none past the total")
        let most = await client.maxInFlight
        XCTAssertGreaterThan(most, 1)
        XCTAssertLessThanOrEqual(most, 4)
        let end = await collection.state
        XCTAssertEqual(end.count, 20)
        XCTAssertFalse(end.hasNext)
    }

    func testWithConcurrencyOneThePagesAreFetchedOneAtATime() async throws {
        let client = NumberedPagesClient { number, _ in Self.page(number, total: 20) }
        let collection = collection(client, concurrency: 1)
        let ids = try await walkToTheEnd(collection)
        XCTAssertEqual(ids, Array(1...20))
        let most = await client.maxInFlight
        XCTAssertEqual(most, 1, "each page is fetched after the one before it was read")
    }

    func testAFailedPageAheadDropsThePagesAfterItAndIsFetchedAgain() async throws {
        // Page 4 fails once, while pages 2 and 3 have not landed: nobody has asked for it yet.
        let failure = LoadError.upstream(UpstreamFailure(status: 503, retryable: true, message: "unavailable"))
        let client = NumberedPagesClient(hold: [2, 3, 4, 5]) { number, attempt in
            number == 4 && attempt == 1 ? .failure(failure) : Self.page(number, total: 16)
        }
        let collection = collection(client)
        let walker = Task { try await walkToTheEnd(collection) }
        await client.waitForStart(5)
        await client.release(4)
        // The failure drops page 4 and every page fetched after it (5); 2 and 3 stay.
        try await eventually("page 4's failure dropped with page 5") {
            let finished = await client.finished
            let kept = await collection.fetchesNotTaken
            return finished >= 2 && kept == 2
        }
        let fetchedBefore = await client.fetched
        XCTAssertEqual(fetchedBefore.sorted(), [1, 2, 3, 4, 5], "nothing is fetched ahead again before a page lands")
        for number: Int64 in [5, 3, 2] { await client.release(number) }
        let ids = try await walker.value
        XCTAssertEqual(ids, Array(1...16), "every item once, in order; no call saw the failure")
        let again = await client.times(4)
        XCTAssertEqual(again, 2, "the failed page is asked for again")
        let dropped = await client.times(5)
        XCTAssertEqual(dropped, 2, "the page fetched after the failed one was dropped, and fetched again")
        let state = await collection.state
        XCTAssertNil(state.lastError)
    }

    func testAFailedPageThatIsAskedForFailsItsCallAndTheNextCallFetchesItAgain() async throws {
        let failure = LoadError.upstream(UpstreamFailure(status: 500, retryable: true, message: "broken"))
        let client = NumberedPagesClient(hold: [3]) { number, attempt in
            number == 3 && attempt == 1 ? .failure(failure) : Self.page(number, total: 16)
        }
        let collection = collection(client)
        await collection.streamingDemand(1)
        var ids: [Int] = []
        for _ in 0..<2 { ids += itemIds(try await collection.loadNext().items) }
        let third = Task { try await collection.loadNext() }
        // Pages 3 to 6 are in flight; page 3 is asked for.
        await client.waitForStart(6)
        try await eventually("the call for page 3 is in line") { await collection.state.isLoading }
        await client.release(3)
        let error = await expectLoadError { try await third.value }
        XCTAssertEqual(error, failure)
        let stuck = await collection.state
        XCTAssertEqual(stuck.lastId, .integer(3), "the cursor stays on the failed page")
        XCTAssertEqual(stuck.pages, 2)
        let pending = await collection.fetchesNotTaken
        XCTAssertEqual(pending, 0, "the pages fetched after the failed one are dropped")
        while true {
            let result = try await collection.loadNext()
            ids += itemIds(result.items)
            if !result.state.hasNext { break }
        }
        await collection.streamingDemand(-1)
        XCTAssertEqual(ids, Array(1...16))
        let again = await client.times(3)
        XCTAssertEqual(again, 2)
    }

    func testResetDuringFanOutCancelsEveryFetchAndNoneLands() async throws {
        let client = NumberedPagesClient(hold: [2, 3, 4, 5]) { number, _ in Self.page(number, total: 20) }
        let collection = collection(client)
        let first = try await collection.loadNext()
        XCTAssertEqual(itemIds(first.items), [1, 2])
        await collection.streamingDemand(1)
        let waiting = Task { try await collection.loadNext() }
        await client.waitForStart(5)
        try await eventually("the call for page 2 is in line") { await collection.state.isLoading }
        await collection.reset()
        await assertCancelled(waiting)
        for number: Int64 in 2...5 { await client.release(number) }
        await client.waitForFinish(5)
        let cancelled = await client.cancelledWhileHeld
        XCTAssertEqual(cancelled.sorted(), [2, 3, 4, 5], "every fetch in flight was cancelled")
        let state = await collection.state
        XCTAssertEqual(state, NextPageState(), "nothing landed after the reset")
        let kept = await collection.items(offset: 0, limit: nil)
        XCTAssertEqual(kept.items.count, 0)
        await collection.streamingDemand(-1)
        let again = try await collection.loadNext()
        XCTAssertEqual(itemIds(again.items), [1, 2], "the walk starts over")
        XCTAssertEqual(again.page, 1)
    }

    func testATotalThatGrowsUnderTheWalkIsFollowed() async throws {
        // The first pages say 10 pages (20 items); from page 5 on the source says 12.
        let client = NumberedPagesClient { number, _ in Self.page(number, total: number < 5 ? 20 : 24) }
        let collection = collection(client)
        let ids = try await walkToTheEnd(collection)
        XCTAssertEqual(ids, Array(1...24))
        let fetched = await client.fetched
        XCTAssertEqual(fetched.sorted(), Array(1...12), "each page once, none past the new total")
    }

    func testATotalThatShrinksUnderTheWalkEndsItThereAndNoPageBeyondLands() async throws {
        // Page 1 says 10 pages; from page 3 on the source says 6. Pages past 6 do not exist.
        let gone = LoadError.upstream(UpstreamFailure(status: 404, retryable: false, message: "no such page"))
        let client = NumberedPagesClient(hold: [3]) { number, _ in
            number > 6 ? .failure(gone) : Self.page(number, total: number < 3 ? 20 : 12)
        }
        let collection = collection(client)
        let walker = Task { try await walkToTheEnd(collection) }
        // Pages 2 to 5 are in flight on page 1's forecast; page 2 lands and 6 is asked for.
        await client.waitForStart(6)
        await client.release(3)
        let ids = try await walker.value
        XCTAssertEqual(ids, Array(1...12), "the walk ends at the new total; nothing beyond lands")
        let state = await collection.state
        XCTAssertFalse(state.hasNext)
        XCTAssertNil(state.lastError, "a page beyond the end that failed ahead was dropped, not reported")
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
    }

    func testAnOffsetWalkFansOutAndAnEmptyPageThatLeadsBackStopsIt() async throws {
        // Offsets of two items, total 20; the page at offset 6 is empty although the source says there is more.
        let client = NumberedPagesClient(hold: [2]) { offset, _ in
            let ids = offset == 6 ? [] : [Int(offset) + 1, Int(offset) + 2]
            return .page(ids, ["total": .integer(20), "more": .true])
        }
        var options = CollectionOptions()
        options.concurrency = 4
        let collection = PagedCollection(
            name: "test", client: client, paging: Paging(strategy: .offset, hasNext: "/more", total: "/total"), options: options)
        let walker = Task { try await walkToTheEnd(collection) }
        // Offsets 2, 4 and 6 are fetched at once, while 2 is held (8 too,
        // unless the empty page at 6 came back first and showed that the
        // walk cannot reach it: it is then never fetched, and need not be).
        await client.waitForStart(4)
        await client.release(2)
        let ids = try await walker.value
        XCTAssertEqual(ids, Array(1...6), "nothing after the empty page lands")
        let state = await collection.state
        XCTAssertFalse(state.hasNext)
        XCTAssertNotNil(state.lastError, "the repeated cursor is reported")
        let emptyTimes = await client.times(6)
        XCTAssertEqual(emptyTimes, 1, "the repeated cursor is never fetched a second time")
    }

    func testEmptyPagesStillStopTheWalkAfterMaxEmptyPages() async throws {
        // A source whose `hasNext` says more forever, with empty pages from page 3 on.
        let client = NumberedPagesClient { number, _ in
            let ids = number < 3 ? [Int(number) * 2 - 1, Int(number) * 2] : []
            return .page(ids, ["more": .true, "total": .integer(100)])
        }
        var options = CollectionOptions()
        options.maxEmptyPages = 3
        options.concurrency = 4
        let collection = PagedCollection(
            name: "test", client: client, paging: Paging(strategy: .page, hasNext: "/more", total: "/total"), options: options)
        let ids = try await walkToTheEnd(collection)
        XCTAssertEqual(ids, [1, 2, 3, 4])
        let state = await collection.state
        XCTAssertFalse(state.hasNext)
        XCTAssertEqual(state.pages, 6, "two pages with items, then four empty ones: the fourth stops it")
        XCTAssertEqual(state.lastError, "stopped after 4 empty pages in a row")
        let fetched = await client.fetched
        XCTAssertEqual(Set(fetched).count, fetched.count, "no page fetched twice")
        XCTAssertLessThanOrEqual(fetched.max() ?? 0, 6 + 3, "fetching ahead stops at the guard")
    }

    func testQueuedLoadNextCallsFanOutAsFarAsTheyAsk() async throws {
        let client = NumberedPagesClient { number, _ in Self.page(number, total: 40) }
        let collection = collection(client, concurrency: 8)
        _ = try await collection.loadNext()
        // Three calls in line: pages 2, 3 and 4, and no further.
        var tickets: [LoadTicket] = []
        for _ in 0..<3 { tickets.append(await collection.enqueueLoadNext()) }
        var ids: [Int] = []
        for ticket in tickets { ids += itemIds(try await collection.loadNext(ticket).items) }
        XCTAssertEqual(ids, Array(3...8))
        try await eventually("fetches settled") { await client.inFlight == 0 }
        let fetched = await client.fetched
        XCTAssertEqual(fetched.sorted(), [1, 2, 3, 4], "nothing beyond what the calls asked for")
    }
}

/// The pages a strategy knows ahead (`PagingStrategy.pagesAhead`).
final class PagesAheadTests: XCTestCase {
    func testGitHubLinksGiveThePagesBetweenNextAndLast() throws {
        let ahead = try XCTUnwrap(PagesAhead.numberedURLs(
            next: "https://api.github.com/repositories/1/issues?per_page=100&page=2",
            last: "https://api.github.com/repositories/1/issues?per_page=100&page=34", itemsPerPage: 100))
        XCTAssertEqual(ahead.count, 32)
        XCTAssertEqual(ahead.cursor(1), .string("https://api.github.com/repositories/1/issues?per_page=100&page=3"))
        XCTAssertEqual(ahead.cursor(32), .string("https://api.github.com/repositories/1/issues?per_page=100&page=34"))
        XCTAssertNil(ahead.cursor(33))
        XCTAssertNil(ahead.cursor(0))
        // Numbers that share digits, and the page number before other items.
        let shared = try XCTUnwrap(PagesAhead.numberedURLs(next: "/x?page=12&a=1", last: "/x?page=15&a=1", itemsPerPage: 5))
        XCTAssertEqual(shared.count, 3)
        XCTAssertEqual(shared.cursor(2), .string("/x?page=14&a=1"))
    }

    func testLinksThatDifferOtherwiseGiveNothing() {
        for (next, last) in [
            ("/x?page=2&a=1", "/x?page=9&a=2"),  // two items differ
            ("/x?page=2", "/y?page=9"),  // another path
            ("/x/2", "/x/9"),  // not a query value
            ("/x?page=02", "/x?page=09"),  // not written as numbers are
            ("/x?page=9", "/x?page=2"),  // last before next
            ("/x?cursor=abc", "/x?cursor=xyz"),
        ] {
            XCTAssertNil(PagesAhead.numberedURLs(next: next, last: last, itemsPerPage: 10), "\(next) / \(last)")
        }
        XCTAssertNil(PagesAhead.numberedURLs(next: "/x?page=2", last: "/x?page=9", itemsPerPage: 0), "an empty page forecasts nothing")
        XCTAssertEqual(PagesAhead.numberedURLs(next: "/x?page=2", last: "/x?page=2", itemsPerPage: 10)?.count, 0, "the next page is the last")
    }

    private func page(_ count: Int, total: Int64? = nil, link: String? = nil) -> UpstreamPage {
        UpstreamPage(items: (0..<count).map { RawJSON.integer($0) }, total: total, headers: link.map { [("Link", $0)] } ?? [])
    }

    func testPageNumbersUpToTheTotalOrTheLastLink() throws {
        let paging = Paging(strategy: .page, total: "/total")
        let strategy = PageNumberStrategy()
        let request = PageRequest(cursor: .integer(1), isFirstPage: true, paging: paging, options: CollectionOptions())
        let first = page(10, total: 95)
        let advance = strategy.advance(after: first, request: request, loadedBefore: LoadedBefore())
        let ahead = try XCTUnwrap(strategy.pagesAhead(after: first, request: request, advance: advance, loadedBefore: LoadedBefore()))
        // 95 items in pages of 10: pages 1 to 10; after the next (2): 3 to 10.
        XCTAssertEqual(ahead.count, 8)
        XCTAssertEqual(ahead.cursor(8), .integer(10))

        let linked = page(10, link: #"<https://api.example.com/x?page=2>; rel="next", <https://api.example.com/x?page=7>; rel="last""#)
        let byLink = Paging(strategy: .page)
        let linkRequest = PageRequest(cursor: .integer(1), isFirstPage: true, paging: byLink, options: CollectionOptions())
        let linkAdvance = strategy.advance(after: linked, request: linkRequest, loadedBefore: LoadedBefore())
        let fromLink = try XCTUnwrap(strategy.pagesAhead(after: linked, request: linkRequest, advance: linkAdvance, loadedBefore: LoadedBefore()))
        XCTAssertEqual(fromLink.count, 5)
        XCTAssertEqual(fromLink.cursor(5), .integer(7))

        XCTAssertNil(strategy.pagesAhead(after: page(10), request: linkRequest, advance: linkAdvance, loadedBefore: LoadedBefore()),
                     "no total, no last link: nothing known ahead")
    }

    func testOffsetsUpToTheTotal() throws {
        let paging = Paging(strategy: .offset, total: "/total")
        let strategy = OffsetStrategy()
        let request = PageRequest(cursor: .integer(0), isFirstPage: true, paging: paging, options: CollectionOptions())
        let first = page(25, total: 110)
        let advance = strategy.advance(after: first, request: request, loadedBefore: LoadedBefore())
        XCTAssertEqual(advance.next, .integer(25))
        let ahead = try XCTUnwrap(strategy.pagesAhead(after: first, request: request, advance: advance, loadedBefore: LoadedBefore()))
        // Offsets 50, 75, 100 follow 25 below 110.
        XCTAssertEqual(ahead.count, 3)
        XCTAssertEqual(ahead.cursor(1), .integer(50))
        XCTAssertEqual(ahead.cursor(3), .integer(100))
        XCTAssertEqual(ahead.itemsPerPage, 25)
    }

    func testOtherStrategiesKnowNothingAhead() {
        let page = UpstreamPage(items: [RawJSON.integer(1)], next: .string("c2"), total: 100)
        for strategy: Paging.Strategy in [.cursor, .lastId, .nextUrl] {
            let paging = Paging(strategy: strategy, total: "/total")
            let request = PageRequest(cursor: nil, isFirstPage: true, paging: paging, options: CollectionOptions())
            let advance = Advance(next: .string("c2"), hasNext: true)
            XCTAssertNil(strategy.implementation.pagesAhead(after: page, request: request, advance: advance, loadedBefore: LoadedBefore()),
                         strategy.rawValue)
        }
    }
}
