import Jansson

/// What `performLoad` hands back: one page and what comes after it.
public struct LoadedPage: Sendable {
    public var items: [RawJSON]
    /// Item ids, when the collection asked for them (`dedupe`); otherwise empty.
    public var ids: [Cursor?]
    /// The cursor of the next page.
    public var next: Cursor?
    /// Whether the source says there is more.
    public var hasNext: Bool

    public init(items: [RawJSON], ids: [Cursor?] = [], next: Cursor?, hasNext: Bool) {
        self.items = items
        self.ids = ids
        self.next = next
        self.hasNext = hasNext
    }
}

/// The reply to `load` and `loadNext`.
public struct PageResult: Sendable {
    public var items: [RawJSON]
    /// 1-based number of this page (for a reply without a page: the pages loaded so far).
    public var page: Int
    /// The collection's state after the page landed.
    public var state: NextPageState
    /// True when `ifLoading: "skip"` returned without loading.
    public var skipped: Bool
    /// True when a page was fetched and landed; false for a reply without a
    /// page (skipped, or the source was already at its end).
    public var landed: Bool

    public init(items: [RawJSON], page: Int, state: NextPageState, skipped: Bool = false, landed: Bool = true) {
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

/// The bookkeeping behind "one fetch at a time": the queue of waiting calls,
/// the fetch in flight, and an epoch that `reset` moves on so that nothing
/// started before it can land after it. Owned by the conforming actor and
/// touched only by the `NextPageLoadable` extension.
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
    fileprivate struct Fetch {
        let id: Int
        let task: Task<Void, Never>
        let continuation: CheckedContinuation<Result<LoadedPage, any Error>, Never>
    }
    fileprivate var inFlight: Fetch?
    fileprivate var nextFetchId = 0
    fileprivate var emptyStreak = 0

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
/// cancellation, loop guards) is written once, in this protocol's extension.
public protocol NextPageLoadable: Actor {
    /// `hasNext`, `isLoading`, `lastId` and counters.
    var nextPageState: NextPageState { get set }
    /// Queue bookkeeping for the extension; start with `LoadQueue()`.
    var loadQueue: LoadQueue { get set }
    /// Loop guards for sources that never end.
    var loopGuard: LoopGuard { get }

    /// Fetches the page at `cursor` (`isFirstPage` for the source's first page)
    /// and says what comes after it. Runs off the actor; throws `LoadError`.
    nonisolated func performLoad(after cursor: Cursor?, isFirstPage: Bool, loadedBefore: Int) async throws -> LoadedPage

    /// The cursor of a fresh collection's first request.
    ///
    /// The default implementation returns `nil`.
    func firstCursor() -> Cursor?

    /// Called when a page lands; returns the items delivered to the caller
    /// (a conformer may drop duplicates) after storing them.
    func didLoad(_ page: LoadedPage) -> [RawJSON]

    /// Called when the collection is reset; forget every stored item.
    func didReset()
}

extension NextPageLoadable {
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
            let skipped = PageResult(items: [], page: nextPageState.pages, state: nextPageState, skipped: true, landed: false)
            return LoadTicket(epoch: loadQueue.epoch, waiter: nil, skipped: skipped)
        }
        let id = loadQueue.nextWaiterId
        loadQueue.nextWaiterId += 1
        loadQueue.waiters[id] = LoadQueue.Waiter(id: id)
        loadQueue.order.append(id)
        return LoadTicket(epoch: loadQueue.epoch, waiter: id, skipped: nil)
    }

    /// Waits for the ticket's turn, then loads the next page.
    public func loadNext(_ ticket: LoadTicket) async throws -> PageResult {
        if let skipped = ticket.skipped { return skipped }
        let epoch = ticket.epoch
        guard epoch == loadQueue.epoch else { throw LoadError.cancelled }
        if let waiter = ticket.waiter { try await waitForTurn(waiter) }
        guard epoch == loadQueue.epoch else { throw LoadError.cancelled }
        if Task.isCancelled {
            passTurn()
            throw LoadError.cancelled
        }

        guard nextPageState.hasNext else {
            passTurn()
            return PageResult(items: [], page: nextPageState.pages, state: nextPageState, landed: false)
        }
        let isFirstPage = nextPageState.pages == 0 && nextPageState.lastId == nil
        let cursor = isFirstPage ? firstCursor() : nextPageState.lastId
        let loadedBefore = nextPageState.count
        let fetchId = loadQueue.nextFetchId
        loadQueue.nextFetchId += 1
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<LoadedPage, any Error>, Never>) in
                let task = Task.detached {
                    let result: Result<LoadedPage, any Error>
                    do {
                        result = .success(try await self.performLoad(after: cursor, isFirstPage: isFirstPage, loadedBefore: loadedBefore))
                    } catch {
                        result = .failure(error)
                    }
                    await self.finishFetch(fetchId, result)
                }
                loadQueue.inFlight = LoadQueue.Fetch(id: fetchId, task: task, continuation: continuation)
            }
        } onCancel: {
            Task { await self.abandonFetch(fetchId) }
        }
        // A reset while the fetch was in flight already freed the turn; this page never lands.
        guard epoch == loadQueue.epoch else { throw LoadError.cancelled }

        switch outcome {
        case .failure(let error):
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

    /// Back to a fresh collection. A fetch in flight is cancelled and every
    /// waiting call ends with `LoadError.cancelled`; nothing they loaded lands.
    public func reset() {
        loadQueue.epoch += 1
        if let fetch = loadQueue.inFlight {
            loadQueue.inFlight = nil
            fetch.task.cancel()
            fetch.continuation.resume(returning: .failure(LoadError.cancelled))
        }
        loadQueue.emptyStreak = 0
        let waiters = loadQueue.order[loadQueue.orderHead...].compactMap { loadQueue.waiters[$0] }
        loadQueue.waiters = [:]
        loadQueue.order = []
        loadQueue.orderHead = 0
        for waiter in waiters { waiter.continuation?.resume(throwing: LoadError.cancelled) }
        nextPageState.reset()
        didReset()
    }

    private func land(_ page: LoadedPage, fetchedWith cursor: Cursor?) throws -> PageResult {
        var hasNext = page.hasNext
        var stopReason: String?
        if hasNext, let cursor, page.next == cursor {
            stopReason = "source returned the cursor '\(cursor.text)' again"
            if loopGuard.onRepeatedCursor == .error {
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
        let delivered = didLoad(page)
        nextPageState.update(hasNext: hasNext, lastId: hasNext ? page.next : nil, added: delivered.count)
        nextPageState.lastError = stopReason
        let number = nextPageState.pages
        passTurn()
        return PageResult(items: delivered, page: number, state: nextPageState)
    }

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

    /// Delivers a fetch's outcome to the call waiting for it, unless that call
    /// was already released by `reset` or cancellation.
    private func finishFetch(_ id: Int, _ result: Result<LoadedPage, any Error>) {
        guard let fetch = loadQueue.inFlight, fetch.id == id else { return }
        loadQueue.inFlight = nil
        fetch.continuation.resume(returning: result)
    }

    /// The caller of a fetch gave up: cancel the fetch and release the caller at once.
    private func abandonFetch(_ id: Int) {
        guard let fetch = loadQueue.inFlight, fetch.id == id else { return }
        loadQueue.inFlight = nil
        fetch.task.cancel()
        fetch.continuation.resume(returning: .failure(LoadError.cancelled))
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
