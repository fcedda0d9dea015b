#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import NIOConcurrencyHelpers
import Subprocess
import SystemPackage

/// The `command` source (docs/config.md): runs a program once per page and takes
/// what it writes on stdout as the page.
///
/// `argv` runs directly, without a shell. For the first page the cursor is
/// the empty string, afterwards the cursor as text; it replaces every
/// `{cursor}` in `argv[1...]` and is also set as `NEXTPAGE_CURSOR` in the
/// child's environment, which is the server's environment plus the source's
/// `env`. The child's stdin is `/dev/null`.
///
/// Each run gets its own session (so its own process group, and no
/// controlling terminal). When the run times out, when its stdout grows past
/// `maxBodyBytes`, or when the task is cancelled (`reset`, `load`,
/// `$/cancelRequest`), the whole process group is killed with `SIGKILL`;
/// processes the command leaves behind in its group after it exits are
/// killed too. `fetch` returns only after the child has been reaped.
///
/// Failures are `LoadError.upstream`: a non-zero exit or a signal (with the
/// last `stderrTailBytes` of stderr, on one line), a timeout (retryable), a
/// missing executable, an oversized page. Cancellation ends with
/// `LoadError.cancelled`.
///
/// Processes are run with swift-subprocess: it waits for children with a
/// pidfd (or `SIGCHLD`) on its own thread and reads their pipes with epoll,
/// so a running command never occupies a thread of the concurrency pool.
public struct CommandClient: Client {
    /// What to run, its environment and limits.
    public let source: CommandSource
    /// The collection served, for logs.
    public let collection: String
    let logger: Logger?

    /// How much of the end of stderr an error message carries, in bytes.
    public static let stderrTailBytes = 2048

    /// The commands running now in this process, by pid (each leads its own
    /// process group).
    private static let running = NIOLockedValueBox<Set<pid_t>>([])

    /// Kills the process group of every command still running. A server
    /// calls this as it exits: commands run in their own sessions, so
    /// nothing else would stop one whose request was still in flight.
    public static func killRunningCommands() {
        for pid in running.withLockedValue({ $0 }) { _ = kill(-pid, SIGKILL) }
    }

    /// A client for `source`; by default it logs nothing.
    public init(source: CommandSource, collection: String = "", logger: Logger? = nil) {
        self.source = source
        self.collection = collection
        self.logger = logger
    }

    /// The text a request's cursor becomes: empty for the first page.
    public static func cursorText<R: Request>(for request: R) -> String {
        guard !request.isFirstPage, let cursor = request.cursor else { return "" }
        return cursor.text
    }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        if Task.isCancelled { throw LoadError.cancelled }
        guard let program = source.argv.first, !program.isEmpty else {
            throw LoadError.upstream(UpstreamFailure(retryable: false, message: "command source without a program (argv is empty)"))
        }
        let cursor = Self.cursorText(for: request)
        guard !cursor.utf8.contains(0) else {
            throw LoadError.upstream(UpstreamFailure(
                retryable: false, message: "command '\(program)': the cursor contains a NUL byte and cannot be passed to a command"))
        }
        var overrides: [Environment.Key: String?] = [:]
        for variable in source.environment { overrides[Environment.Key(rawValue: variable.name)!] = variable.value }
        overrides[Environment.Key(rawValue: CommandSource.cursorVariable)!] = cursor
        let invocation = Invocation(
            program: program,
            executable: program.contains("/") ? .path(FilePath(program)) : .name(program),
            arguments: source.arguments(cursor: cursor),
            environment: Environment.inherit.updating(overrides),
            maxBodyBytes: source.maxBodyBytes)

        let outcome = await Self.run(invocation, timeout: source.timeout, logger: logger, collection: collection)
        // A cancelled caller gets `cancelled` whatever the child did meanwhile.
        if Task.isCancelled { throw LoadError.cancelled }
        let message: String
        var retryable = false
        switch outcome {
        case .finished(.exited(0), body: let body, stderr: _):
            logger?.debug("command page", metadata: [
                "collection": "\(collection)", "command": "\(program)", "bytes": "\(body.count)",
            ])
            return UpstreamResponse(body: body)
        case .finished(let status, body: _, stderr: let stderr):
            message = "command '\(program)' \(Self.describe(status))\(Self.tail(stderr))"
        case .timedOut(let stderr):
            message = "command '\(program)' timed out after \(HTTPPageClient.seconds(source.timeout)) s and was killed\(Self.tail(stderr))"
            retryable = true
        case .failed(let error, stderr: let stderr):
            message = "command '\(program)' \(Self.describe(error, program: program))\(Self.tail(stderr))"
        }
        let failure = UpstreamFailure(retryable: retryable, message: message)
        logger?.warning("upstream failed", metadata: ["collection": "\(collection)", "error": "\(message)"])
        throw LoadError.upstream(failure)
    }

    // MARK: Running

    /// One run, ready to start.
    struct Invocation: Sendable {
        /// `argv[0]` as configured, for logs.
        var program: String
        var executable: Executable
        var arguments: [String]
        var environment: Environment
        var maxBodyBytes: Int
    }

    /// How a run ended.
    enum Outcome: Sendable {
        /// The child ended by itself: its status, stdout and the end of stderr.
        case finished(TerminationStatus, body: [UInt8], stderr: [UInt8])
        /// The timeout fired first; the child was killed.
        case timedOut(stderr: [UInt8])
        /// The child could not be run, or its stdout was too large (then it was killed).
        case failed(RunError, stderr: [UInt8])
    }

    /// Why a run failed before the child could end by itself.
    enum RunError: Error, Sendable {
        case notFound
        case cannotStart(String)
        case bodyTooLarge(limit: Int)
    }

    /// Runs once, racing the child against `timeout`. Returns after the child
    /// has ended and has been reaped, also when the task is cancelled (the
    /// caller checks `Task.isCancelled`).
    static func run(_ invocation: Invocation, timeout: Double, logger: Logger?, collection: String) async -> Outcome {
        enum Finish: Sendable {
            case ran(Outcome)
            case timerFired
            case timerStopped
        }
        let stderr = StderrTail(limit: stderrTailBytes)
        let nanoseconds = UInt64(min(max(timeout, 0), 86_400) * 1e9)
        return await withTaskGroup(of: Finish.self) { group in
            group.addTask {
                .ran(await runChild(invocation, stderr: stderr, logger: logger, collection: collection))
            }
            group.addTask {
                do {
                    try await Task.sleep(nanoseconds: nanoseconds)
                    return .timerFired
                } catch {
                    return .timerStopped
                }
            }
            var outcome: Outcome?
            var timedOut = false
            while let finish = await group.next() {
                switch finish {
                case .ran(let ran):
                    outcome = ran
                    group.cancelAll()
                case .timerFired:
                    // Cancelling the run kills the child's process group; the
                    // loop then waits for the run to return (child reaped).
                    if outcome == nil { timedOut = true }
                    group.cancelAll()
                case .timerStopped:
                    break
                }
            }
            if timedOut { return .timedOut(stderr: stderr.bytes) }
            return outcome ?? .failed(.cannotStart("the run ended without a result"), stderr: stderr.bytes)
        }
    }

    /// Spawns the child and reads its stdout (bounded) and stderr (keeping the
    /// end) until both close. Cancelling the task kills the process group.
    private static func runChild(_ invocation: Invocation, stderr: StderrTail, logger: Logger?, collection: String) async -> Outcome {
        var options = PlatformOptions()
        // A new session: its own process group (so the group can be killed
        // as a whole) and no controlling terminal to read passwords from.
        options.createSession = true
        // What swift-subprocess does when the task is cancelled or the body
        // throws: SIGKILL to the group, and again if the child outlives it.
        options.teardownSequence = [.send(signal: .kill, toProcessGroup: true, allowedDurationToNextStep: .seconds(1))]
        let maxBodyBytes = invocation.maxBodyBytes
        let spawned = NIOLockedValueBox<pid_t?>(nil)
        defer {
            if let pid = spawned.withLockedValue({ $0 }) { _ = running.withLockedValue { $0.remove(pid) } }
        }
        do {
            let result = try await Subprocess.run(
                invocation.executable, arguments: Arguments(invocation.arguments), environment: invocation.environment,
                platformOptions: options, input: .none, output: .sequence, error: .sequence
            ) { execution in
                let pid = execution.processIdentifier.value
                spawned.withLockedValue { $0 = pid }
                _ = running.withLockedValue { $0.insert(pid) }
                logger?.debug("command started", metadata: [
                    "collection": "\(collection)", "command": "\(invocation.program)", "pid": "\(pid)",
                ])
                return try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await buffer in execution.standardError {
                            buffer.withUnsafeBytes { stderr.append($0) }
                        }
                    }
                    var body: [UInt8] = []
                    for try await buffer in execution.standardOutput {
                        guard buffer.count <= maxBodyBytes - body.count else {
                            throw RunError.bodyTooLarge(limit: maxBodyBytes)
                        }
                        buffer.withUnsafeBytes { body.append(contentsOf: $0) }
                    }
                    try await group.waitForAll()
                    return body
                }
            }
            // Whatever the command left running in its group goes too. The
            // child is reaped, but its pid cannot be reused while its group
            // has members; an empty group makes this a harmless ESRCH.
            _ = kill(-result.processIdentifier.value, SIGKILL)
            return .finished(result.terminationStatus, body: result.closureResult, stderr: stderr.bytes)
        } catch let error as RunError {
            return .failed(error, stderr: stderr.bytes)
        } catch let error as SubprocessError {
            if error.code == .executableNotFound { return .failed(.notFound, stderr: stderr.bytes) }
            return .failed(.cannotStart(String(describing: error)), stderr: stderr.bytes)
        } catch {
            return .failed(.cannotStart(String(describing: error)), stderr: stderr.bytes)
        }
    }

    // MARK: Messages

    static func describe(_ status: TerminationStatus) -> String {
        switch status {
        case .exited(let code):
            return "exited with status \(code)"
        case .signaled(let signal):
            return "was killed by signal \(signal)\(signalName(signal).map { " (\($0))" } ?? "")"
        }
    }

    static func describe(_ error: RunError, program: String) -> String {
        switch error {
        case .notFound:
            return program.contains("/") ? "not found or not executable" : "not found on PATH"
        case .cannotStart(let reason):
            return "cannot be run: \(reason)"
        case .bodyTooLarge(let limit):
            return "wrote more than maxBodyBytes (\(limit) bytes) on stdout and was killed"
        }
    }

    static func signalName(_ signal: Int32) -> String? {
        switch signal {
        case SIGHUP: return "SIGHUP"
        case SIGINT: return "SIGINT"
        case SIGQUIT: return "SIGQUIT"
        case SIGILL: return "SIGILL"
        case SIGABRT: return "SIGABRT"
        case SIGBUS: return "SIGBUS"
        case SIGFPE: return "SIGFPE"
        case SIGKILL: return "SIGKILL"
        case SIGSEGV: return "SIGSEGV"
        case SIGPIPE: return "SIGPIPE"
        case SIGALRM: return "SIGALRM"
        case SIGTERM: return "SIGTERM"
        default: return nil
        }
    }

    /// `": stderr: <text>"`: the end of stderr on one line (whitespace runs
    /// folded to one space), or nothing when stderr was empty.
    static func tail(_ stderr: [UInt8]) -> String {
        var bytes = stderr[...]
        let truncated = bytes.count > stderrTailBytes
        if truncated {
            bytes = bytes.suffix(stderrTailBytes)
            // Start on a character boundary: skip UTF-8 continuation bytes.
            while let first = bytes.first, first & 0xC0 == 0x80 { bytes = bytes.dropFirst() }
        }
        var text = ""
        var pendingSpace = false
        for character in String(decoding: bytes, as: UTF8.self) {
            if character.isWhitespace || character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                pendingSpace = !text.isEmpty
                continue
            }
            if pendingSpace { text.append(" ") }
            pendingSpace = false
            text.append(character)
        }
        guard !text.isEmpty else { return "" }
        return ": stderr: \(truncated ? "…" : "")\(text)"
    }

    // MARK: Stderr

    /// The last bytes a child wrote on stderr, shared between the reading
    /// task and whoever reports the run (also after a timeout cut it short).
    final class StderrTail: Sendable {
        private let limit: Int
        private let buffer = NIOLockedValueBox<[UInt8]>([])

        init(limit: Int) {
            self.limit = limit
        }

        func append(_ chunk: UnsafeRawBufferPointer) {
            buffer.withLockedValue { bytes in
                bytes.append(contentsOf: chunk)
                // Trim in batches so appending stays linear.
                if bytes.count > 2 * limit + 1 { bytes.removeFirst(bytes.count - limit - 1) }
            }
        }

        /// At most `limit + 1` bytes: one more than `CommandClient.tail`
        /// keeps, so it can tell that the text was cut.
        var bytes: [UInt8] {
            buffer.withLockedValue { bytes in Array(bytes.suffix(limit + 1)) }
        }
    }
}
