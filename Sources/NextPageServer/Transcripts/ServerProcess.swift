#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ChildProcess
import Jansson
import JSONRPC

/// A nextpage server started by `nextpage replay`, spoken to over pipes.
///
/// One thread reads stdout and frames it (`MessageFramer`, the transcript's
/// framing); every frame must be JSON, else it is kept as a protocol
/// violation. One thread keeps the tail of stderr; one waits for the exit.
/// Everything they collect is guarded by `condition`; waiting callers block
/// on it with a deadline, never by sleeping.
final class ServerProcess: @unchecked Sendable {
    /// A message read from stdout, and how many sends had been made when it arrived.
    struct Received {
        let message: JSON
        let segment: Int
    }

    let pid: pid_t
    private var stdinFD: Int32
    let condition = Condition()
    // Guarded by `condition`.
    private(set) var received: [Received] = []
    private(set) var violations: [String] = []
    private(set) var outputEnded = false
    private(set) var exitStatus: Int32?
    private(set) var exitSignal: Int32?
    private var stderrTail: [UInt8] = []
    /// Sends made so far (tags each message received).
    private var segment = 0

    /// Starts `executable` with `arguments` in `directory`; messages are read with `framing`.
    init(executable: String, arguments: [String], directory: String, framing: Framing) throws(TranscriptError) {
        func failure(_ what: String, _ code: Int32) -> TranscriptError {
            TranscriptError(path: executable, reason: "\(what): \(String(cString: strerror(code)))")
        }
        guard PipedChild.canChangeDirectory else {
            throw TranscriptError(path: executable, reason: "posix_spawn_file_actions_addchdir_np is not available")
        }
        signal(SIGPIPE, SIG_IGN)
        let child: PipedChild
        do {
            child = try PipedChild.spawn(executable: executable, arguments: arguments, directory: directory, searchPath: false)
        } catch .pipes(let code) {
            throw failure("pipe", code)
        } catch {
            throw failure("cannot start", { if case .spawn(let code) = error { code } else { ENOSYS } }())
        }
        pid = child.pid
        stdinFD = child.input
        let stdoutFD = child.output
        let stderrFD = child.errors
        startThread { [self] in readOutput(stdoutFD, framing: framing) }
        startThread { [self] in readErrors(stderrFD) }
        startThread { [self] in reap() }
    }

    deinit {
        if stdinFD >= 0 { close(stdinFD) }
    }

    /// Writes bytes to the server's stdin; false when it no longer reads.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        guard stdinFD >= 0 else { return false }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Counts one more send: messages received from now on belong to the next segment.
    func markSent() {
        condition.locked { segment += 1 }
    }

    /// Closes the server's stdin (end of input).
    func closeInput() {
        if stdinFD >= 0 {
            close(stdinFD)
            stdinFD = -1
        }
    }

    /// Sends SIGKILL.
    func kill() {
        _ = Glibc.kill(pid, SIGKILL)
    }

    /// Waits (holding nothing) until `done` is true under the lock, or the deadline passes; returns `done`'s last value.
    func wait(until deadline: timespec, for done: () -> Bool) -> Bool {
        condition.locked {
            while !done() {
                if Condition.isPast(deadline) { return false }
                condition.wait(until: deadline)
            }
            return true
        }
    }

    /// Whether the process has ended (lock held).
    var hasExited: Bool { exitStatus != nil || exitSignal != nil }

    /// The last lines of stderr.
    func stderrLines(_ count: Int) -> [String] {
        condition.locked {
            String(decoding: stderrTail, as: UTF8.self).split(separator: "\n").suffix(count).map(String.init)
        }
    }

    // MARK: Threads

    private func readOutput(_ fd: Int32, framing: Framing) {
        var framer = MessageFramer(mode: framing == .lsp ? .lsp : .ndjson, maxMessageBytes: 1 << 30)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            let events = n > 0 ? framer.feed(Array(buffer[0..<n])) : framer.finish()
            condition.locked {
                for event in events { accept(event, framing: framing) }
                if n <= 0 { outputEnded = true }
                condition.broadcast()
            }
            if n <= 0 { break }
        }
        close(fd)
    }

    /// Keeps one framed output (lock held).
    private func accept(_ event: FrameEvent, framing: Framing) {
        switch event {
        case .message(let body):
            if framing == .ndjson && body.last == UInt8(ascii: "\r") {
                violations.append("a line ends with \\r: \(Self.excerpt(body))")
            }
            do {
                received.append(Received(message: try JSON.parse(body), segment: segment))
            } catch {
                violations.append("not JSON: \(Self.excerpt(body))")
            }
        case .tooLarge(let size):
            violations.append("a message of \(size) bytes")
        case .malformedHeader(let reason):
            violations.append("a malformed frame header (\(reason))")
        case .truncated(let expected, let received, _):
            violations.append("output ended inside a message (\(received) of \(expected.map(String.init) ?? "?") bytes)")
        }
    }

    private func readErrors(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 1 << 14)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            condition.locked {
                stderrTail.append(contentsOf: buffer[0..<n])
                if stderrTail.count > 1 << 16 { stderrTail.removeFirst(stderrTail.count - (1 << 15)) }
            }
        }
        close(fd)
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        condition.locked {
            // WIFEXITED / WEXITSTATUS / WTERMSIG by hand (the macros do not import).
            if status & 0x7f == 0 {
                exitStatus = (status >> 8) & 0xff
            } else {
                exitSignal = status & 0x7f
            }
            condition.broadcast()
        }
    }

    static func excerpt(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(200), as: UTF8.self)
        return bytes.count > 200 ? text + "…" : text
    }
}
