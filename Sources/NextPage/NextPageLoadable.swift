import Jansson

/// What `performLoad` hands back: one page and what comes after it.
public struct LoadedPage: Sendable {
    public var items: PageItems
    /// Item ids, when the collection asked for them (`dedupe`); otherwise empty.
    public var ids: [Cursor?]
    /// The cursor of the next page.
    public var next: Cursor?
    /// Whether the source says there is more.
    public var hasNext: Bool
    /// Checks of the page still to run before it may land (jansson's
    /// validation of the items); they return the items' ids when wanted,
    /// and the items when jansson reads them differently from the bytes
    /// (repeated keys). `next`, `hasNext` and the number of items are final
    /// already, so the next page may be fetched while these run.
    public var pendingCheck: (@Sendable () throws -> PageCheck.Outcome)?

    public init(
        items: PageItems, ids: [Cursor?] = [], next: Cursor?, hasNext: Bool,
        pendingCheck: (@Sendable () throws -> PageCheck.Outcome)? = nil
    ) {
        self.items = items
        self.ids = ids
        self.next = next
        self.hasNext = hasNext
        self.pendingCheck = pendingCheck
    }

    public init(items: [RawJSON], ids: [Cursor?] = [], next: Cursor?, hasNext: Bool) {
        self.init(items: PageItems(items), ids: ids, next: next, hasNext: hasNext)
    }

    /// Runs the pending checks; afterwards the page may land.
    public mutating func completeChecks() throws {
        guard let check = pendingCheck else { return }
        pendingCheck = nil
        let outcome = try check()
        if !outcome.ids.isEmpty { ids = outcome.ids }
        if let replaced = outcome.items { items = replaced }
    }
}

/// The reply to `load` and `loadNext`.
public struct PageResult: Sendable {
    public var items: PageItems
    /// 1-based number of this page (for a reply without a page: the pages loaded so far).
    public var page: Int
    /// The collection's state after the page landed.
    public var state: NextPageState
    /// True when `ifLoading: "skip"` returned without loading.
    public var skipped: Bool
    /// True when a page was fetched and landed; false for a reply without a
    /// page (skipped, or the source was already at its end).
    public var landed: Bool

    public init(items: PageItems, page: Int, state: NextPageState, skipped: Bool = false, landed: Bool = true) {
        self.items = items
        self.page = page
        self.state = state
        self.skipped = skipped
        self.landed = landed
    }
}

/// What a `loadNext` does when another fetch of the same collection is in flight.
public enum IfLoading: String, Sendable, CaseIterable {
    /// Wait, then get the page after the one being loaded.
    case queue
    /// Return at once with no items and `skipped: true` (the seeds' `if isLoading { return }`).
    case skip
}

/// How a collection stops sources that would loop forever.
public struct LoopGuard: Sendable, Equatable {
    public var onRepeatedCursor: CollectionOptions.RepeatedCursorPolicy
    public var maxEmptyPages: Int

    public init(onRepeatedCursor: CollectionOptions.RepeatedCursorPolicy = .stop, maxEmptyPages: Int = 10) {
        self.onRepeatedCursor = onRepeatedCursor
        self.maxEmptyPages = maxEmptyPages
    }
}

/// How far ahead of the calls a collection fetches pages. Pages are always
/// fetched in cursor order (each with the cursor its predecessor gave), and
/// a page fetched ahead lands only when a call asks for it.
public struct ReadAhead: Sendable, Equatable {
    /// Pages fetched in the background after a page is delivered, so the
    /// next calls answer at once (`prefetch`: 0, 1 or 2).
    public var afterDelivery: Int
    /// When calls are waiting (queued `loadNext`s, a `loadAll`), how many
    /// pages beyond the one being loaded may be fetched while that one's
    /// checks still run. Only for sources whose reads have no effects, such
    /// as files: a page read this way is dropped, unseen, when the page
    /// before it fails its checks.
    public var whileChecking: Int

    public init(afterDelivery: Int = 0, whileChecking: Int = 0) {
        self.afterDelivery = afterDelivery
        self.whileChecking = whileChecking
    }

    /// Nothing is fetched before it is asked for.
    public static let none = ReadAhead()
}

/// The bookkeeping behind "one fetch at a time": the queue of waiting calls,
/// the fetches started for the next pages, and an epoch that `reset` moves
/// on so that nothing started before it can land after it. Owned by the
/// conforming actor and touched only by the `NextPageLoadable` extension.
public struct LoadQueue: Sendable {
    fileprivate struct Waiter {
        let id: Int
        var continuation: CheckedContinuation<Void, any Error>?
        var granted = false
    }

    fileprivate var epoch = 0
    /// Waiting calls by id; `order` holds their ids first come, first served
    /// (ids of calls that gave up are skipped when reached).
    fileprivate var waiters: [Int: Waiter] = [:]
    fileprivate var order: [Int] = []
    fileprivate var orderHead = 0
    fileprivate var nextWaiterId = 0

    /// What is known of a fetched page before its checks have run.
    fileprivate struct Head {
        var next: Cursor?
        var hasNext: Bool
        var itemCount: Int
    }

    /// One page being fetched, or fetched and not yet landed.
    fileprivate struct Fetch {
        let id: Int
        let cursor: Cursor?
        let isFirstPage: Bool
        /// Items received from the source before this page.
        let loadedBefore: Int
        var task: Task<Void, Never>?
        var head: Head?
        /// The outcome, when it came before a call asked for it.
        var outcome: Result<LoadedPage, any Error>?
        /// The call waiting for it.
        var consumer: CheckedContinuation<Result<LoadedPage, any Error>, Never>?
    }

    /// Fetches of consecutive pages: the first is for the collection's
    /// cursor, each next one for the cursor its predecessor's head gave.
    fileprivate var fetches: [Fetch] = []
    fileprivate var nextFetchId = 0
    fileprivate var emptyStreak = 0
    /// Items received from the source since the last reset (before `dedupe`).
    fileprivate var received = 0
    /// Calls that will ask for page after page (`loadAll`): demand beyond the waiters.
    fileprivate var streaming = 0

    public init() {}
}

/// A place in line for one `loadNext`, taken in arrival order by
/// `enqueueLoadNext` and redeemed by `loadNext(_:)`.
public struct LoadTicket: Sendable {
    fileprivate let epoch: Int
    fileprivate let waiter: Int?
    fileprivate let skipped: PageResult?
}

/// A collection that loads one page at a time (the seeds' `NextPageLoadable`).
///
/// Conformers provide the state, the storage hooks and `performLoad`; the
/// state machine (`loadNext`, `load`, `reset`, failure handling, queueing,
/// reading ahead, cancellation, loop guards) is written once, in this
/// protocol's extension.
public protocol NextPageLoadable: Actor {
    /// `hasNext`, `isLoading`, `lastId` and counters.
    var nextPageState: NextPageState { get set }
    /// Queue bookkeeping for the extension; start with `LoadQueue()`.
    var loadQueue: LoadQueue { get set }
    /// Loop guards for sources that never end.
    var loopGuard: LoopGuard { get }
    /// How far ahead of the calls pages may be fetched.
    ///
    /// The default implementation returns `.none`.
    nonisolated var readAhead: ReadAhead { get }

    /// Fetches the page at `cursor` (`isFirstPage` for the source's first page)
    /// and says what comes after it; the page's `pendingCheck` runs before it
    /// lands. Runs off the actor; throws `LoadError`.
    nonisolated func performLoad(after cursor: Cursor?, isFirstPage: Bool, loadedBefore: Int) async throws -> LoadedPage

    /// The cursor of a fresh collection's first request.
    ///
    /// The default implementation returns `nil`.
    func firstCursor() -> Cursor?

    /// Called when a page lands; returns the items delivered to the caller
    /// (a conformer may drop duplicates) after storing them.
    func didLoad(_ page: LoadedPage) -> PageItems

    /// Called when the collection is reset; forget every stored item.
    func didReset()
}

extension NextPageLoadable {
    public nonisolated var readAhead: ReadAhead { .none }

    public func firstCursor() -> Cursor? { nil }

    /// Loads the page after the last one loaded (the first page when fresh).
    ///
    /// Calls made while a fetch is in flight wait their turn and each get the
    /// following page, or, with `.skip`, return at once with `skipped`.
    public func loadNext(ifLoading: IfLoading = .queue) async throws -> PageResult {
        try await loadNext(enqueueLoadNext(ifLoading: ifLoading))
    }

    /// Takes a place in line without waiting. Callers that must keep the
    /// order in which requests arrived take tickets in that order, then
    /// redeem each with `loadNext(_:)` (every ticket must be redeemed).
    public func enqueueLoadNext(ifLoading: IfLoading = .queue) -> LoadTicket {
        guard nextPageState.isLoading else {
            nextPageState.isLoading = true
            return LoadTicket(epoch: loadQueue.epoch, waiter: nil, skipped: nil)
        }
        if ifLoading == .skip {
            let skipped = PageResult(items: PageItems(), page: nextPageState.pages, state: nextPageState, skipped: true, landed: false)
            return LoadTicket(epoch: loadQueue.epoch, waiter: nil, skipped: skipped)
        }
        let id = loadQueue.nextWaiterId
        loadQueue.nextWaiterId += 1
        loadQueue.waiters[id] = LoadQueue.Waiter(id: id)
        loadQueue.order.append(id)
        // One more call wants a page: maybe fetch it now.
        readAheadIfWanted()
        return LoadTicket(epoch: loadQueue.epoch, waiter: id, skipped: nil)
    }

    /// Waits for the ticket's turn, then loads the next page.
    public func loadNext(_ ticket: LoadTicket) async throws -> PageResult {
        if let skipped = ticket.skipped { return skipped }
        guard ticket.epoch == loadQueue.epoch else { throw LoadError.cancelled }
        // Waiting takes little memory per call: the loading itself runs in
        // its own function, whose larger frame exists only once it is this
        // call's turn (thousands of calls may be waiting).
        if let waiter = ticket.waiter { try await waitForTurn(waiter) }
        return try await loadTurn(epoch: ticket.epoch)
    }

    /// Loads the next page for the call whose turn it is.
    private func loadTurn(epoch: Int) async throws -> PageResult {
        guard epoch == loadQueue.epoch else { throw LoadError.cancelled }
        if Task.isCancelled {
            passTurn()
            throw LoadError.cancelled
        }

        guard nextPageState.hasNext else {
            passTurn()
            return PageResult(items: PageItems(), page: nextPageState.pages, state: nextPageState, landed: false)
        }
        let isFirstPage = nextPageState.pages == 0 && nextPageState.lastId == nil
        let cursor = isFirstPage ? firstCursor() : nextPageState.lastId
        // The page may have been fetched ahead already; otherwise fetch it now.
        let fetchedAhead = loadQueue.fetches.first.map { $0.cursor == cursor && $0.isFirstPage == isFirstPage } ?? false
        if !fetchedAhead {
            cancelFetches()
            startFetch(cursor: cursor, isFirstPage: isFirstPage, loadedBefore: loadQueue.received)
        }
        let fetchId = loadQueue.fetches[0].id
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<LoadedPage, any Error>, Never>) in
                if let outcome = loadQueue.fetches[0].outcome {
                    loadQueue.fetches.removeFirst()
                    continuation.resume(returning: outcome)
                } else {
                    loadQueue.fetches[0].consumer = continuation
                }
            }
        } onCancel: {
            Task { await self.abandonFetch(fetchId) }
        }
        // A reset while the fetch was in flight already freed the turn; this page never lands.
        guard epoch == loadQueue.epoch else { throw LoadError.cancelled }

        switch outcome {
        case .failure(let error):
            // Pages fetched after this one followed a cursor that never landed.
            cancelFetches()
            let failure = (error as? LoadError) ?? .upstream(UpstreamFailure(retryable: false, message: "\(error)"))
            if failure == .cancelled {
                passTurn()
                throw LoadError.cancelled
            }
            if isFirstPage {
                // The seeds' fail handler: a failed first page leaves a fresh collection.
                nextPageState.reset()
                nextPageState.isLoading = true
            }
            nextPageState.lastError = failure.message
            passTurn()
            throw failure
        case .success(let page):
            // A caller that gave up never receives the page, so it must not land either.
            if Task.isCancelled {
                cancelFetches()
                passTurn()
                throw LoadError.cancelled
            }
            return try land(page, fetchedWith: cursor)
        }
    }

    /// Resets the collection, then loads its first page, or the page after
    /// `lastId` when given (resuming from a saved cursor).
    public func load(lastId: Cursor? = nil) async throws -> PageResult {
        try await loadNext(enqueueLoad(lastId: lastId))
    }

    /// Resets at once and takes the first place in line for the reloading
    /// fetch; redeem the ticket with `loadNext(_:)`.
    public func enqueueLoad(lastId: Cursor? = nil) -> LoadTicket {
        reset()
        if let lastId {
            nextPageState.lastId = lastId
        }
        return enqueueLoadNext(ifLoading: .queue)
    }

    /// Back to a fresh collection. Fetches in flight are cancelled and every
    /// waiting call ends with `LoadError.cancelled`; nothing they loaded lands.
    public func reset() {
        loadQueue.epoch += 1
        cancelFetches()
        loadQueue.emptyStreak = 0
        loadQueue.received = 0
        let waiters = loadQueue.order[loadQueue.orderHead...].compactMap { loadQueue.waiters[$0] }
        loadQueue.waiters = [:]
        loadQueue.order = []
        loadQueue.orderHead = 0
        for waiter in waiters { waiter.continuation?.resume(throwing: LoadError.cancelled) }
        nextPageState.reset()
        didReset()
    }

    /// Declares (`+1`) or withdraws (`-1`) a caller that will ask for page
    /// after page, such as `loadAll`: pages may be read ahead for it.
    public func streamingDemand(_ delta: Int) {
        loadQueue.streaming = max(0, loadQueue.streaming + delta)
        readAheadIfWanted()
    }

    private func land(_ page: LoadedPage, fetchedWith cursor: Cursor?) throws -> PageResult {
        var hasNext = page.hasNext
        var stopReason: String?
        if hasNext, let cursor, page.next == cursor {
            stopReason = "source returned the cursor '\(cursor.text)' again"
            if loopGuard.onRepeatedCursor == .error {
                cancelFetches()
                nextPageState.hasNext = false
                nextPageState.lastError = stopReason
                passTurn()
                throw LoadError.undecodable(PageDecodingFailure(message: stopReason!))
            }
            hasNext = false
        }
        if page.items.isEmpty && hasNext {
            loadQueue.emptyStreak += 1
            if loadQueue.emptyStreak > loopGuard.maxEmptyPages {
                hasNext = false
                stopReason = "stopped after \(loadQueue.emptyStreak) empty pages in a row"
            }
        } else {
            loadQueue.emptyStreak = 0
        }
        loadQueue.received += page.items.count
        let delivered = didLoad(page)
        nextPageState.update(hasNext: hasNext, lastId: hasNext ? page.next : nil, added: delivered.count)
        nextPageState.lastError = stopReason
        let number = nextPageState.pages
        // Pages fetched ahead must continue from where this one left off.
        if let first = loadQueue.fetches.first, !(hasNext && first.cursor == nextPageState.lastId && !first.isFirstPage) {
            cancelFetches()
        }
        readAheadIfWanted()
        passTurn()
        return PageResult(items: delivered, page: number, state: nextPageState)
    }

    // MARK: Fetching

    /// Starts fetching the page at `cursor` and appends it to the fetches.
    private func startFetch(cursor: Cursor?, isFirstPage: Bool, loadedBefore: Int) {
        let id = loadQueue.nextFetchId
        loadQueue.nextFetchId += 1
        let policy = readAhead
        let reportsHead = policy.afterDelivery > 1 || policy.whileChecking > 0
        loadQueue.fetches.append(LoadQueue.Fetch(id: id, cursor: cursor, isFirstPage: isFirstPage, loadedBefore: loadedBefore))
        let task = Task.detached {
            let result: Result<LoadedPage, any Error>
            do {
                var page = try await self.performLoad(after: cursor, isFirstPage: isFirstPage, loadedBefore: loadedBefore)
                if reportsHead {
                    await self.headArrived(id, LoadQueue.Head(next: page.next, hasNext: page.hasNext, itemCount: page.items.count))
                }
                if Task.isCancelled { throw LoadError.cancelled }
                try page.completeChecks()
                result = .success(page)
            } catch {
                result = .failure(error)
            }
            await self.finishFetch(id, result)
        }
        if let index = loadQueue.fetches.firstIndex(where: { $0.id == id }) {
            loadQueue.fetches[index].task = task
        }
    }

    /// What comes after a fetched page is known: maybe fetch that next.
    private func headArrived(_ id: Int, _ head: LoadQueue.Head) {
        guard let index = loadQueue.fetches.firstIndex(where: { $0.id == id }) else { return }
        loadQueue.fetches[index].head = head
        readAheadIfWanted()
    }

    /// Starts the fetch of the page after the last one known, when the
    /// read-ahead policy and the calls waiting want it and the loop guards
    /// would let that page be asked for.
    private func readAheadIfWanted() {
        let policy = readAhead
        guard policy.afterDelivery > 0 || policy.whileChecking > 0 else { return }
        var allowed = policy.afterDelivery
        let demand = loadQueue.waiters.count + loadQueue.streaming
        if policy.whileChecking > 0 && demand > 0 {
            allowed = max(allowed, 1 + min(demand, policy.whileChecking))
        }
        guard loadQueue.fetches.count < allowed else { return }

        let cursor: Cursor?
        let loadedBefore: Int
        var streak = loadQueue.emptyStreak
        if let last = loadQueue.fetches.last {
            guard let head = last.head, head.hasNext, let next = head.next, next != last.cursor else { return }
            for fetch in loadQueue.fetches {
                guard let head = fetch.head else { return }
                streak = head.itemCount == 0 && head.hasNext ? streak + 1 : 0
            }
            // Landing that page would stop the collection: nothing after it is asked for.
            guard streak <= loopGuard.maxEmptyPages else { return }
            cursor = next
            loadedBefore = last.loadedBefore + head.itemCount
        } else {
            // Only after a page was delivered, never for a fresh collection.
            guard nextPageState.pages > 0, nextPageState.hasNext, let lastId = nextPageState.lastId else { return }
            cursor = lastId
            loadedBefore = loadQueue.received
        }
        startFetch(cursor: cursor, isFirstPage: false, loadedBefore: loadedBefore)
    }

    /// Delivers a fetch's outcome to the call waiting for it, or keeps it
    /// for the call that will ask; ignored once the fetch was dropped.
    private func finishFetch(_ id: Int, _ result: Result<LoadedPage, any Error>) {
        guard let index = loadQueue.fetches.firstIndex(where: { $0.id == id }) else { return }
        if let consumer = loadQueue.fetches[index].consumer {
            loadQueue.fetches.remove(at: index)
            consumer.resume(returning: result)
        } else {
            loadQueue.fetches[index].outcome = result
            loadQueue.fetches[index].task = nil
        }
    }

    /// Cancels every fetch and releases the call waiting for one.
    private func cancelFetches() {
        let fetches = loadQueue.fetches
        loadQueue.fetches = []
        for fetch in fetches {
            fetch.task?.cancel()
            fetch.consumer?.resume(returning: .failure(LoadError.cancelled))
        }
    }

    /// The caller of a fetch gave up: cancel the fetches and release the caller at once.
    private func abandonFetch(_ id: Int) {
        guard let first = loadQueue.fetches.first, first.id == id, first.consumer != nil else { return }
        cancelFetches()
    }

    // MARK: Taking turns

    /// Waits until the calls ahead finish; throws `LoadError.cancelled` when
    /// the caller is cancelled or the collection is reset meanwhile.
    private func waitForTurn(_ id: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard let waiter = loadQueue.waiters[id] else {
                    continuation.resume(throwing: LoadError.cancelled)
                    return
                }
                if waiter.granted {
                    loadQueue.waiters[id] = nil
                    continuation.resume()
                } else if Task.isCancelled {
                    loadQueue.waiters[id] = nil
                    continuation.resume(throwing: LoadError.cancelled)
                } else {
                    loadQueue.waiters[id]?.continuation = continuation
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// Drops a waiting call whose caller gave up. A call already given the
    /// turn keeps it and passes it on itself.
    private func cancelWaiter(_ id: Int) {
        guard let waiter = loadQueue.waiters[id], !waiter.granted else { return }
        loadQueue.waiters[id] = nil
        waiter.continuation?.resume(throwing: LoadError.cancelled)
    }

    /// Hands the turn to the next waiting call, or marks the collection idle.
    private func passTurn() {
        while loadQueue.orderHead < loadQueue.order.count {
            let id = loadQueue.order[loadQueue.orderHead]
            loadQueue.orderHead += 1
            if loadQueue.orderHead > 1024 && loadQueue.orderHead * 2 > loadQueue.order.count {
                loadQueue.order.removeFirst(loadQueue.orderHead)
                loadQueue.orderHead = 0
            }
            guard let waiter = loadQueue.waiters[id] else { continue }
            if let continuation = waiter.continuation {
                loadQueue.waiters[id] = nil
                continuation.resume()
            } else {
                // Its caller has not started waiting yet; it finds the turn granted.
                loadQueue.waiters[id]?.granted = true
            }
            return
        }
        nextPageState.isLoading = false
    }
}
