#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// What a request handler receives besides the request.
public struct RPCContext: Sendable {
    /// The request's id (`nil` for a notification).
    public let id: RequestID?
    /// Sends a notification to the peer (for progress and streamed pages).
    public let notify: @Sendable (_ method: String, _ params: RawJSON?) -> Void
    /// Suspends while the peer is behind reading: a request that sends
    /// notification after notification (`loadAll`) waits here before
    /// producing more.
    public let waitForOutputRoom: @Sendable () async -> Void
    /// What to do at once when a `$/cancelRequest` names this request: the
    /// handler adds it in `admit` (see `CancelActions`).
    public let cancellation: CancelActions

    /// A context for a request made in process (the shell commands), whose
    /// notifications go to `notify`; `waitForOutputRoom` defaults to
    /// returning at once.
    public init(
        id: RequestID?, notify: @escaping @Sendable (_ method: String, _ params: RawJSON?) -> Void,
        waitForOutputRoom: @escaping @Sendable () async -> Void = {}, cancellation: CancelActions = CancelActions()
    ) {
        self.id = id
        self.notify = notify
        self.waitForOutputRoom = waitForOutputRoom
        self.cancellation = cancellation
    }
}

/// Actions a handler registers while it admits a request, run by the
/// connection the moment a `$/cancelRequest` naming that request is read,
/// before the request's task sees its cancellation (which may not have
/// started yet, or be about to receive a result). A collection uses this to
/// give up its place in line at once, so that no page lands for a call
/// that was cancelled first.
public final class CancelActions: @unchecked Sendable {
    private let lock = Lock()
    // Guarded by `lock`.
    private var actions: [@Sendable () -> Void] = []
    private var fired = false

    public init() {}

    /// Adds an action; it runs at once when the request was cancelled already.
    public func add(_ action: @escaping @Sendable () -> Void) {
        let now = lock.locked { () -> Bool in
            if fired { return true }
            actions.append(action)
            return false
        }
        if now { action() }
    }

    /// Runs the actions (once).
    func fire() {
        let due = lock.locked { () -> [@Sendable () -> Void] in
            fired = true
            defer { actions = [] }
            return actions
        }
        for action in due { action() }
    }
}

/// The part of a request that runs concurrently with others; returns the `result`.
public typealias RPCWork = @Sendable () async throws -> RawJSON

/// Answers requests. The connection calls `admit` for each request in the
/// order requests arrived, one at a time, and runs the returned work
/// concurrently; order-sensitive steps (taking a place in a collection's
/// line) belong in `admit`, everything slow in the work.
public protocol RPCHandler: Sendable {
    func admit(_ request: RPCRequest, context: RPCContext) async -> RPCWork
}

/// A handler whose admission may refuse a request with a JSON-RPC error
/// (unknown method, bad params) before any work starts.
public protocol RefusingRPCHandler: RPCHandler {
    /// Admits `request` as `admit` does, or throws the error its reply is.
    func admitOrThrow(_ request: RPCRequest, context: RPCContext) async throws(RPCError) -> RPCWork
}

extension RefusingRPCHandler {
    /// A refusal becomes work that throws it, so the reply is that error.
    public func admit(_ request: RPCRequest, context: RPCContext) async -> RPCWork {
        do {
            return try await admitOrThrow(request, context: context)
        } catch {
            return { @Sendable in throw error }
        }
    }
}

/// Options of a connection (the server's command-line flags).
public struct ConnectionOptions: Sendable {
    public var framing: FramingMode = .auto
    public var maxMessageBytes = 64 << 20
    /// Seconds to wait for requests in flight at end of input.
    public var drainTimeout: Double = 10
    /// Replies waiting to be written beyond which reading and dispatching
    /// pause, and requests that stream notifications (`loadAll`) wait.
    public var maxPendingOutputBytes = 1 << 20
    /// Requests being answered beyond which reading pauses (each waiting
    /// request holds a task; a client that sends ten thousand at once is
    /// read as the earlier ones are answered).
    public var maxRequestsInFlight = 1024
    /// Answers each message (its notifications sent first) before the next
    /// one is read, so that a file of requests gets the replies an
    /// interactive session gets; a batch's members run one after another.
    /// `$/cancelRequest` then has nothing left to cancel. Off by default:
    /// requests run concurrently.
    public var sequential = false

    public init() {}
}

/// A JSON-RPC 2.0 connection over two file descriptors.
///
/// One thread reads and frames input; messages are dispatched in arrival
/// order; requests run concurrently (or, with `sequential`, one message
/// at a time); one `OutputWriter` writes replies.
/// Handles cancellation (`$/cancelRequest`, MCP's `notifications/cancelled`),
/// `shutdown` and `exit` itself.
///
/// Back-pressure: while more than `maxPendingOutputBytes` of output wait
/// for a peer that does not read, the reader stops reading, the dispatch
/// loop stops starting requests (many replies are built as a request is
/// admitted), and streaming requests wait before their next notification.
/// Memory then stays within the limit plus the replies of the requests
/// already started.
public final class Connection: @unchecked Sendable {
    /// Why the connection stopped, and the exit status that goes with it.
    public enum Ending: Sendable, Equatable {
        case endOfInput
        case exitNotification(afterShutdown: Bool)
        case stopped

        public var exitCode: Int32 {
            switch self {
            case .endOfInput, .stopped: return 0
            case .exitNotification(let afterShutdown): return afterShutdown ? 0 : 1
            }
        }
    }

    enum Event: Sendable {
        /// The messages of one read, in order.
        case frames([FrameEvent])
        case framing(Framing)
        case endOfInput
        case stop
        case finished(Int)
        /// A tick of the drain timer.
        case drainTick
        /// `exit` inside a batch that ran sequentially, once the batch is answered.
        case ended(Ending)
    }

    private let input: Int32
    public let writer: OutputWriter
    private let options: ConnectionOptions
    private let handler: any RPCHandler
    private let tap: (any MessageTap)?
    private let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation

    /// The requests being answered, and the reader's back-pressure.
    private let tracker: RequestTracker
    /// `sequential`: the reader takes one permit before it hands on the
    /// next message; one is given when a message has been answered.
    private let answered: Semaphore?

    /// How many times `stop()` was called, guarded by `stopRequests`.
    private let stopRequests = Condition()
    private var stopCount = 0

    // Touched only by the dispatch loop in `run()`.
    private var nextToken = 0
    private var shutdownRequested = false
    /// Requests admitted and not started yet (see `startAdmitted`).
    private var admitted: [Pending] = []

    /// Admitted requests beyond which they are started without waiting for
    /// the rest of their read.
    static let maxAdmittedTogether = 64

    /// A connection reading `input` and writing through `writer`; `tap`,
    /// when given, sees every message in and out (a transcript).
    public init(input: Int32, writer: OutputWriter, options: ConnectionOptions, handler: any RPCHandler, tap: (any MessageTap)? = nil) {
        self.input = input
        self.writer = writer
        self.options = options
        self.handler = handler
        self.tracker = RequestTracker(limit: options.maxRequestsInFlight)
        self.answered = options.sequential ? Semaphore() : nil
        self.tap = tap
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Asks the connection to stop reading and drain (SIGTERM, a dead parent).
    public func stop() {
        eventSink.yield(.stop)
        // The dispatch loop may be waiting for the peer to read: it must see the stop.
        writer.stopWaitingForRoom()
        // Asked again (a second signal, a parent still gone): the last
        // replies are not waited for either.
        if stopRequests.locked({ () -> Int in
            stopCount += 1
            return stopCount
        }) > 1 {
            writer.abandonFlush()
        }
    }

    /// Reads, dispatches and answers until end of input, `exit` or `stop()`,
    /// then drains requests in flight (bounded by `drainTimeout`) and flushes.
    public func run() async -> Ending {
        startReader()
        var ending = Ending.endOfInput
        loop: for await event in events {
            switch event {
            case .framing(let framing):
                tap?.framing(framing)
                writer.setFraming(framing)
            case .frames(let frames):
                // The messages read together are admitted together, in
                // order, before any of them starts: a `status` right behind
                // a `loadNext` sees that page loading, however fast the
                // source, and a replayed transcript sees what was recorded.
                for frame in frames {
                    // Nothing more is started while the peer is behind reading
                    // (until input ends: see `startReader`).
                    await writer.room(limit: options.maxPendingOutputBytes, dispatch: true)
                    let end = await handle(frame)
                    tracker.dispatched()
                    if let end {
                        startAdmitted()
                        ending = end
                        break loop
                    }
                }
                startAdmitted()
                if let answered { whenAnswered { answered.signal() } }
            case .ended(let end):
                ending = end
                break loop
            case .finished, .drainTick:
                continue
            case .endOfInput:
                ending = .endOfInput
                break loop
            case .stop:
                ending = .stopped
                break loop
            }
        }
        await drain()
        // A peer that stopped reading does not keep the process: the flush
        // ends once nothing was taken for `drainTimeout` seconds (at least
        // `minimumFlushWait`, so that `--drain-timeout 0` still delivers
        // the replies to a peer that reads them).
        // On a thread of its own: a flush can wait long, and a blocked
        // thread of the concurrency pool would hold up the signal handlers.
        let writer = self.writer
        let idle = max(options.drainTimeout, Self.minimumFlushWait)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            startThread {
                writer.flush(idleTimeout: idle)
                continuation.resume()
            }
        }
        return ending
    }

    /// Seconds the final flush waits for a peer that takes nothing.
    static let minimumFlushWait = 5.0

    /// Suspends while more than `maxPendingOutputBytes` wait to be written
    /// (not once the connection is stopping).
    private func waitForOutputRoom() async {
        await writer.room(limit: options.maxPendingOutputBytes)
    }

    // MARK: Reading

    private func startReader() {
        let input = self.input
        let sink = eventSink
        let options = self.options
        let writer = self.writer
        let tracker = self.tracker
        let answered = self.answered
        // Hands on the messages of one read together, or (sequential) one
        // at a time, each once the one before it has been answered.
        @Sendable func deliver(_ frames: [FrameEvent]) {
            guard let answered else {
                tracker.read(frames.count)
                if !frames.isEmpty { sink.yield(.frames(frames)) }
                return
            }
            for frame in frames {
                tracker.read(1)
                sink.yield(.frames([frame]))
                answered.wait()
            }
        }
        startThread {
            var framer = MessageFramer(mode: options.framing, maxMessageBytes: options.maxMessageBytes)
            var announced = false
            let size = 1 << 16
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                // Back-pressure: stop reading while too many replies wait to be written.
                writer.waitForRoom(limit: options.maxPendingOutputBytes)
                tracker.waitForRoom()
                let n = read(input, buffer.baseAddress!, size)
                if n < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if n == 0 { break }
                let frames = framer.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                if !announced, let framing = framer.framing {
                    announced = true
                    sink.yield(.framing(framing))
                }
                deliver(frames)
            }
            deliver(framer.finish())
            sink.yield(.endOfInput)
            // Nothing more will be read: the requests already read are
            // dispatched without waiting for the peer to read replies (one
            // that stopped reading would hold them, and the exit, forever).
            // A `loadAll` still waits between pages, until the drain cancels
            // it; the final flush gives up once the peer takes nothing for
            // `drainTimeout` seconds.
            writer.stopDispatchWaits()
        }
    }

    // MARK: Dispatch

    /// Handles one framed message; returns an ending when the connection must stop.
    private func handle(_ frame: FrameEvent) async -> Ending? {
        switch frame {
        case .message(let body):
            tap?.incoming(body)
            return await handle(IncomingMessage.parse(body))
        case .tooLarge(let size):
            tap?.tooLarge(size: size)
            emit(OutgoingMessage.error(id: nil, RPCError(
                code: RPCError.invalidRequestCode,
                message: "Invalid Request: message of \(size) bytes exceeds --max-message-bytes (\(options.maxMessageBytes))",
                data: .object(["size": .integer(size), "limit": .integer(options.maxMessageBytes)]))))
        case .malformedHeader(let reason):
            emit(OutgoingMessage.error(id: nil, .invalidRequest("bad message header: \(reason)")))
        case .truncated(let expected, let received, let body):
            emit(OutgoingMessage.error(id: nil, .truncated(expected: expected, received: received, body: body)))
        }
        return nil
    }

    private func handle(_ message: IncomingMessage) async -> Ending? {
        switch message {
        case .parseError(let error):
            emit(OutgoingMessage.error(id: nil, .parseError(error)))
        case .single(let entry):
            switch entry {
            case .invalid(let reason, let id):
                emit(OutgoingMessage.error(id: id, .invalidRequest(reason)))
            case .request(let request):
                if let ending = control(request) {
                    // `exit` sent as a request is answered before the process ends.
                    if let id = request.id { emit(OutgoingMessage.result(id: id, .null)) }
                    return ending
                }
                let actions = CancelActions()
                guard let work = await admit(request, cancellation: actions) else { return nil }
                startLater(Pending(members: [Admitted(id: request.id, work: work, actions: actions)], isBatch: false))
            }
        case .batch(let entries) where options.sequential:
            startSequentialBatch(entries)
        case .batch(let entries):
            var members: [Admitted] = []
            var ending: Ending?
            for entry in entries {
                switch entry {
                case .invalid(let reason, let id):
                    // Tracked without an id: `$/cancelRequest` has nothing to end here.
                    let error = OutgoingMessage.error(id: id, .invalidRequest(reason))
                    members.append(Admitted(id: .null, work: { @Sendable in throw BatchReply(message: error) }, actions: CancelActions()))
                case .request(let request):
                    // A cancel reaches the members before it in its own batch too.
                    if let target = Self.cancelTarget(request) { Self.cancel(target.id, silently: target.silently, in: &members) }
                    if let end = control(request) {
                        ending = end
                        if !request.isNotification {
                            members.append(Admitted(id: request.id, work: { @Sendable in .null }, actions: CancelActions()))
                        }
                        continue
                    }
                    let actions = CancelActions()
                    members.append(Admitted(id: request.id, work: await admit(request, cancellation: actions), actions: actions))
                }
            }
            // Each member runs as a request of its own, under its own id, so
            // that `$/cancelRequest` reaches it as it reaches a single
            // request; the batch's reply waits for all of them.
            startLater(Pending(members: members, isBatch: true))
            return ending
        }
        return nil
    }

    /// A request admitted and not started yet, alone or in a batch.
    private struct Admitted {
        let id: RequestID?
        /// `nil`: a notification with nothing more to do.
        let work: RPCWork?
        /// What it does at once when a `$/cancelRequest` names it.
        let actions: CancelActions
        /// Whether a `$/cancelRequest` reached it before it started: it
        /// starts cancelled, and ends with -32800 whatever its speed.
        var cancelled = false
        /// Whether that cancellation asked for no reply (MCP's `notifications/cancelled`).
        var silently = false
    }

    /// What waits for the rest of its read: one request, or a batch's members.
    private struct Pending {
        var members: [Admitted]
        let isBatch: Bool
    }

    /// Cancels, before they start, the members of `members` that `id` names.
    private static func cancel(_ id: RequestID, silently: Bool, in members: inout [Admitted]) {
        for index in members.indices where members[index].id == id {
            members[index].cancelled = true
            members[index].silently = silently
            members[index].actions.fire()
        }
    }

    /// Starts an admitted request once the rest of its read is admitted (or
    /// `maxAdmittedTogether` wait).
    private func startLater(_ pending: Pending) {
        admitted.append(pending)
        if admitted.count >= Self.maxAdmittedTogether { startAdmitted() }
    }

    /// Starts the requests admitted so far, in the order they came.
    private func startAdmitted() {
        guard !admitted.isEmpty else { return }
        let starts = admitted
        admitted.removeAll(keepingCapacity: true)
        for pending in starts {
            if pending.isBatch {
                startBatch(pending.members)
            } else if let single = pending.members.first, let work = single.work {
                let tracker = self.tracker
                spawn(id: single.id, cancelled: single.cancelled, silently: single.silently, actions: single.actions) { [self] token in
                    if let reply = await Self.perform(work, id: single.id, tracker: tracker, token: token) { emit(reply) }
                }
            }
        }
    }

    /// Starts the members of a batch (those cancelled already, cancelled),
    /// then what replies when all have ended.
    private func startBatch(_ members: [Admitted]) {
        let tracker = self.tracker
        let firstMember = nextToken
        nextToken += members.count
        let running: [Task<RawJSON?, Never>] = tracker.locked {
            members.enumerated().compactMap { index, member in
                guard let work = member.work else { return nil }
                let token = firstMember + index
                if member.cancelled { tracker.cancelledBeforeStart(token, silently: member.silently) }
                // It cannot finish before it is registered: `memberFinished` waits for the lock.
                let task = Task {
                    if member.cancelled { withUnsafeCurrentTask { $0?.cancel() } }
                    let reply = await Self.perform(work, id: member.id, tracker: tracker, token: token)
                    tracker.memberFinished(token)
                    return reply
                }
                tracker.memberStarted(token, id: member.id, cancel: {
                    member.actions.fire()
                    task.cancel()
                }, wait: { _ = await task.value })
                return task
            }
        }
        spawn(id: nil) { [self] _ in
            var replies: [RawJSON] = []
            for task in running { if let reply = await task.value { replies.append(reply) } }
            if !replies.isEmpty { emit(.array(replies)) }
        }
    }

    /// `sequential`: runs a batch's members one after another, each admitted
    /// once the one before it has been answered (a `status` behind a
    /// `loadNext` sees its page), then sends the batch's reply. While it
    /// runs the reader hands on nothing (see `whenAnswered`), so admitting
    /// here, off the dispatch loop, still admits one request at a time.
    private func startSequentialBatch(_ entries: [IncomingMessage.Entry]) {
        let tracker = self.tracker
        let sink = eventSink
        spawn(id: nil) { [self] token in
            var replies: [RawJSON] = []
            var ending: Ending?
            for entry in entries {
                switch entry {
                case .invalid(let reason, let id):
                    replies.append(OutgoingMessage.error(id: id, .invalidRequest(reason)))
                case .request(let request) where Task.isCancelled:
                    // The server is stopping: what has not started does not start.
                    if let id = request.id { replies.append(OutgoingMessage.error(id: id, .shuttingDown)) }
                case .request(let request):
                    if let end = control(request) {
                        ending = end
                        if let id = request.id { replies.append(OutgoingMessage.result(id: id, .null)) }
                        continue
                    }
                    guard let work = await admit(request, cancellation: CancelActions()) else { continue }
                    if let reply = await Self.perform(work, id: request.id, tracker: tracker, token: token) { replies.append(reply) }
                }
            }
            if !replies.isEmpty { emit(.array(replies)) }
            if let ending { sink.yield(.ended(ending)) }
        }
    }

    /// `sequential`: calls `done` once the requests in flight, those of the
    /// message just dispatched, have been answered (at once when it started
    /// none: a notification, an error reply).
    private func whenAnswered(_ done: @escaping @Sendable () -> Void) {
        let waits = tracker.inFlight()
        guard !waits.isEmpty else { return done() }
        Task {
            for wait in waits { await wait() }
            done()
        }
    }

    /// The notifications that cancel a request, and the member of their
    /// params that names it: LSP's `$/cancelRequest` (the request then ends
    /// with -32800) and MCP's `notifications/cancelled` (the request ends
    /// without a reply: MCP asks the receiver not to answer it).
    static let cancelNotifications: [String: (member: String, silently: Bool)] = [
        "$/cancelRequest": ("id", false),
        "notifications/cancelled": ("requestId", true),
    ]

    /// The id a cancellation names, if the request is one; one that names
    /// nothing in flight is ignored, as both protocols ask.
    private static func cancelTarget(_ request: RPCRequest) -> (id: RequestID, silently: Bool)? {
        guard let form = cancelNotifications[request.method], let idValue = request.params?[form.member],
              let id = RequestID(idValue) else { return nil }
        return (id, form.silently)
    }

    /// Lifecycle and cancellation, handled by the connection itself.
    private func control(_ request: RPCRequest) -> Ending? {
        switch request.method {
        case _ where Self.cancelNotifications[request.method] != nil:
            if let target = Self.cancelTarget(request) {
                // Admitted in the same read and not started yet: they start cancelled.
                for index in admitted.indices { Self.cancel(target.id, silently: target.silently, in: &admitted[index].members) }
                tracker.cancel(id: target.id, silently: target.silently)
            }
        case "exit":
            return .exitNotification(afterShutdown: shutdownRequested)
        default:
            break
        }
        return nil
    }

    /// Returns the work for a request, or `nil` when nothing more is to be done.
    ///
    /// `$/cancelRequest` and `initialized` are notifications; sent as
    /// requests (with an id), they are answered with `null`.
    private func admit(_ request: RPCRequest, cancellation: CancelActions) async -> RPCWork? {
        switch request.method {
        case _ where Self.cancelNotifications[request.method] != nil:
            return request.isNotification ? nil : { @Sendable in .null }
        case "shutdown" where !shutdownRequested:
            shutdownRequested = true
            return request.isNotification ? nil : { @Sendable in .null }
        default:
            break
        }
        if shutdownRequested {
            return request.isNotification ? nil : { @Sendable in throw RPCError.shuttingDown }
        }
        if request.method == "initialized" {
            return request.isNotification ? nil : { @Sendable in .null }
        }
        if request.isNotification && request.method.hasPrefix("$/") {
            return nil
        }
        let context = RPCContext(
            id: request.id,
            notify: { [self] method, params in emit(OutgoingMessage.notification(method: method, params: params)) },
            waitForOutputRoom: { [self] in await waitForOutputRoom() }, cancellation: cancellation)
        return await handler.admit(request, context: context)
    }

    /// Hands one message to the writer, showing it to the tap first.
    private func emit(_ message: RawJSON) {
        tap?.outgoing(message)
        writer.send(message)
    }

    /// Runs one request's work; returns the reply, or `nil` for a notification.
    /// A request cut off because the server is shutting down (the drain
    /// timed out, or a second signal came) ends with -32801, not -32800.
    private static func perform(_ work: RPCWork, id: RequestID?, tracker: RequestTracker, token: Int) async -> RawJSON? {
        let reply = await outcome(work, id: id, tracker: tracker, token: token)
        // Cancelled by a notification that asks for no reply: none, whatever the outcome
        // (the peer ignores an answer that comes after its cancellation anyway).
        if tracker.wasSilenced(token) && !tracker.wasStopped(token) { return nil }
        return reply
    }

    private static func outcome(_ work: RPCWork, id: RequestID?, tracker: RequestTracker, token: Int) async -> RawJSON? {
        do {
            let result = try await work()
            return id.map { OutgoingMessage.result(id: $0, result) }
        } catch let error as BatchReply {
            return error.message
        } catch let error as RPCError {
            if error.code == RPCError.requestCancelledCode && tracker.wasStopped(token) {
                return id.map { OutgoingMessage.error(id: $0, .shuttingDown) }
            }
            return id.map { OutgoingMessage.error(id: $0, error) }
        } catch is CancellationError {
            return id.map { OutgoingMessage.error(id: $0, tracker.wasStopped(token) ? .shuttingDown : .cancelled) }
        } catch {
            return id.map { OutgoingMessage.error(id: $0, .internalError("\(error)")) }
        }
    }

    /// Runs `body` (given its token) as a request in flight; `cancelled`:
    /// one that a cancellation reached before it started (`silently`: one
    /// that asked for no reply).
    private func spawn(
        id: RequestID?, cancelled: Bool = false, silently: Bool = false, actions: CancelActions = CancelActions(),
        _ body: @escaping @Sendable (Int) async -> Void
    ) {
        let token = nextToken
        nextToken += 1
        let sink = eventSink
        let tracker = self.tracker
        // Registered before it can finish: the task's first step waits for the tracker's lock.
        tracker.locked {
            if cancelled { tracker.cancelledBeforeStart(token, silently: silently) }
            let task = Task {
                // Cancelled before it does anything: it ends with -32800 and leaves no trace.
                if cancelled { withUnsafeCurrentTask { $0?.cancel() } }
                await body(token)
                if tracker.finished(token) { sink.yield(.finished(token)) }
            }
            tracker.started(token, id: id, task: task, actions: actions)
        }
    }

    /// Waits for the requests in flight to finish. When none finishes for
    /// `drainTimeout` seconds (a hung upstream, say), the rest are cancelled:
    /// a long queue of requests that keeps being answered is drained whole.
    private func drain() async {
        // From now on each finished request is announced on the event stream.
        guard tracker.startDraining() else { return }
        // Ten ticks per timeout; a tick with no request finished since the
        // tenth tick before it ends the wait.
        let ticksPerTimeout = 10
        // At most a day a tick: `--drain-timeout inf` (or 1e16) waits as long as work goes on.
        let milliseconds = min(max(options.drainTimeout, 0) * 1000 / Double(ticksPerTimeout), 86_400_000)
        let tick = Duration.milliseconds(max(1, Int(milliseconds.isNaN ? 1 : milliseconds)))
        let timer = Task { [eventSink] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: tick) } catch { return }
                eventSink.yield(.drainTick)
            }
        }
        defer { timer.cancel() }
        var idleTicks = 0
        for await event in events {
            switch event {
            case .finished:
                if tracker.isIdle { return }
                idleTicks = 0
            case .drainTick:
                idleTicks += 1
                if idleTicks >= ticksPerTimeout { await cancelInFlight(); return }
            case .stop:
                await cancelInFlight()
                return
            case .framing, .frames, .endOfInput, .ended:
                continue
            }
        }
    }

    /// Cancels every request in flight and waits for their -32801 replies.
    private func cancelInFlight() async {
        for wait in tracker.cancelAll() { await wait() }
    }
}

/// The requests being answered (for `$/cancelRequest` and draining) and
/// the messages read but not yet dispatched. The reader waits when there
/// are `limit` of both together, until half of them are done, so it is
/// woken once per batch.
private final class RequestTracker: @unchecked Sendable {
    private let condition = Condition()
    private let limit: Int
    // Guarded by `condition`.
    private var count = 0
    /// Requests in flight (batch members too), by token.
    private var requests: [Int: InFlight] = [:]
    private var draining = false
    /// Requests cancelled because the server is stopping, and by `$/cancelRequest`.
    private var stopped: Set<Int> = []
    private var cancelledByClient: Set<Int> = []
    /// Cancelled by a notification that asks for no reply.
    private var silenced: Set<Int> = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T { try condition.locked(body) }

    /// The reader yielded `frames` messages.
    func read(_ frames: Int) {
        condition.locked { count += frames }
    }

    /// The dispatch loop handled one message.
    func dispatched() {
        condition.locked { release() }
    }

    /// A request started; call inside `locked`.
    func started(_ token: Int, id: RequestID?, task: Task<Void, Never>, actions: CancelActions) {
        count += 1
        requests[token] = InFlight(id: id, cancel: {
            actions.fire()
            task.cancel()
        }, wait: { await task.value })
    }

    /// A member of a batch started; call inside `locked`. The batch itself
    /// is the request that counts against the limit.
    func memberStarted(_ token: Int, id: RequestID?, cancel: @escaping @Sendable () -> Void, wait: @escaping @Sendable () async -> Void) {
        requests[token] = InFlight(id: id, cancel: cancel, wait: wait)
    }

    /// A member of a batch finished (before the batch does).
    func memberFinished(_ token: Int) {
        condition.locked { forget(token) }
    }

    /// A request finished; returns whether the drain wants to hear of it.
    func finished(_ token: Int) -> Bool {
        condition.locked {
            forget(token)
            release()
            return draining
        }
    }

    /// Drops what is known of request `token`; call inside `locked`.
    private func forget(_ token: Int) {
        requests[token] = nil
        stopped.remove(token)
        cancelledByClient.remove(token)
        silenced.remove(token)
    }

    private func release() {
        count -= 1
        if count == limit / 2 { condition.broadcast() }
    }

    /// Blocks the calling thread while the limit is reached.
    func waitForRoom() {
        condition.locked {
            guard count >= limit else { return }
            while count > limit / 2 { condition.wait() }
        }
    }

    /// Request `token` starts cancelled by the client; call inside `locked`.
    func cancelledBeforeStart(_ token: Int, silently: Bool) {
        cancelledByClient.insert(token)
        if silently { silenced.insert(token) }
    }

    func cancel(id: RequestID, silently: Bool) {
        condition.locked {
            for (token, request) in requests where request.id == id {
                cancelledByClient.insert(token)
                if silently { silenced.insert(token) }
                request.cancel()
            }
        }
    }

    /// Cancels every request (the server is shutting down); returns what
    /// waits for each to end.
    func cancelAll() -> [@Sendable () async -> Void] {
        condition.locked {
            stopped.formUnion(requests.keys.filter { !cancelledByClient.contains($0) })
            for request in requests.values { request.cancel() }
            return requests.values.map(\.wait)
        }
    }

    /// Announces finished requests from now on; returns false when none is in flight.
    func startDraining() -> Bool {
        condition.locked {
            draining = true
            return !requests.isEmpty
        }
    }

    var isIdle: Bool { condition.locked { requests.isEmpty } }

    /// What waits for each request in flight to end.
    func inFlight() -> [@Sendable () async -> Void] {
        condition.locked { requests.values.map(\.wait) }
    }

    /// Whether request `token` was cancelled because the server is stopping.
    func wasStopped(_ token: Int) -> Bool { condition.locked { stopped.contains(token) } }

    /// Whether request `token` was cancelled by a notification that asks for no reply.
    func wasSilenced(_ token: Int) -> Bool { condition.locked { silenced.contains(token) } }
}

/// A request in flight, as the tracker sees it.
private struct InFlight {
    let id: RequestID?
    let cancel: @Sendable () -> Void
    let wait: @Sendable () async -> Void
}

/// A counting semaphore for threads (the sequential reader waits on it).
private final class Semaphore: @unchecked Sendable {
    private let condition = Condition()
    // Guarded by `condition`.
    private var permits = 0

    /// Blocks the calling thread until a permit is given, and takes it.
    func wait() {
        condition.locked {
            while permits == 0 { condition.wait() }
            permits -= 1
        }
    }

    /// Gives one permit.
    func signal() {
        condition.locked { permits += 1 }
        condition.broadcast()
    }
}

/// A ready-made reply for a batch member (an invalid entry).
private struct BatchReply: Error {
    let message: RawJSON
}
