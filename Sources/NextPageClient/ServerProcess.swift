#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ChildProcess
import Dispatch

/// A spawned nextpage: its pid, the pipe ends this side keeps, and the last
/// lines of its stderr (drained on a thread of its own, a line at a time to
/// `stderrHandler`).
final class ServerProcess: Sendable {
    let pid: pid_t
    /// Where requests go (the server's stdin).
    let input: Int32
    /// Where replies come from (the server's stdout).
    let output: Int32
    private let stderrTail = Locked<[String]>([])
    private let stderrDone = DispatchSemaphore(value: 0)
    private let status = Locked<WaitStatus?>(nil)

    /// How the process ended.
    struct WaitStatus: Sendable {
        let exitStatus: Int32?
        let signal: Int32?
    }

    /// Lines of stderr kept for `NextPageClientError.serverExited`.
    static let stderrLinesKept = 20

    /// Starts `executable` (looked up on `PATH` when it has no `/`).
    init(
        executable: String, arguments: [String], environment: [String: String]?, currentDirectory: String?,
        stderrHandler: (@Sendable (String) -> Void)?
    ) throws(NextPageClientError) {
        ignoreSIGPIPE()
        let child: PipedChild
        do {
            child = try PipedChild.spawn(
                executable: executable, arguments: arguments, environment: environment,
                directory: PipedChild.canChangeDirectory ? currentDirectory : nil, searchPath: true)
        } catch .pipes(let code) {
            throw .executableNotFound("cannot make pipes: \(String(cString: strerror(code)))")
        } catch {
            let code: Int32 = if case .spawn(let code) = error { code } else { ENOSYS }
            throw .executableNotFound(executable.contains("/")
                ? "'\(executable)' cannot be run: \(String(cString: strerror(code)))"
                : "no '\(executable)' on PATH; install nextpage (its README, \"Install\"), set $NEXTPAGE, or pass the path")
        }
        self.pid = child.pid
        self.input = child.input
        self.output = child.output
        let stderrFD = child.errors
        startThread { [self] in drainStderr(stderrFD, handler: stderrHandler) }
    }

    /// Waits for the process to end (once; later calls return the same), then
    /// a moment for the rest of its stderr.
    func wait() -> WaitStatus {
        if let known = status.withLock({ $0 }) { return known }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG by hand (the macros do not import).
        let ended = raw & 0x7f == 0 ? WaitStatus(exitStatus: (raw >> 8) & 0xff, signal: nil) : WaitStatus(exitStatus: nil, signal: raw & 0x7f)
        // A child of the server (a command source) may hold stderr open: the tail is what came by then.
        _ = stderrDone.wait(timeout: .now() + .seconds(2))
        status.withLock { $0 = ended }
        return ended
    }

    /// The exit status once `wait` has returned.
    var exitStatus: WaitStatus? { status.withLock { $0 } }

    /// The last lines the server wrote on stderr.
    var lastStderrLines: String { stderrTail.withLock { $0.joined(separator: "\n") } }

    func kill() {
        if status.withLock({ $0 }) == nil { _ = Glibc.kill(pid, SIGKILL) }
    }

    private func drainStderr(_ fd: Int32, handler: (@Sendable (String) -> Void)?) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 14)
        func emit(_ line: ArraySlice<UInt8>) {
            let text = String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            stderrTail.withLock {
                $0.append(text)
                if $0.count > Self.stderrLinesKept { $0.removeFirst($0.count - Self.stderrLinesKept) }
            }
            if let handler {
                handler(text)
            } else {
                var copy = text + "\n"
                copy.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
            }
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            pending.append(contentsOf: buffer[0..<n])
            while let newline = pending.firstIndex(of: 10) {
                emit(pending[..<newline])
                pending.removeSubrange(...newline)
            }
        }
        if !pending.isEmpty { emit(pending[...]) }
        close(fd)
        stderrDone.signal()
    }
}

/// A write to a server that has died must fail with EPIPE, not end this
/// program: SIGPIPE is ignored in the process (as SwiftNIO does).
private func ignoreSIGPIPE() {
    _ = ignoredSIGPIPE
}
private let ignoredSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

/// Starts a detached POSIX thread running `body` (blocking reads stay off the concurrency pool).
func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}
