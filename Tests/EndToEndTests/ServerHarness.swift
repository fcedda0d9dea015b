import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How messages are framed on the pipes.
enum WireFraming: String, Sendable, CaseIterable {
    case ndjson
    case lsp

    /// Frames one message body.
    func frame(_ body: String) -> [UInt8] {
        switch self {
        case .ndjson: return Array((body + "\n").utf8)
        case .lsp: return Array("Content-Length: \(body.utf8.count)\r\n\r\n".utf8) + Array(body.utf8)
        }
    }
}

/// A harness failure: a timeout, a broken pipe, a protocol violation.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
}

/// Where the `nextpage` binary is: `$NEXTPAGE_BIN`, else next to the test
/// bundle (on Linux `Bundle.main.bundleURL` is the products directory).
func nextpageBinary() throws -> String {
    if let path = ProcessInfo.processInfo.environment["NEXTPAGE_BIN"], !path.isEmpty {
        return path
    }
    // The test binary (`.build/<config>/nextpagePackageTests.xctest`) sits
    // beside the `nextpage` it tests. (Read from /proc, not from
    // `Bundle.allBundles`, whose CoreFoundation list is never freed.)
    let testBinary = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    var candidates: [URL] = []
    var folder = testBinary.deletingLastPathComponent()
    for _ in 0..<4 {
        candidates.append(folder.appendingPathComponent("nextpage"))
        folder = folder.deletingLastPathComponent()
    }
    for url in candidates where FileManager.default.isExecutableFile(atPath: url.path) {
        return url.path
    }
    throw HarnessError(description: "nextpage binary not found (tried \(candidates.map(\.path))); set NEXTPAGE_BIN")
}

/// Creates a fresh temporary directory.
func makeTemporaryDirectory() throws -> String {
    var template = Array((NSTemporaryDirectory() + "/nextpage-e2e-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw HarnessError(description: "mkdtemp failed: \(String(cString: strerror(errno)))")
    }
    // Resolve symlinks (/tmp may be one) so paths in messages compare simply.
    return URL(fileURLWithPath: String(cString: made)).resolvingSymlinksInPath().path
}

/// Writes a file (creating folders), failing loudly.
func writeFile(_ path: String, _ text: String) throws {
    let url = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: url)
}

/// One `nextpage` server process spoken to over pipes.
///
/// A thread reads stdout and splits it into messages (by line for ndjson, by
/// Content-Length for lsp); every frame must be a JSON-RPC 2.0 message, else it
/// is recorded as a protocol violation. Replies are taken by id, in any order.
/// Every wait has a timeout; nothing sleeps.
final class ServerHarness: @unchecked Sendable {
    /// The server's working directory (a fresh temporary directory).
    let directory: String
    let framing: WireFraming
    let pid: pid_t
    /// Default seconds to wait for one message.
    var timeout: TimeInterval = 10

    private var stdinFD: Int32
    private let stdoutFD: Int32
    private let stderrFD: Int32

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var stdoutBytes: [UInt8] = []
    private var parseOffset = 0
    /// Where the search for the next newline resumes (a long line arrives in many reads).
    private var scanOffset = 0
    private var received: [JSONValue] = []
    private var consumed: [Bool] = []
    private var violations: [String] = []
    private var stdoutClosed = false
    private var stderrBytes: [UInt8] = []
    private var stderrClosed = false
    private var exitStatus: Int32?
    private var exitSignal: Int32?
    private var readingPaused = false

    private static let ignoreSIGPIPE: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// Starts `nextpage` in `directory` with `arguments` (after the binary).
    /// `stdinFile`: a file to use as stdin instead of a pipe.
    /// `closeStdout`: close the read end of stdout at once (nobody reads replies).
    /// `readStderr`: false leaves stderr unread (its pipe fills up), to check logs never block.
    /// `launcher`: a program (and its arguments) that runs `nextpage` as its child, so
    /// that `pid` is the launcher's (`nextpage`'s parent).
    init(
        directory: String, arguments: [String] = [], framing: WireFraming = .ndjson, stdinFile: String? = nil,
        closeStdout: Bool = false, readStderr: Bool = true, launcher: [String] = []
    ) throws {
        _ = Self.ignoreSIGPIPE
        self.directory = directory
        self.framing = framing
        let binary = try nextpageBinary()
        guard let addchdir = spawnAddChdir else {
            throw HarnessError(description: "posix_spawn_file_actions_addchdir_np is not available")
        }

        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard makePipe(&outPipe), makePipe(&errPipe) else {
            throw HarnessError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        var childStdin: Int32
        if let stdinFile {
            childStdin = open(stdinFile, O_RDONLY | O_CLOEXEC)
            guard childStdin >= 0 else { throw HarnessError(description: "open \(stdinFile): \(String(cString: strerror(errno)))") }
        } else {
            guard makePipe(&inPipe) else { throw HarnessError(description: "pipe: \(String(cString: strerror(errno)))") }
            childStdin = inPipe[0]
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childStdin, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        guard addchdir(&actions, directory) == 0 else {
            for fd in [childStdin, outPipe[0], outPipe[1], errPipe[0], errPipe[1], inPipe[1]] where fd >= 0 { close(fd) }
            throw HarnessError(description: "posix_spawn_file_actions_addchdir_np failed")
        }

        let argv = launcher + [binary] + arguments
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArgs.append(nil)
        defer { for arg in cArgs { free(arg) } }
        var spawned: pid_t = 0
        let rc = posix_spawn(&spawned, argv[0], &actions, nil, cArgs, environ)
        close(childStdin)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            if stdinFile == nil { close(inPipe[1]) }
            throw HarnessError(description: "posix_spawn \(binary): \(String(cString: strerror(rc)))")
        }
        pid = spawned
        stdinFD = stdinFile == nil ? inPipe[1] : -1
        stdoutFD = outPipe[0]
        stderrFD = errPipe[0]

        if closeStdout {
            close(stdoutFD)
            stdoutClosed = true
        } else {
            startThread { [self] in readStdout() }
        }
        if readStderr {
            startThread { [self] in self.readStderr() }
        }
        startThread { [self] in reap() }
    }

    deinit {
        if stdinFD >= 0 { close(stdinFD) }
        condition.lock()
        if !stderrClosed { close(stderrFD) }
        condition.unlock()
    }

    // MARK: Sending

    /// Writes raw bytes to stdin exactly as given.
    func sendRaw(_ bytes: [UInt8]) throws {
        guard stdinFD >= 0 else { throw HarnessError(description: "stdin is closed") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw HarnessError(description: "write to server stdin: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    func sendRaw(_ text: String) throws { try sendRaw(Array(text.utf8)) }

    /// Writes `bytes` to stdin until they are all written, or until the
    /// server has taken nothing for `quiet` seconds (it stopped reading its
    /// input); returns how many bytes were written.
    func sendRawUntilStalled(_ bytes: [UInt8], quiet: TimeInterval) throws -> Int {
        guard stdinFD >= 0 else { throw HarnessError(description: "stdin is closed") }
        let flags = fcntl(stdinFD, F_GETFL)
        _ = fcntl(stdinFD, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(stdinFD, F_SETFL, flags) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress! + offset, bytes.count - offset) }
            if n >= 0 {
                offset += n
                continue
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN else {
                throw HarnessError(description: "write to server stdin: \(String(cString: strerror(errno)))")
            }
            var waiter = pollfd(fd: stdinFD, events: Int16(POLLOUT), revents: 0)
            if poll(&waiter, 1, Int32(quiet * 1000)) == 0 { break }
        }
        return offset
    }

    /// Sends one message body, framed with this harness's framing.
    func send(_ body: String) throws { try sendRaw(framing.frame(body)) }

    /// Sends a request; `id` is JSON text (`1`, `"\"a\""`, `null`); `params` is JSON text.
    func request(_ id: String, _ method: String, _ params: String? = nil) throws {
        var body = #"{"jsonrpc":"2.0","id":\#(id),"method":\#(JSONValue.quote(method))"#
        if let params { body += #","params":\#(params)"# }
        try send(body + "}")
    }

    /// Sends a notification.
    func notify(_ method: String, _ params: String? = nil) throws {
        var body = #"{"jsonrpc":"2.0","method":\#(JSONValue.quote(method))"#
        if let params { body += #","params":\#(params)"# }
        try send(body + "}")
    }

    /// Closes stdin (end of input for the server).
    func closeInput() {
        if stdinFD >= 0 {
            close(stdinFD)
            stdinFD = -1
        }
    }

    /// Sends a signal to the server.
    func sendSignal(_ number: Int32) {
        _ = Glibc.kill(pid, number)
    }

    // MARK: Receiving

    /// Waits for the first unconsumed message satisfying `predicate`.
    func take(_ what: String, timeout: TimeInterval? = nil, where predicate: (JSONValue) -> Bool) throws -> JSONValue {
        let deadline = Date(timeIntervalSinceNow: timeout ?? self.timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let index = received.indices.first(where: { !consumed[$0] && predicate(received[$0]) }) {
                consumed[index] = true
                return received[index]
            }
            if !violations.isEmpty {
                throw HarnessError(description: "stdout carried something that is not a JSON-RPC message while waiting for \(what): \(violations.count) bad frame(s), the first: \(violations.prefix(3))")
            }
            if stdoutClosed {
                throw HarnessError(description: "stdout closed while waiting for \(what); unconsumed: \(unconsumedLocked()); stderr: \(stderrTextLocked())")
            }
            if !condition.wait(until: deadline) {
                throw HarnessError(description: "timed out after \(timeout ?? self.timeout) s waiting for \(what); unconsumed: \(unconsumedLocked()); stderr: \(stderrTextLocked())")
            }
        }
    }

    /// The reply (result or error) with this id; `id` is JSON text.
    func reply(_ id: String, timeout: TimeInterval? = nil) throws -> JSONValue {
        let wanted = try JSONValue.parse(id)
        return try take("the reply to id \(id)", timeout: timeout) {
            $0["id"] == wanted && $0["method"] == nil && ($0["result"] != nil || $0["error"] != nil)
        }
    }

    /// The next message, whatever it is.
    func nextMessage(timeout: TimeInterval? = nil) throws -> JSONValue {
        try take("any message", timeout: timeout) { _ in true }
    }

    /// The next batch reply (a JSON array).
    func nextBatch(timeout: TimeInterval? = nil) throws -> JSONValue {
        try take("a batch reply", timeout: timeout) { $0.arrayValue != nil }
    }

    /// The next notification with this method.
    func notification(_ method: String, timeout: TimeInterval? = nil) throws -> JSONValue {
        try take("a \(method) notification", timeout: timeout) { $0["method"]?.stringValue == method && $0["id"] == nil }
    }

    /// Takes every message already received that satisfies `predicate`, without waiting.
    func takeAll(where predicate: (JSONValue) -> Bool) -> [JSONValue] {
        condition.lock(); defer { condition.unlock() }
        var taken: [JSONValue] = []
        for index in received.indices where !consumed[index] && predicate(received[index]) {
            consumed[index] = true
            taken.append(received[index])
        }
        return taken
    }

    /// Messages received and not taken yet.
    var unconsumed: [JSONValue] {
        condition.lock(); defer { condition.unlock() }
        return unconsumedLocked()
    }

    private func unconsumedLocked() -> [JSONValue] {
        received.indices.filter { !consumed[$0] }.map { received[$0] }
    }

    /// Everything written to stdout so far.
    var stdoutText: String {
        condition.lock(); defer { condition.unlock() }
        return String(decoding: stdoutBytes, as: UTF8.self)
    }

    /// Everything written to stderr so far.
    var stderrText: String {
        condition.lock(); defer { condition.unlock() }
        return stderrTextLocked()
    }

    private func stderrTextLocked() -> String {
        let text = String(decoding: stderrBytes, as: UTF8.self)
        return text.count > 2000 ? "…" + String(text.suffix(2000)) : text
    }

    /// Waits until stderr contains `text`.
    func waitForStderr(containing text: String, timeout: TimeInterval? = nil) throws {
        let deadline = Date(timeIntervalSinceNow: timeout ?? self.timeout)
        condition.lock()
        defer { condition.unlock() }
        while !String(decoding: stderrBytes, as: UTF8.self).contains(text) {
            if stderrClosed || !condition.wait(until: deadline) {
                throw HarnessError(description: "stderr does not say \"\(text)\": \(stderrTextLocked())")
            }
        }
    }

    /// Frames on stdout that were not JSON-RPC messages.
    var protocolViolations: [String] {
        condition.lock(); defer { condition.unlock() }
        return violations
    }

    // MARK: Ending

    /// Waits for the process to end; returns its exit status (128+N for signal N).
    func waitForExit(timeout: TimeInterval = 15) throws -> Int32 {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while exitStatus == nil && exitSignal == nil {
            if !condition.wait(until: deadline) {
                throw HarnessError(description: "server did not exit within \(timeout) s; stderr: \(stderrTextLocked())")
            }
        }
        return exitStatus ?? (128 + exitSignal!)
    }

    /// The signal that ended the process, if one did (after `waitForExit`).
    var terminatingSignal: Int32? {
        condition.lock(); defer { condition.unlock() }
        return exitSignal
    }

    /// Whether the process has ended.
    var hasExited: Bool {
        condition.lock(); defer { condition.unlock() }
        return exitStatus != nil || exitSignal != nil
    }

    /// Waits until stdout is closed and everything on it has been read.
    func waitForEndOfOutput(timeout: TimeInterval = 15) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !stdoutClosed {
            if !condition.wait(until: deadline) { throw HarnessError(description: "stdout not closed within \(timeout) s") }
        }
    }

    /// Closes stdin, waits for exit and the end of stdout, and checks that every
    /// message was taken by the test and stdout carried only protocol.
    /// Returns the exit status.
    @discardableResult
    func finish(expectStatus: Int32? = 0, file: StaticString = #filePath, line: UInt = #line) throws -> Int32 {
        closeInput()
        let status = try waitForExit()
        try waitForEndOfOutput()
        let extra = unconsumed
        XCTAssertEqual(extra, [], "messages the test did not expect", file: file, line: line)
        XCTAssertEqual(protocolViolations, [], "stdout carried non-protocol output", file: file, line: line)
        if let expectStatus {
            XCTAssertEqual(status, expectStatus, "exit status; stderr: \(stderrText)", file: file, line: line)
        }
        return status
    }

    /// Ends the process at once (teardown of a test that failed or stopped early).
    func kill() {
        closeInput()
        if !hasExited {
            Glibc.kill(pid, SIGKILL)
        }
        _ = try? waitForExit(timeout: 10)
        _ = try? waitForEndOfOutput(timeout: 10)
    }

    /// Stops reading stdout (a client that does not read its replies): once
    /// the pipe is full, the server's writes block.
    func pauseReading() {
        condition.lock(); defer { condition.unlock() }
        readingPaused = true
    }

    /// After `pauseReading`: waits until the server's stdout pipe is full
    /// (the server can write no more); returns false after `timeout` seconds.
    func waitUntilStdoutIsFull(timeout: TimeInterval) -> Bool {
        let capacity = Int(fcntl(stdoutFD, 1032))   // F_GETPIPE_SZ (Linux), not exported to Swift
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var queued: Int32 = 0
            if ioctl(stdoutFD, UInt(FIONREAD), &queued) == 0, capacity > 0, Int(queued) >= capacity - 4096 { return true }
            usleep(10_000)
        }
        return false
    }

    /// Reads stdout again after `pauseReading`.
    func resumeReading() {
        condition.lock(); defer { condition.unlock() }
        readingPaused = false
        condition.broadcast()
    }

    // MARK: Threads

    private func readStdout() {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            condition.lock()
            while readingPaused { condition.wait() }
            condition.unlock()
            let n = buffer.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            condition.lock()
            if n <= 0 {
                stdoutClosed = true
                let rest = stdoutBytes.count - parseOffset
                if rest > 0 {
                    violations.append("unterminated output at end: \(String(decoding: stdoutBytes[parseOffset...], as: UTF8.self).prefix(300))")
                }
                condition.broadcast()
                condition.unlock()
                break
            }
            stdoutBytes.append(contentsOf: buffer[0..<n])
            parseFrames()
            condition.broadcast()
            condition.unlock()
        }
        close(stdoutFD)
    }

    /// Splits complete frames off `stdoutBytes` (lock held).
    private func parseFrames() {
        while true {
            let pending = stdoutBytes[parseOffset...]
            switch framing {
            case .ndjson:
                guard let newline = stdoutBytes[max(parseOffset, scanOffset)...].firstIndex(of: UInt8(ascii: "\n")) else {
                    scanOffset = stdoutBytes.count
                    return
                }
                let line = Array(stdoutBytes[parseOffset..<newline])
                parseOffset = newline + 1
                accept(line)
            case .lsp:
                let separator = Array("\r\n\r\n".utf8)
                guard let end = firstIndex(of: separator, in: pending) else { return }
                let header = String(decoding: stdoutBytes[parseOffset..<end], as: UTF8.self)
                var length: Int?
                for field in header.components(separatedBy: "\r\n") {
                    let parts = field.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        length = Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }
                }
                guard let length else {
                    violations.append("lsp header without Content-Length: \(header.prefix(200))")
                    parseOffset = end + 4
                    continue
                }
                let bodyStart = end + 4
                guard stdoutBytes.count - bodyStart >= length else { return }
                parseOffset = bodyStart + length
                accept(Array(stdoutBytes[bodyStart..<(bodyStart + length)]))
            }
        }
    }

    private func firstIndex(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = haystack.startIndex
        while i + needle.count <= haystack.endIndex {
            if haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// Checks one frame is a JSON-RPC message (or a batch of them) and queues it.
    private func accept(_ body: [UInt8]) {
        let text = String(decoding: body, as: UTF8.self)
        if framing == .ndjson && body.last == UInt8(ascii: "\r") {
            violations.append("reply line ends with \\r: \(text.prefix(200))")
        }
        guard let value = try? JSONValue.parse(Data(body)) else {
            violations.append("not JSON: \(text.prefix(300))")
            return
        }
        func isMessage(_ m: JSONValue) -> Bool {
            guard m["jsonrpc"] == .string("2.0") else { return false }
            if m["method"] != nil { return m["method"]?.stringValue != nil && m["result"] == nil && m["error"] == nil }
            guard let id = m["id"] else { return false }
            switch id {
            case .string, .int, .double, .null: break
            default: return false
            }
            return (m["result"] != nil) != (m["error"] != nil)
        }
        let ok: Bool
        if let batch = value.arrayValue {
            ok = !batch.isEmpty && batch.allSatisfy { isMessage($0) && $0["method"] == nil }
        } else {
            ok = isMessage(value)
        }
        if !ok { violations.append("not a JSON-RPC 2.0 message: \(text.prefix(300))") }
        received.append(value)
        consumed.append(false)
    }

    private func readStderr() {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(stderrFD, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            condition.lock()
            if n <= 0 {
                stderrClosed = true
                close(stderrFD)
                condition.broadcast()
                condition.unlock()
                break
            }
            stderrBytes.append(contentsOf: buffer[0..<n])
            condition.broadcast()
            condition.unlock()
        }
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        condition.lock()
        // WIFEXITED / WEXITSTATUS / WTERMSIG by hand (the macros do not import).
        if status & 0x7f == 0 {
            exitStatus = (status >> 8) & 0xff
        } else {
            exitSignal = status & 0x7f
        }
        condition.broadcast()
        condition.unlock()
    }
}

/// Starts a helper process (no pipes); the caller kills and reaps it.
func spawnProcess(_ argv: [String]) throws -> pid_t {
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
    cArgs.append(nil)
    defer { for arg in cArgs { free(arg) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, argv[0], nil, nil, cArgs, environ)
    guard rc == 0 else { throw HarnessError(description: "posix_spawn \(argv[0]): \(String(cString: strerror(rc)))") }
    return pid
}

/// A pipe whose ends are close-on-exec (children get only what is dup2'ed to 0, 1, 2).
private func makePipe(_ fds: inout [Int32]) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return true
}

/// glibc's posix_spawn_file_actions_addchdir_np (a GNU extension Swift does not import).
private let spawnAddChdir: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32).self)
}()

/// Runs `body` on a new thread (never on the concurrency pool).
func startThread(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread { body() }
    thread.stackSize = 1 << 20
    thread.start()
}

/// A named pipe used as a page file: the server's read of it blocks until the
/// test writes the page, which makes a fetch "in flight" deterministically.
final class Fifo: @unchecked Sendable {
    let path: String
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var writers = 0
    private var released = false

    init(path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        guard mkfifo(path, 0o644) == 0 else {
            throw HarnessError(description: "mkfifo \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Writes `text` into the FIFO from a background thread: opening blocks
    /// until the server opens it for reading; then the text is written and the
    /// FIFO closed (end of file for the reader). Returns at once.
    func write(_ text: String) {
        lock.lock(); writers += 1; lock.unlock()
        let path = self.path
        let done = self.done
        startThread {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                let bytes = Array(text.utf8)
                var offset = 0
                while offset < bytes.count {
                    let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
                close(fd)
            }
            done.signal()
        }
    }

    /// Waits until a `write` has been delivered (the reader had opened the FIFO
    /// and the text was written and closed).
    func waitWritten(timeout: TimeInterval = 10) throws {
        if done.wait(timeout: .now() + timeout) == .timedOut {
            throw HarnessError(description: "nobody opened \(path) for reading within \(timeout) s")
        }
        lock.lock(); writers -= 1; lock.unlock()
    }

    /// Replaces the FIFO by a regular file holding `text`. A reader blocked on
    /// the FIFO (a fetch that was cancelled) is released with end of file;
    /// later reads get the regular file.
    func replace(withFile text: String) throws {
        let holder = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        let temporary = path + ".tmp-\(getpid())"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else {
            throw HarnessError(description: "rename over \(path): \(String(cString: strerror(errno)))")
        }
        if holder >= 0 { close(holder) }
        lock.lock(); released = true; lock.unlock()
    }

    /// Unblocks everyone still waiting on the FIFO (readers and writers) and
    /// removes it. Safe to call more than once.
    func release() {
        lock.lock()
        let already = released
        released = true
        lock.unlock()
        guard !already else { return }
        let holder = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        unlink(path)
        if holder >= 0 { close(holder) }
    }
}

/// Base class: starts servers in temporary directories and always cleans up
/// (kills a server still running, releases FIFOs, removes the directory).
class EndToEndTestCase: XCTestCase {
    /// A fresh temporary directory, removed after the test.
    func temporaryDirectory() throws -> String {
        let directory = try makeTemporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    /// Starts a server. `config`: text of `nextpage.json` in its directory
    /// (none: the built-in demo); `files`: more files, by path relative to it.
    func startServer(
        config: String? = nil, files: [String: String] = [:], arguments: [String] = [],
        framing: WireFraming = .ndjson, in existing: String? = nil, stdinFile: String? = nil, closeStdout: Bool = false,
        readStderr: Bool = true
    ) throws -> ServerHarness {
        let directory = try existing ?? temporaryDirectory()
        if let config { try writeFile(directory + "/nextpage.json", config) }
        for (path, text) in files { try writeFile(directory + "/" + path, text) }
        let server = try ServerHarness(
            directory: directory, arguments: arguments, framing: framing, stdinFile: stdinFile, closeStdout: closeStdout,
            readStderr: readStderr)
        addTeardownBlock { server.kill() }
        return server
    }

    /// A FIFO released (so no reader or writer stays blocked) after the test.
    func makeFifo(_ path: String) throws -> Fifo {
        let fifo = try Fifo(path: path)
        addTeardownBlock { fifo.release() }
        return fifo
    }
}

/// A one-collection file-source config.
func fileConfig(_ name: String = "c", dir: String = "pages", paging: String, extra: String = "") -> String {
    let more = extra.isEmpty ? "" : ", " + extra
    return #"{"collections": {"\#(name)": {"source": {"type": "file", "dir": "\#(dir)"}, "paging": \#(paging)\#(more)}}}"#
}
