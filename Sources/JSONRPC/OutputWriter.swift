#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// The single writer of protocol output: messages are queued by any task and
/// written, whole and in queue order, by one thread, so no two replies ever
/// interleave on the stream.
///
/// Messages are framed as they are written (`writev` of the body and its
/// line end or header), so a reply is never copied to be framed. When the
/// stream is a regular file, or a pipe with room for the whole message, and
/// nothing is waiting to be written, the sender writes it at once itself:
/// such a write cannot block, and it spares waking the writer thread.
public final class OutputWriter: @unchecked Sendable {
    /// What the descriptor is, for deciding whether a write can block.
    private enum Kind {
        case regularFile
        case pipe(capacity: Int)
        case other
    }

    private struct Queued {
        let body: [UInt8]
        let framing: Framing
        /// Bytes on the wire: the body and its framing.
        var size: Int { body.count + (framing == .ndjson ? 1 : MessageFramer.lspHeader(length: body.count).count) }
    }

    private let fd: Int32
    private let kind: Kind
    private let condition = Condition()
    // Guarded by `condition`.
    private var queue: [Queued] = []
    private var queueHead = 0
    private var pending = 0
    private var writing = false
    private var broken = false
    private var framing: Framing = .ndjson
    /// The writer thread waits for messages.
    private var idle = false
    /// Threads waiting in `flush` or `waitForRoom`.
    private var waiters = 0
    /// A task waiting in `room(limit:dispatch:)`.
    private struct RoomWaiter {
        let id: Int
        let limit: Int
        let dispatch: Bool
        let continuation: CheckedContinuation<Void, Never>
    }
    private var roomWaiters: [RoomWaiter] = []
    private var nextRoomWaiter = 0
    /// Set by `stopWaitingForRoom()`: `room(limit:dispatch:)` returns at once.
    private var roomUnlimited = false
    /// Set by `stopDispatchWaits()`: waits of the dispatch loop return at once.
    private var dispatchUnlimited = false
    /// Bytes handed to the kernel so far (a flush sees the reader make progress).
    private var written = 0
    /// Set by `abandonFlush()`: flushes return at once.
    private var flushAbandoned = false
    private let onBrokenPipe: @Sendable () -> Void

    /// Writes to `fd`; `onBrokenPipe` runs (on the writer thread) when the
    /// reader of `fd` is gone.
    public init(fd: Int32, onBrokenPipe: @escaping @Sendable () -> Void) {
        self.fd = fd
        self.onBrokenPipe = onBrokenPipe
        var info = stat()
        let type = fstat(fd, &info) == 0 ? info.st_mode & S_IFMT : 0
        if type == S_IFREG {
            kind = .regularFile
        } else if type == S_IFIFO, case let capacity = fcntl(fd, 1032 /* F_GETPIPE_SZ */), capacity > 0 {
            kind = .pipe(capacity: Int(capacity))
        } else {
            kind = .other
        }
        startThread { [self] in run() }
    }

    /// Whether writing `size` bytes now cannot block.
    private func writesAtOnce(_ size: Int) -> Bool {
        switch kind {
        case .regularFile:
            return true
        case .pipe(let capacity):
            // Only this process writes; the reader can only make more room.
            var unread: Int32 = 0
            guard ioctl(fd, UInt(FIONREAD), &unread) == 0 else { return false }
            return size <= capacity - Int(unread)
        case .other:
            return false
        }
    }

    /// Sets the framing used for every message queued from now on.
    public func setFraming(_ framing: Framing) {
        condition.locked { self.framing = framing }
    }

    /// Queues one message, or writes it at once when that cannot block;
    /// returns without waiting for the reader.
    public func send(_ message: RawJSON) {
        let (direct, wake): (Queued?, Bool) = condition.locked {
            guard !broken else { return (nil, false) }
            let queued = Queued(body: message.bytes, framing: framing)
            if !writing && queueHead == queue.count && writesAtOnce(queued.size) {
                writing = true
                return (queued, false)
            }
            pending += queued.size
            queue.append(queued)
            return (nil, idle)
        }
        // Signalled after unlocking, so the writer thread does not wake only to wait for the lock.
        if wake { condition.broadcast() }
        guard let direct else { return }
        let ok = writeAll([direct])
        finishWrite(ok: ok, bytes: 0)
    }

    /// Bytes queued and not yet written.
    public var pendingBytes: Int { condition.locked { pending } }

    /// Blocks the calling thread while more than `limit` bytes wait to be written.
    public func waitForRoom(limit: Int) {
        condition.locked {
            waiters += 1
            while pending > limit && !broken { condition.wait() }
            waiters -= 1
        }
    }

    /// Suspends the calling task while more than `limit` bytes wait to be
    /// written. Returns at once when the stream broke, after
    /// `stopWaitingForRoom()`, for the dispatch loop (`dispatch`) after
    /// `stopDispatchWaits()`, or when the task is cancelled.
    public func room(limit: Int, dispatch: Bool = false) async {
        if condition.locked({ hasRoom(limit, dispatch) }) { return }
        let id: Int = condition.locked {
            nextRoomWaiter += 1
            return nextRoomWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready: Bool = condition.locked {
                    // Cancelled before it could be found by the handler: do not wait.
                    if hasRoom(limit, dispatch) || Task.isCancelled { return true }
                    roomWaiters.append(RoomWaiter(id: id, limit: limit, dispatch: dispatch, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiting: CheckedContinuation<Void, Never>? = condition.locked {
                guard let index = roomWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return roomWaiters.remove(at: index).continuation
            }
            waiting?.resume()
        }
    }

    /// Whether a wait for `limit` bytes is over; call inside `condition.locked`.
    private func hasRoom(_ limit: Int, _ dispatch: Bool) -> Bool {
        pending <= limit || broken || roomUnlimited || (dispatch && dispatchUnlimited)
    }

    /// Ends every wait in `room(limit:dispatch:)`, now and later (the connection is stopping).
    public func stopWaitingForRoom() {
        let waiting: [CheckedContinuation<Void, Never>] = condition.locked {
            roomUnlimited = true
            defer { roomWaiters = [] }
            return roomWaiters.map(\.continuation)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Ends the dispatch loop's waits, now and later (no more input: the
    /// requests already read are started whether or not the peer reads).
    /// Other waits, such as `loadAll` between pages, go on.
    public func stopDispatchWaits() {
        let waiting: [CheckedContinuation<Void, Never>] = condition.locked {
            dispatchUnlimited = true
            let released = roomWaiters.filter(\.dispatch).map(\.continuation)
            roomWaiters.removeAll(where: \.dispatch)
            return released
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Blocks until everything queued has been written (or the stream
    /// broke). With `idleTimeout`, gives up when the reader has taken
    /// nothing for that many seconds; `abandonFlush()` ends it at once.
    public func flush(idleTimeout: Double? = nil) {
        condition.locked {
            waiters += 1
            defer { waiters -= 1 }
            var lastWritten = written
            var deadline = idleTimeout.map { Condition.deadline(after: $0) }
            while (pending > 0 || writing) && !broken && !flushAbandoned {
                guard let timeout = idleTimeout, let until = deadline else {
                    condition.wait()
                    continue
                }
                condition.wait(until: until)
                if written != lastWritten {
                    lastWritten = written
                    deadline = Condition.deadline(after: timeout)
                } else if Condition.isPast(until) {
                    return
                }
            }
        }
    }

    /// Ends a flush in progress, and makes every later one return at once
    /// (a second signal, a dead parent: nobody will read what is left).
    public func abandonFlush() {
        condition.locked { flushAbandoned = true }
        condition.broadcast()
    }

    /// Most messages written with one `writev`.
    private static let batchMessages = 256

    private func run() {
        while true {
            var batch: [Queued] = []
            condition.locked {
                // Waits for messages, and for a sender's own write to end.
                while queueHead == queue.count || writing {
                    idle = true
                    condition.wait()
                    idle = false
                }
                let end = min(queue.count, queueHead + Self.batchMessages)
                batch = Array(queue[queueHead..<end])
                queueHead = end
                if queueHead == queue.count {
                    queue.removeAll(keepingCapacity: true)
                    queueHead = 0
                }
                writing = true
            }
            let ok = writeAll(batch)
            finishWrite(ok: ok, bytes: batch.reduce(0) { $0 + $1.size })
            if !ok { return }
        }
    }

    /// After a write by the writer thread (`bytes` of the queue) or by a sender.
    private func finishWrite(ok: Bool, bytes: Int) {
        let (wake, wasBroken, roomMade): (Bool, Bool, [CheckedContinuation<Void, Never>]) = condition.locked {
            writing = false
            pending -= bytes
            let wasBroken = broken
            if !ok {
                broken = true
                queue = []
                queueHead = 0
                pending = 0
            }
            // Wake the writer thread for messages queued meanwhile, and anyone flushing.
            let wake = waiters > 0 || (idle && queueHead < queue.count) || !ok
            var roomMade: [CheckedContinuation<Void, Never>] = []
            if !roomWaiters.isEmpty {
                let pending = self.pending
                let broken = self.broken
                roomMade = roomWaiters.filter { pending <= $0.limit || broken }.map(\.continuation)
                if !roomMade.isEmpty { roomWaiters.removeAll { pending <= $0.limit || broken } }
            }
            return (wake, wasBroken, roomMade)
        }
        if wake { condition.broadcast() }
        for continuation in roomMade { continuation.resume() }
        if !ok && !wasBroken { onBrokenPipe() }
    }

    private static let lineEnd: [UInt8] = [UInt8(ascii: "\n")]

    /// Writes the messages, each with its framing, with as few `writev` calls as possible.
    private func writeAll(_ batch: [Queued]) -> Bool {
        let headers = batch.map { $0.framing == .lsp ? MessageFramer.lspHeader(length: $0.body.count) : [] }
        var pieces: [UnsafeRawBufferPointer] = []
        pieces.reserveCapacity(batch.count * 2)
        // The arrays outlive the pointers: they are held by `batch`, `headers` and `lineEnd`.
        return withExtendedLifetime((batch, headers)) {
            for (index, message) in batch.enumerated() {
                if message.framing == .lsp { pieces.append(headers[index].withUnsafeBytes { $0 }) }
                pieces.append(message.body.withUnsafeBytes { $0 })
                if message.framing == .ndjson { pieces.append(Self.lineEnd.withUnsafeBytes { $0 }) }
            }
            return writeVectored(pieces)
        }
    }

    /// Most bytes one `writev` takes into a pipe or socket: a call that
    /// blocks returns once it is all out, so progress (`written`, what a
    /// flush watches) is seen at least this often while the peer reads.
    private static let blockingWriteBytes = 64 * 1024

    /// `writev` of every piece, resuming after partial writes.
    private func writeVectored(_ pieces: [UnsafeRawBufferPointer]) -> Bool {
        var vectors = pieces.filter { $0.count > 0 }.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
        var first = 0
        let cap: Int
        if case .regularFile = kind { cap = .max } else { cap = Self.blockingWriteBytes }
        while first < vectors.count {
            var count = 0
            var bytes = 0
            while first + count < vectors.count && count < 1024 /* IOV_MAX on Linux */ && bytes < cap {
                bytes += vectors[first + count].iov_len
                count += 1
            }
            // The last vector of the call is cut at the cap; the rest of it goes in the next call.
            let over = bytes > cap ? bytes - cap : 0
            vectors[first + count - 1].iov_len -= over
            let n = vectors.withUnsafeMutableBufferPointer { writev(fd, $0.baseAddress! + first, Int32(count)) }
            let code = errno
            vectors[first + count - 1].iov_len += over
            if n < 0 {
                if code == EINTR { continue }
                if code == EAGAIN {
                    // A non-blocking descriptor inherited from the parent: wait until writable.
                    var waiter = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&waiter, 1, -1)
                    continue
                }
                return false
            }
            if n > 0 {
                // Progress a flush waits for; a flusher wakes at its next deadline to see it.
                condition.locked { self.written += n }
            }
            // Skip what was written; a vector written in part is advanced.
            var written = n
            while written > 0 && first < vectors.count {
                if written >= vectors[first].iov_len {
                    written -= vectors[first].iov_len
                    first += 1
                } else {
                    vectors[first].iov_base += written
                    vectors[first].iov_len -= written
                    written = 0
                }
            }
        }
        return true
    }
}
