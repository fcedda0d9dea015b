#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// The JSON-RPC side of a client: writes requests as lines of compact JSON,
/// reads replies and notifications on a thread of its own, and matches
/// replies to the calls waiting for them by id.
///
/// Everything the server writes that nextpage never writes (text that is
/// not JSON, a request, a batch) ends the connection with `notNextPage`;
/// end of output ends it with `serverExited`. Either way every call waiting,
/// and every later one, fails with that error.
final class ClientConnection: Sendable {
    typealias Handler = @Sendable (JSON) -> Void

    /// A call waiting for its reply. The reply goes through `reply`'s lock,
    /// then the continuation wakes the call, which takes it from there.
    private struct Pending {
        let method: String
        let reply: Locked<Result<JSON, any Error>?>
        let continuation: CheckedContinuation<Void, Never>

        func settle(_ result: Result<JSON, any Error>) {
            reply.withLock { $0 = result }
            continuation.resume()
        }
    }

    private struct State {
        var nextId = 1
        var pending: [Int: Pending] = [:]
        var handlers: [String: [Int: Handler]] = [:]
        var nextHandler = 0
        var failure: (any Error)?
        var inputClosed = false
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let output: Int32
    let process: ServerProcess?
    private let state = Locked(State())
    /// Where requests go (the server's stdin; -1 once closed), one message at a time.
    private let input: Locked<Int32>

    init(input: Int32, output: Int32, process: ServerProcess?) {
        self.input = Locked(input)
        self.output = output
        self.process = process
        startThread { [self] in readReplies() }
    }

    // MARK: Calls

    /// Sends a request and waits for its reply: the `result`, or an
    /// `RPCError`. Task cancellation sends `$/cancelRequest` (the reply is
    /// then usually -32800); after `timeout` the call fails with `timedOut`
    /// and is cancelled on the server.
    func call(_ method: String, _ params: JSON?, timeout: Duration?) async throws -> JSON {
        let id = state.withLock { state -> Int in
            defer { state.nextId += 1 }
            return state.nextId
        }
        let timer = timeout.map { timeout in
            Task { [weak self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                self?.expire(id, error: NextPageClientError.timedOut(method: method, after: timeout))
            }
        }
        defer { timer?.cancel() }
        let reply = Locked<Result<JSON, any Error>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let pending = Pending(method: method, reply: reply, continuation: continuation)
                let failure = state.withLock { state -> (any Error)? in
                    if let failure = state.failure { return failure }
                    if state.inputClosed && method != "shutdown" { return NextPageClientError.closed }
                    state.pending[id] = pending
                    return nil
                }
                if let failure { return pending.settle(.failure(failure)) }
                let message = JSON.object(["jsonrpc": .string("2.0"), "id": .integer(id), "method": .string(method)])
                if let params { message.set("params", params) }
                if let error = send(message) {
                    // Closed here: fail now. Otherwise the server is gone, and the
                    // reader fails the call with how it ended (its status, its stderr).
                    if error as? NextPageClientError == .closed { expire(id, error: error, cancel: false) }
                    return
                }
                // Cancelled before the request went out: the cancel must follow it.
                if Task.isCancelled { cancelOnServer(id) }
            }
        } onCancel: {
            cancelOnServer(id)
        }
        return try reply.withLock { $0! }.get()
    }

    /// Sends a notification; an error when the server is gone.
    @discardableResult
    func notify(_ method: String, _ params: JSON?) -> (any Error)? {
        let message = JSON.object(["jsonrpc": .string("2.0"), "method": .string(method)])
        if let params { message.set("params", params) }
        return send(message)
    }

    /// Ends call `id`, if it still waits, with `error`; `cancel`: tells the server too.
    private func expire(_ id: Int, error: any Error, cancel: Bool = true) {
        guard let pending = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
        pending.settle(.failure(error))
        if cancel { cancelOnServer(id) }
    }

    private func cancelOnServer(_ id: Int) {
        notify("$/cancelRequest", .object(["id": .integer(id)]))
    }

    /// Writes one message; returns the connection's failure when it cannot.
    private func send(_ message: JSON) -> (any Error)? {
        var bytes = message.dump()
        bytes.append(10)
        let written = input.withLock { input -> Bool in
            guard input >= 0 else { return false }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { write(input, $0.baseAddress! + offset, $0.count - offset) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        if written { return nil }
        // Closed, or the server is gone (the reader is about to say why, or has).
        let (failure, closed) = state.withLock { ($0.failure, $0.inputClosed) }
        if let failure { return failure }
        return closed ? NextPageClientError.closed : NextPageClientError.serverExited(status: nil, signal: nil, stderr: "")
    }

    // MARK: Notifications

    /// Calls `handler` with the params of each notification `method`, on the reader thread.
    func on(_ method: String, _ handler: @escaping Handler) -> @Sendable () -> Void {
        let key = state.withLock { state -> Int in
            state.nextHandler += 1
            state.handlers[method, default: [:]][state.nextHandler] = handler
            return state.nextHandler
        }
        return { [weak self] in _ = self?.state.withLock { $0.handlers[method]?.removeValue(forKey: key) } }
    }

    // MARK: Ending

    /// Closes the server's input (end of input: it finishes and exits).
    func closeInput() {
        input.withLock { input in
            state.withLock { $0.inputClosed = true }
            if input >= 0 { Glibc.close(input) }
            input = -1
        }
    }

    /// Waits until the server's output has ended (and a spawned server has exited).
    func ended() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The error every call gets once the connection has ended.
    var failure: (any Error)? { state.withLock { $0.failure } }

    // MARK: Reading

    private func readReplies() {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var fatal: (any Error)?
        reading: while true {
            let n = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            var start = pending.count
            pending.append(contentsOf: buffer[0..<n])
            var lineStart = 0
            while let newline = pending[start...].firstIndex(of: 10) {
                if let error = receive(pending[lineStart..<newline]) {
                    fatal = error
                    break reading
                }
                lineStart = newline + 1
                start = lineStart
            }
            pending.removeFirst(lineStart)
        }
        close(output)
        if fatal != nil { process?.kill() }
        let exited: any Error
        if let process {
            let status = process.wait()
            exited = NextPageClientError.serverExited(status: status.exitStatus, signal: status.signal, stderr: process.lastStderrLines)
        } else {
            exited = NextPageClientError.serverExited(status: nil, signal: nil, stderr: "")
        }
        let (calls, waiters) = state.withLock { state in
            if state.failure == nil { state.failure = fatal ?? exited }
            state.ended = true
            defer {
                state.pending = [:]
                state.endWaiters = []
            }
            return (Array(state.pending.values), state.endWaiters)
        }
        let failure = fatal ?? exited
        for call in calls { call.settle(.failure(failure)) }
        for waiter in waiters { waiter.resume() }
    }

    /// Handles one line; returns an error when it is not something nextpage writes.
    private func receive(_ line: ArraySlice<UInt8>) -> (any Error)? {
        let trimmed = line.last == 13 ? line.dropLast() : line
        if trimmed.allSatisfy({ $0 == 32 || $0 == 9 }) { return nil }
        let shown = Self.shown(trimmed)
        let message: JSON
        do {
            message = try JSON.parse(Array(trimmed))
        } catch {
            return NextPageClientError.notNextPage("it wrote \(shown), which is not JSON")
        }
        guard message.kind == .object, message["jsonrpc"]?.string == "2.0" else {
            return NextPageClientError.notNextPage("it wrote \(shown), which is not a JSON-RPC 2.0 message")
        }
        if let method = message["method"]?.string {
            if message["id"] != nil {
                return NextPageClientError.notNextPage("it sent a request (\(shown)); nextpage only replies and notifies")
            }
            let params = message["params"] ?? .object()
            let handlers = state.withLock { Array(($0.handlers[method] ?? [:]).values) }
            for handler in handlers { handler(params) }
            return nil
        }
        let result = message["result"], error = message["error"]
        guard let idValue = message["id"], (result == nil) != (error == nil) else {
            return NextPageClientError.notNextPage("it wrote \(shown), which is neither a reply nor a notification")
        }
        guard let id = idValue.integer,
              let pending = state.withLock({ $0.pending.removeValue(forKey: Int(id)) }) else { return nil }
        if let error {
            pending.settle(.failure(RPCError(reply: error, method: pending.method)))
        } else {
            pending.settle(.success(result!))
        }
        return nil
    }

    private static func shown(_ line: ArraySlice<UInt8>) -> String {
        let text = String(decoding: line.prefix(200), as: UTF8.self)
        return "'" + text + (line.count > 200 ? "...'" : "'")
    }
}
