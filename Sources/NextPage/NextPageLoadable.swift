import Jansson
import Synchronization
import NIOConcurrencyHelpers

/// What `performLoad` hands back: one page and what comes after it.
public struct LoadedPage: Sendable {
    public var items: PageItems
    /// Item ids, when the collection asked for them (`dedupe`); otherwise empty.
    public var ids: [Cursor?]
    /// Items' incremental values, when the collection asked for them; otherwise empty.
    public var marks: [IncrementalValue?] = []
    /// The cursor of the next page.
    public var next: Cursor?
    /// Whether the source says there is more.
    public var hasNext: Bool
    /// Why the source ends here although it claimed more (it gave no cursor
    /// to continue from): the collection's `lastError` once the page lands.
    public var endNote: String?
    /// The pages known to follow `next`, when the page says where the walk
    /// ends: a collection with `ReadAhead.fanOut` fetches them at once.
    public var ahead: PagesAhead?
    /// Reads what follows the page again, as if other items and pages had
    /// come before it (`next`, `hasNext`, `endNote`, `ahead`): for a page
    /// fetched on a forecast whose items before it turned out otherwise
    /// (a shorter page before it), so that the page need not be fetched again.
    public var reread: (@Sendable (LoadedBefore) -> (Advance, PagesAhead?))?
    /// Checks of the page still to run before it may land (jansson's
    /// validation of the items); they return the items' ids when wanted,
    /// and the items when jansson reads them differently from the bytes
    /// (repeated keys). `next`, `hasNext` and the number of items are final
    /// already, so the next page may be fetched while these run.
    public var pendingCheck: (@Sendable () async throws -> PageCheck.Outcome)?

    public init(
        items: PageItems, ids: [Cursor?] = [], next: Cursor?, hasNext: Bool,
        pendingCheck: (@Sendable () async throws -> PageCheck.Outcome)? = nil
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

    /// What follows the page when `loadedBefore` came before it (see `reread`).
    mutating func follow(_ loadedBefore: LoadedBefore) {
        guard let reread else { return }
        let (advance, ahead) = reread(loadedBefore)
        next = advance.next
        hasNext = advance.hasNext
        endNote = advance.endNote
        self.ahead = ahead
    }

    /// Runs the pending checks; afterwards the page may land.
    public mutating func completeChecks() async throws {
        guard let check = pendingCheck else { return }
        pendingCheck = nil
        let outcome = try await check()
        if !outcome.ids.isEmpty { ids = outcome.ids }
        if !outcome.marks.isEmpty { marks = outcome.marks }
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
    /// Why this page stopped a source that claimed more (it repeated its
    /// cursor, or too many empty pages came in a row); `nil` otherwise.
    public var stopReason: String?

    public init(items: PageItems, page: Int, state: NextPageState, skipped: Bool = false, landed: Bool = true, stopReason: String? = nil) {
        self.items = items
        self.page = page
        self.state = state
        self.skipped = skipped
        self.landed = landed
        self.stopReason = stopReason
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
    /// When calls are waiting and the pages ahead are known (`LoadedPage.ahead`),
    /// how many pages may be fetched at once, the one being loaded included
    /// (`concurrency`; 1: none beyond what `whileChecking` allows). Only for
    /// sources whose reads have no effects, as `whileChecking`.
    public var fanOut: Int

    public init(afterDelivery: Int = 0, whileChecking: Int = 0, fanOut: Int = 1) {
        self.afterDelivery = afterDelivery
        self.whileChecking = whileChecking
        self.fanOut = fanOut
    }

    /// Nothing is fetched before it is asked for.
    public static let none = ReadAhead()
}

/// The bookkeeping behind "one fetch at a time": the calls in line, the
/// call being served, and the fetches started for the next pages. Owned by
/// the conforming actor and touched only by the `NextPageLoadable` extension,
/// on that actor. A class, so that reading it through the protocol's
/// requirement does not copy every array and dictionary in it.
public final class LoadQueue {
    /// One call in line, from `enqueueLoadNext` until it is answered.
    fileprivate struct Call {
        /// Where its answer goes to its caller.
        let handoff: CallHandoff
    }

    fileprivate var calls: [Int: Call] = [:]
    /// Answers handed over that their callers have not taken yet (a reset
    /// withdraws them); those taken are swept out now and then.
    fileprivate var untaken: [CallHandoff] = []
    /// Whether calls in line are being served (see `ServingSignal`).
    fileprivate let signal = ServingSignal()
    /// Ids of the calls not served yet, first come, first served (ids of
    /// calls that gave up are skipped when reached).
    fileprivate var order: [Int] = []
    fileprivate var orderHead = 0
    /// Calls in `order` that are still waiting.
    fileprivate var waiting = 0
    fileprivate var nextCallId = 0

    /// The call whose page is being fetched, and what that page is.
    fileprivate struct Serving {
        let call: Int
        let cursor: Cursor?
        let isFirstPage: Bool
    }

    fileprivate var serving: Serving?

    /// What is known of a fetched page before its checks have run.
    fileprivate struct Head {
        var next: Cursor?
        var hasNext: Bool
        var itemCount: Int
        /// The pages known to follow `next`.
        var ahead: PagesAhead?
        /// Reads the above again for other items before the page (`LoadedPage.reread`).
        var reread: (@Sendable (LoadedBefore) -> (Advance, PagesAhead?))?

        /// The head as it reads when `loadedBefore` came before the page.
        func following(_ loadedBefore: LoadedBefore) -> Head {
            guard let reread else { return self }
            let (advance, ahead) = reread(loadedBefore)
            return Head(next: advance.next, hasNext: advance.hasNext, itemCount: itemCount, ahead: ahead, reread: reread)
        }
    }

    /// One page being fetched, or fetched and not yet landed.
    fileprivate struct Fetch {
        let id: Int
        let cursor: Cursor?
        let isFirstPage: Bool
        /// Items and pages received from the source before this page (a
        /// forecast corrected once the page before it is known).
        var loadedBefore: LoadedBefore
        /// The items before the page that its fetch read it with.
        let fetchedAfter: LoadedBefore
        var task: Task<Void, Never>?
        var head: Head?
        /// The outcome, when it came before a call was served with it.
        var outcome: Result<LoadedPage, any Error>?
    }

    /// Fetches of consecutive pages: the first is for the collection's
    /// cursor, each next one for the cursor its predecessor's head gave.
    fileprivate var fetches: [Fetch] = []
    fileprivate var nextFetchId = 0
    /// The cursors of the pages landed since the last reset (their hashes),
    /// so that a source leading back to one of them (a cycle) is stopped.
    /// Not saved in a state file: a restored collection starts afresh.
    /// When it holds `maxLandedCursors`, it starts over: a cycle of up to
    /// that many pages is still found, in a bounded amount of memory.
    fileprivate var landedCursors = Set<Int>()
    static let maxLandedCursors = 100_000
    /// Items and pages received from the source since the last reset (before `dedupe`).
    fileprivate var received = LoadedBefore()
    /// Calls that will ask for page after page (`loadAll`): demand beyond the waiters.
    fileprivate var streaming = 0
    /// Pages that calls with a limit (`loadAll` with `maxPages`) will still
    /// ask for beyond the calls in line.
    fileprivate var streamingPages = 0
    /// The pages known to follow the last page landed (its `ahead`).
    fileprivate var landedAhead: PagesAhead?
    /// A page fetched ahead failed: nothing more is fetched ahead until a page lands.
    fileprivate var aheadFailed = false
    /// Whether the last call served ended with a page that landed.
    fileprivate var lastCallLanded = false

    public init() {}
}

/// A page whose head is known, and what it says of the pages after it.
private struct Anchor {
    /// The cursor the page was fetched with (`nil` for the page landed last: not needed).
    let cursor: Cursor?
    let head: LoadQueue.Head
    /// Items and pages received up to and including this page.
    let loadedAfter: LoadedBefore

    init(cursor: Cursor?, head: LoadQueue.Head, loadedBefore: LoadedBefore) {
        self.init(cursor: cursor, head: head, loadedAfter: loadedBefore.adding(items: head.itemCount))
    }

    init(cursor: Cursor?, head: LoadQueue.Head, loadedAfter: LoadedBefore) {
        self.cursor = cursor
        self.head = head
        self.loadedAfter = loadedAfter
    }

    /// What this page says of the page `position` pages after its next one.
    enum Forecast {
        /// That page's cursor, and the items and pages before it.
        case page(Cursor, LoadedBefore)
        /// There is no such page.
        case none
        /// This page does not say.
        case unknown
    }

    /// What this page says of the page `position` pages after its next (0: the next).
    func forecast(_ position: Int) -> Forecast {
        guard head.hasNext, let next = head.next else { return .none }
        if position == 0 { return .page(next, loadedAfter) }
        guard let ahead = head.ahead else { return .unknown }
        guard let cursor = ahead.cursor(position) else { return .none }
        return .page(cursor, LoadedBefore(items: loadedAfter.items + position * ahead.itemsPerPage, pages: loadedAfter.pages + position))
    }
}

/// Where the answer to one call passes from the collection to its caller,
/// whichever comes first: the caller waits here, off the collection's
/// actor, and the answer resumes it directly.
final class CallHandoff: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<PageResult, any Error>)
        case answered(Result<PageResult, any Error>)
        case taken
    }

    /// A pthread lock, as elsewhere in this module: ThreadSanitizer sees it
    /// (it does not see `Synchronization.Mutex`, which waits on a futex in
    /// the uninstrumented standard library).
    private let state = NIOLockedValueBox(State.pending)
    private let gaveUp = Atomic<Bool>(false)
    /// The collection's signal, for the caller to start serving.
    let signal: ServingSignal

    init(signal: ServingSignal) {
        self.signal = signal
    }

    /// Set, from any thread, when the caller gives up.
    func giveUp() { gaveUp.store(true, ordering: .relaxed) }
    var hasGivenUp: Bool { gaveUp.load(ordering: .relaxed) }

    /// Answers the call: resumes its caller, or keeps the answer until the
    /// caller asks. Returns whether the caller has it already.
    func answer(_ result: Result<PageResult, any Error>) -> Bool {
        let waiting: CheckedContinuation<PageResult, any Error>? = state.withLockedValue { state in
            switch state {
            case .waiting(let continuation):
                state = .taken
                return continuation
            case .pending:
                state = .answered(result)
                return nil
            case .answered, .taken:
                return nil
            }
        }
        waiting?.resume(with: result)
        return waiting != nil
    }

    /// Replaces an answer the caller has not taken yet with `LoadError.cancelled`.
    func withdraw() {
        state.withLockedValue { state in
            if case .answered = state { state = .answered(.failure(LoadError.cancelled)) }
        }
    }

    /// Whether the caller has taken its answer.
    var isTaken: Bool {
        state.withLockedValue { state in
            if case .taken = state { return true }
            return false
        }
    }

    /// Waits for the answer (at most one caller waits).
    func take() async throws -> PageResult {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PageResult, any Error>) in
            let answer: Result<PageResult, any Error>? = state.withLockedValue { state in
                switch state {
                case .answered(let result):
                    state = .taken
                    return result
                case .pending:
                    state = .waiting(continuation)
                    return nil
                case .waiting, .taken:
                    return .failure(LoadError.cancelled)
                }
            }
            if let answer { continuation.resume(with: answer) }
        }
    }
}

/// Whether a collection is serving the calls in line: set by the first
/// caller that waits while it is not (that caller then starts serving),
/// cleared by the collection when its line runs empty. Calls enqueued while
/// it is set are served without their callers visiting the collection.
final class ServingSignal: Sendable {
    private let serving = Atomic<Bool>(false)

    /// Marks the line as served; true when it was not, and the caller must
    /// start serving.
    func start() -> Bool {
        serving.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// The line ran empty.
    func stop() {
        serving.store(false, ordering: .releasing)
    }
}

/// A place in line for one `loadNext`, taken in arrival order by
/// `enqueueLoadNext` and redeemed by `loadNext(_:)`.
public struct LoadTicket: Sendable {
    fileprivate let call: Int?
    fileprivate let handoff: CallHandoff?
    fileprivate let skipped: PageResult?

    /// Gives up the call from any thread, at once, before its caller knows:
    /// its page is not fetched for it, or does not land. Redeeming the
    /// ticket then ends with `LoadError.cancelled`.
    public func giveUp() {
        handoff?.giveUp()
    }
}

/// A collection that loads one page at a time (the seeds' `NextPageLoadable`).
///
/// Conformers provide the state, the storage hooks and `performLoad`; the
/// state machine (`loadNext`, `load`, `reset`, failure handling, queueing,
/// reading ahead, cancellation, loop guards) is written once, in this
/// protocol's extension.
///
/// The collection serves its calls itself, one at a time and in the order
/// they were enqueued: a call waits only for its result. When a fetch ends,
/// its page lands and goes to the call it was fetched for, and the next
/// call is served at once, with a page fetched ahead when there is one.
public protocol NextPageLoadable: Actor {
    /// `hasNext`, `isLoading`, `lastId` and counters.
    var nextPageState: NextPageState { get set }
    /// Queue bookkeeping for the extension: a `LoadQueue()` of its own.
    var loadQueue: LoadQueue { get }
    /// Loop guards for sources that never end.
    var loopGuard: LoopGuard { get }
    /// How far ahead of the calls pages may be fetched.
    ///
    /// The default implementation returns `.none`.
    nonisolated var readAhead: ReadAhead { get }

    /// Fetches the page at `cursor` (`isFirstPage` for the source's first page)
    /// and says what comes after it; the page's `pendingCheck` runs before it
    /// lands. Runs off the actor; throws `LoadError`.
    nonisolated func performLoad(after cursor: Cursor?, isFirstPage: Bool, loadedBefore: LoadedBefore) async throws -> LoadedPage

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
    /// Calls made while another is being served wait their turn and each get
    /// the following page, or, with `.skip`, return at once with `skipped`.
    public func loadNext(ifLoading: IfLoading = .queue) async throws -> PageResult {
        try await loadNext(enqueueLoadNext(ifLoading: ifLoading))
    }

    /// Takes a place in line without waiting. Callers that must keep the
    /// order in which requests arrived take tickets in that order, then
    /// redeem each with `loadNext(_:)` (every ticket must be redeemed).
    public func enqueueLoadNext(ifLoading: IfLoading = .queue) -> LoadTicket {
        if ifLoading == .skip && nextPageState.isLoading {
            let skipped = PageResult(items: PageItems(), page: nextPageState.pages, state: nextPageState, skipped: true, landed: false)
            return LoadTicket(call: nil, handoff: nil, skipped: skipped)
        }
        let id = loadQueue.nextCallId
        loadQueue.nextCallId += 1
        let handoff = CallHandoff(signal: loadQueue.signal)
        loadQueue.calls[id] = LoadQueue.Call(handoff: handoff)
        loadQueue.order.append(id)
        loadQueue.waiting += 1
        nextPageState.isLoading = true
        // Serving starts when a caller waits (`loadNext(_:)`), so that what is
        // enqueued together (a batch) is admitted before any page lands.
        readAheadIfWanted()
        return LoadTicket(call: id, handoff: handoff, skipped: nil)
    }

    /// Waits for the ticket's page. Throws `LoadError.cancelled` when the
    /// caller gives up first or the collection is reset meanwhile.
    ///
    /// The caller waits off the collection's actor: it visits the actor
    /// only to start serving when the line is not being served already, and
    /// the answer resumes it directly.
    public nonisolated func loadNext(_ ticket: LoadTicket) async throws -> PageResult {
        if let skipped = ticket.skipped { return skipped }
        guard let id = ticket.call, let handoff = ticket.handoff else { throw LoadError.cancelled }
        return try await withTaskCancellationHandler {
            if handoff.signal.start() { await self.serve() }
            return try await handoff.take()
        } onCancel: {
            handoff.giveUp()
            Task { await self.callGaveUp(id) }
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
    /// call in line ends with `LoadError.cancelled`; nothing they loaded lands.
    public func reset() {
        cancelFetches()
        loadQueue.received = LoadedBefore()
        loadQueue.landedCursors = []
        loadQueue.lastCallLanded = false
        loadQueue.landedAhead = nil
        loadQueue.aheadFailed = false
        // An answer its caller has not taken yet ends too: that reply was not sent.
        let calls = loadQueue.calls
        let untaken = loadQueue.untaken
        loadQueue.calls = [:]
        loadQueue.untaken = []
        loadQueue.order = []
        loadQueue.orderHead = 0
        loadQueue.waiting = 0
        loadQueue.serving = nil
        loadQueue.signal.stop()
        for handoff in untaken { handoff.withdraw() }
        for (_, call) in calls { _ = call.handoff.answer(.failure(LoadError.cancelled)) }
        nextPageState.reset()
        didReset()
    }

    /// Puts a fresh collection where a saved state left it (a restarted
    /// server, a `nextpage next` loop): the next page is the one after
    /// `saved.lastId`, and the items and pages counted before it are the
    /// evidence for a `total` or a short page, as if this process had
    /// loaded them.
    public func resume(from saved: NextPageState) {
        reset()
        nextPageState = saved
        nextPageState.isLoading = false
        loadQueue.received = LoadedBefore(items: saved.count, pages: saved.pages)
    }

    /// Declares (`+1`) or withdraws (`-1`) a caller that will ask for page
    /// after page, such as `loadAll`: pages may be read ahead for it.
    public func streamingDemand(_ delta: Int) {
        loadQueue.streaming = max(0, loadQueue.streaming + delta)
        readAheadIfWanted()
    }

    /// Declares (`> 0`) or withdraws (`< 0`) pages that a caller with a
    /// limit (`loadAll` with `maxPages`) will ask for, one after the other,
    /// beyond its call in line: pages may be read ahead for it, and none
    /// beyond them.
    public func streamingDemand(pages delta: Int) {
        loadQueue.streamingPages = max(0, loadQueue.streamingPages + delta)
        readAheadIfWanted()
    }

    // MARK: Serving calls

    /// Serves the calls in line while their pages are at hand: a call whose
    /// collection has no next page is answered at once, a page fetched ahead
    /// lands at once, and otherwise a fetch is started (or awaited) and
    /// `finishFetch` carries on.
    private func serve() {
        while loadQueue.serving == nil, let id = nextWaitingCall() {
            if loadQueue.calls[id]?.handoff.hasGivenUp ?? true {
                deliver(id, .failure(LoadError.cancelled))
                continue
            }
            let state = nextPageState
            guard state.hasNext else {
                deliver(id, .success(PageResult(items: PageItems(), page: state.pages, state: state, landed: false)))
                continue
            }
            let isFirstPage = state.pages == 0 && state.lastId == nil
            let cursor = isFirstPage ? firstCursor() : state.lastId
            loadQueue.serving = LoadQueue.Serving(call: id, cursor: cursor, isFirstPage: isFirstPage)
            // The page may have been fetched ahead already; otherwise fetch it now.
            let fetchedAhead = loadQueue.fetches.first.map { $0.cursor == cursor && $0.isFirstPage == isFirstPage } ?? false
            if fetchedAhead, loadQueue.fetches[0].loadedBefore != loadQueue.received {
                correct(0, loadedBefore: loadQueue.received)
                checkForecasts(after: 0)
            }
            if !fetchedAhead {
                cancelFetches()
                startFetch(cursor: cursor, isFirstPage: isFirstPage, loadedBefore: loadQueue.received)
            }
            guard let outcome = loadQueue.fetches[0].outcome else { break }
            loadQueue.fetches.removeFirst()
            finishServing(with: outcome)
        }
        lineChanged()
        readAheadIfWanted()
    }

    /// After calls joined or left the line: whether the collection is
    /// loading, and whether its line is still being served.
    private func lineChanged() {
        let busy = loadQueue.serving != nil || loadQueue.waiting > 0
        nextPageState.isLoading = busy
        if !busy { loadQueue.signal.stop() }
    }

    /// The next call in line that is still waiting, taken out of the line.
    private func nextWaitingCall() -> Int? {
        while loadQueue.orderHead < loadQueue.order.count {
            let id = loadQueue.order[loadQueue.orderHead]
            loadQueue.orderHead += 1
            if loadQueue.orderHead > 1024 && loadQueue.orderHead * 2 > loadQueue.order.count {
                loadQueue.order.removeFirst(loadQueue.orderHead)
                loadQueue.orderHead = 0
            }
            guard loadQueue.calls[id] != nil else { continue }
            loadQueue.waiting -= 1
            return id
        }
        return nil
    }

    /// The served call's fetch ended: its page lands and goes to the call,
    /// or the failure does.
    private func finishServing(with outcome: Result<LoadedPage, any Error>) {
        guard let serving = loadQueue.serving else { return }
        loadQueue.serving = nil
        loadQueue.lastCallLanded = false
        let id = serving.call
        switch outcome {
        case .failure(let error):
            // Pages fetched after this one followed a cursor that never landed.
            cancelFetches()
            let failure = (error as? LoadError) ?? .upstream(UpstreamFailure(retryable: false, message: "\(error)"))
            if failure != .cancelled {
                if serving.isFirstPage {
                    // The seeds' fail handler: a failed first page leaves a fresh collection.
                    nextPageState.reset()
                }
                nextPageState.lastError = failure.message
            }
            deliver(id, .failure(failure))
        case .success(let page):
            // A caller that gave up never receives the page, so it must not land either.
            if loadQueue.calls[id]?.handoff.hasGivenUp ?? true {
                cancelFetches()
                deliver(id, .failure(LoadError.cancelled))
                return
            }
            do {
                let result = try land(page, fetchedWith: serving.cursor)
                loadQueue.lastCallLanded = true
                deliver(id, .success(result))
            } catch {
                deliver(id, .failure(error))
            }
        }
    }

    /// Hands a result to its call: to the caller waiting, or kept until it asks.
    private func deliver(_ id: Int, _ result: Result<PageResult, any Error>) {
        guard let call = loadQueue.calls.removeValue(forKey: id) else { return }
        if !call.handoff.answer(result) {
            if loadQueue.untaken.count >= 64 { loadQueue.untaken.removeAll { $0.isTaken } }
            loadQueue.untaken.append(call.handoff)
        }
    }

    /// The caller of call `id` gave up: a waiting call leaves the line; the
    /// call being served drops its fetch (and those after it) and ends.
    private func callGaveUp(_ id: Int) {
        // Not in line any more: answered already.
        guard let call = loadQueue.calls[id] else { return }
        if loadQueue.serving?.call == id {
            loadQueue.serving = nil
            loadQueue.lastCallLanded = false
            cancelFetches()
            deliver(id, .failure(LoadError.cancelled))
            serve()
        } else {
            loadQueue.calls[id] = nil
            loadQueue.waiting -= 1
            _ = call.handoff.answer(.failure(LoadError.cancelled))
            lineChanged()
        }
    }

    private func land(_ page: LoadedPage, fetchedWith cursor: Cursor?) throws -> PageResult {
        var hasNext = page.hasNext
        var stopReason: String? = hasNext ? nil : page.endNote
        var repeated: String?
        if hasNext, let next = page.next {
            if next == cursor && page.items.isEmpty {
                // lastId and offset move on by the items: an empty page leaves them where they were.
                repeated = "the page is empty and leads back to the cursor '\(next.text)' it was fetched with, although the source says there is more"
            } else if next == cursor {
                repeated = "source returned the cursor '\(next.text)' again"
            } else if loadQueue.landedCursors.contains(next.hashValue) {
                repeated = "source returned the cursor '\(next.text)' of an earlier page again (a cycle)"
            }
        }
        if let repeated {
            stopReason = repeated
            if loopGuard.onRepeatedCursor == .error {
                cancelFetches()
                // Stopped, as with `stop`, but the page is not delivered:
                // no cursor is left to fetch (`lastId` is null once `hasNext` is false).
                nextPageState.hasNext = false
                nextPageState.lastId = nil
                nextPageState.lastError = stopReason
                throw LoadError.undecodable(PageDecodingFailure(message: repeated))
            }
            hasNext = false
        }
        if page.items.isEmpty && hasNext {
            nextPageState.emptyPages += 1
            if nextPageState.emptyPages > loopGuard.maxEmptyPages {
                hasNext = false
                stopReason = "stopped after \(nextPageState.emptyPages) empty pages in a row"
            }
        } else {
            nextPageState.emptyPages = 0
        }
        loadQueue.received = loadQueue.received.adding(items: page.items.count)
        if let cursor {
            if loadQueue.landedCursors.count >= LoadQueue.maxLandedCursors { loadQueue.landedCursors = [] }
            loadQueue.landedCursors.insert(cursor.hashValue)
        }
        let delivered = didLoad(page)
        let lastId = hasNext ? page.next : nil
        nextPageState.update(hasNext: hasNext, lastId: lastId, added: delivered.count)
        nextPageState.lastError = stopReason
        loadQueue.landedAhead = hasNext ? page.ahead : nil
        loadQueue.aheadFailed = false
        // Pages fetched ahead must continue from where this one left off,
        // with the items before them they were fetched for.
        if let first = loadQueue.fetches.first {
            if !(hasNext && first.cursor == lastId && !first.isFirstPage) {
                cancelFetches()
            } else if first.loadedBefore != loadQueue.received {
                correct(0, loadedBefore: loadQueue.received)
                checkForecasts(after: 0)
            }
        }
        // The state a caller sees is that of its own page: others may land before it reads it.
        var state = nextPageState
        state.isLoading = loadQueue.waiting > 0
        return PageResult(items: delivered, page: state.pages, state: state, stopReason: stopReason)
    }

    // MARK: Fetching

    /// Starts fetching the page at `cursor` and appends it to the fetches.
    private func startFetch(cursor: Cursor?, isFirstPage: Bool, loadedBefore: LoadedBefore) {
        let id = loadQueue.nextFetchId
        loadQueue.nextFetchId += 1
        let policy = readAhead
        let reportsHead = policy.afterDelivery > 1 || policy.whileChecking > 0 || policy.fanOut > 1
        loadQueue.fetches.append(LoadQueue.Fetch(
            id: id, cursor: cursor, isFirstPage: isFirstPage, loadedBefore: loadedBefore, fetchedAfter: loadedBefore))
        let task = Task.detached {
            let result: Result<LoadedPage, any Error>
            do {
                var page = try await self.performLoad(after: cursor, isFirstPage: isFirstPage, loadedBefore: loadedBefore)
                if reportsHead {
                    await self.headArrived(id, LoadQueue.Head(
                        next: page.next, hasNext: page.hasNext, itemCount: page.items.count, ahead: page.ahead, reread: page.reread))
                }
                if Task.isCancelled { throw LoadError.cancelled }
                try await page.completeChecks()
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

    /// What comes after a fetched page is known: the pages fetched after it
    /// on a forecast must be the ones it leads to, and maybe more can be
    /// fetched now.
    private func headArrived(_ id: Int, _ head: LoadQueue.Head) {
        guard let index = loadQueue.fetches.firstIndex(where: { $0.id == id }) else { return }
        let fetch = loadQueue.fetches[index]
        // Read with the items before the page as they are known now.
        loadQueue.fetches[index].head = fetch.loadedBefore == fetch.fetchedAfter ? head : head.following(fetch.loadedBefore)
        checkForecasts(after: index)
        readAheadIfWanted()
    }

    /// Holds the fetches after `index` (up to the next one whose head has
    /// come, which holds those after it) to what the head at `index` says:
    /// a page it contradicts (another cursor, or beyond the end) is dropped
    /// with every fetch after it; a page it confirms, but after other items
    /// than forecast (a shorter page before it), is read again with those
    /// items instead of being fetched again; a page it cannot tell (it knows
    /// nothing beyond its next) waits for the heads before it.
    private func checkForecasts(after index: Int) {
        let fetches = loadQueue.fetches
        guard let head = fetches[index].head else { return }
        let anchor = Anchor(cursor: fetches[index].cursor, head: head, loadedBefore: fetches[index].loadedBefore)
        var following = index + 1
        while following < fetches.count {
            let fetch = fetches[following]
            switch anchor.forecast(following - index - 1) {
            case .unknown:
                return
            case .none:
                dropFetches(from: following)
                return
            case .page(let cursor, let loadedBefore):
                guard fetch.cursor == cursor, !fetch.isFirstPage else {
                    dropFetches(from: following)
                    return
                }
                if fetch.loadedBefore != loadedBefore {
                    correct(following, loadedBefore: loadedBefore)
                }
            }
            // The pages after one whose head has come are that one's to hold.
            if fetch.head != nil {
                checkForecasts(after: following)
                return
            }
            following += 1
        }
    }

    /// The fetch at `index` came after `loadedBefore`, not what was
    /// forecast: what follows its page is read again for that.
    private func correct(_ index: Int, loadedBefore: LoadedBefore) {
        loadQueue.fetches[index].loadedBefore = loadedBefore
        loadQueue.fetches[index].head = loadQueue.fetches[index].head?.following(loadedBefore)
        if case .success(var page)? = loadQueue.fetches[index].outcome {
            page.follow(loadedBefore)
            loadQueue.fetches[index].outcome = .success(page)
        }
    }

    /// Drops the fetch at `index` and every one after it.
    private func dropFetches(from index: Int) {
        let dropped = loadQueue.fetches[index...]
        loadQueue.fetches.removeSubrange(index...)
        for fetch in dropped { fetch.task?.cancel() }
    }

    /// Starts fetching the pages after the last one known, as long as the
    /// read-ahead policy and the calls waiting want them and the loop guards
    /// would let them be asked for.
    private func readAheadIfWanted() {
        let policy = readAhead
        guard policy.afterDelivery > 0 || policy.whileChecking > 0 || policy.fanOut > 1 else { return }
        while let (cursor, loadedBefore) = nextPageAhead(policy) {
            startFetch(cursor: cursor, isFirstPage: false, loadedBefore: loadedBefore)
        }
    }

    /// The page to fetch ahead next, if any: the one after the last fetch,
    /// read from the last fetch whose head has come (or from the page that
    /// landed last), directly (its `next`) or from the pages known ahead of
    /// it when the policy fans out.
    private func nextPageAhead(_ policy: ReadAhead) -> (Cursor, LoadedBefore)? {
        // One read of the queue (a class) and of the state, not one per use.
        let queue = loadQueue
        guard !queue.aheadFailed else { return nil }
        let fetches = queue.fetches
        // The pages calls will ask for: the one being loaded, those of the
        // calls in line, and those that calls will ask for beyond them.
        let beyond = queue.streaming > 0 ? Int.max / 4 : queue.streamingPages
        let wanted = (queue.serving == nil ? 0 : 1) + queue.waiting + beyond
        var allowed = policy.afterDelivery
        if policy.whileChecking > 0 {
            allowed = max(allowed, min(wanted, 1 + policy.whileChecking))
        }
        let fansOut = policy.fanOut > 1 && wanted > 0
        if fansOut { allowed = max(allowed, min(wanted, policy.fanOut)) }
        guard fetches.count < allowed else { return nil }
        let state = nextPageState

        var anchorIndex = fetches.count - 1
        while anchorIndex >= 0 && fetches[anchorIndex].head == nil { anchorIndex -= 1 }
        let anchor: Anchor
        if anchorIndex >= 0 {
            let fetch = fetches[anchorIndex]
            anchor = Anchor(cursor: fetch.cursor, head: fetch.head!, loadedBefore: fetch.loadedBefore)
        } else {
            // Only right after a page landed: never for a fresh collection, nor
            // after a call failed or gave up (its page is asked for again).
            guard queue.lastCallLanded, state.hasNext, let lastId = state.lastId else { return nil }
            anchor = Anchor(
                cursor: nil, head: LoadQueue.Head(next: lastId, hasNext: true, itemCount: 0, ahead: queue.landedAhead),
                loadedAfter: queue.received)
        }
        let position = fetches.count - anchorIndex - 1
        // Beyond the anchor's next page only when fanning out.
        guard position == 0 || fansOut, case .page(let cursor, let loadedBefore) = anchor.forecast(position) else { return nil }
        let page = (cursor: cursor, loadedBefore: loadedBefore)
        // Never a cursor fetched before: landing that page would stop the collection.
        guard page.cursor != anchor.cursor, !queue.landedCursors.contains(page.cursor.hashValue),
              !fetches.contains(where: { $0.cursor == page.cursor }) else { return nil }
        // Landing that page would stop the collection: nothing after it is asked for.
        var streak = state.emptyPages
        for fetch in fetches {
            // A page fetched on a forecast is expected to be full.
            streak = fetch.head.map { $0.itemCount == 0 && $0.hasNext } ?? false ? streak + 1 : 0
        }
        guard streak <= loopGuard.maxEmptyPages else { return nil }
        return (page.cursor, page.loadedBefore)
    }

    /// A fetch ended: the call being served gets it and the next calls are
    /// served; a fetch ahead keeps its page, and drops its failure; a
    /// dropped fetch is ignored.
    private func finishFetch(_ id: Int, _ fetched: Result<LoadedPage, any Error>) {
        guard let index = loadQueue.fetches.firstIndex(where: { $0.id == id }) else { return }
        let result = followed(fetched, loadQueue.fetches[index])
        if index == 0, loadQueue.serving != nil {
            loadQueue.fetches.removeFirst()
            finishServing(with: result)
            serve()
        } else if case .failure = result {
            // Nobody has asked for this page yet: the failure is dropped (with
            // any fetch after it), and the call that asks for the page fetches
            // it again, as it would have without fetching ahead, rather than
            // being answered with a failure from earlier. Nothing is fetched
            // ahead again until a page lands.
            dropFetches(from: index)
            loadQueue.aheadFailed = true
            if loadQueue.fetches.isEmpty { loadQueue.lastCallLanded = false }
        } else {
            loadQueue.fetches[index].outcome = result
            loadQueue.fetches[index].task = nil
        }
    }

    /// A fetch's page, read with the items before it as they are known now.
    private func followed(_ result: Result<LoadedPage, any Error>, _ fetch: LoadQueue.Fetch) -> Result<LoadedPage, any Error> {
        guard fetch.loadedBefore != fetch.fetchedAfter, case .success(var page) = result else { return result }
        page.follow(fetch.loadedBefore)
        return .success(page)
    }

    /// Fetches started and not yet taken by a call, in flight or done (for tests).
    var fetchesNotTaken: Int { loadQueue.fetches.count }

    /// Fetches done (their outcome kept) and not yet taken by a call (for tests).
    var fetchesDoneNotTaken: Int { loadQueue.fetches.filter { $0.outcome != nil }.count }

    /// Cancels every fetch.
    private func cancelFetches() {
        let fetches = loadQueue.fetches
        loadQueue.fetches = []
        for fetch in fetches { fetch.task?.cancel() }
    }
}
