import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// How a `nextpage` command ended and what it printed.
struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String

    /// stdout split into lines (without the empty one after the last newline).
    var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
}

/// A `nextpage` command (not a server session): started in a folder, its
/// stdout and stderr read by two threads while it runs. Every wait has a
/// timeout; nothing sleeps.
final class CommandProcess: @unchecked Sendable {
    let process = Process()
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var out = Data()
    private var err = Data()
    private var outClosed = false
    private var errClosed = false

    /// `environment`: variables set (or replaced) for the command, beside the test's own.
    init(_ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: try nextpageBinary())
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let outPipe = Pipe()
        let errPipe = Pipe()
        let inPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        try process.run()
        if let stdin { inPipe.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? inPipe.fileHandleForWriting.close()
        startThread { [self] in drain(outPipe.fileHandleForReading, isOut: true) }
        startThread { [self] in drain(errPipe.fileHandleForReading, isOut: false) }
    }

    var pid: pid_t { process.processIdentifier }

    private func drain(_ handle: FileHandle, isOut: Bool) {
        let fd = handle.fileDescriptor
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            condition.lock()
            if n <= 0 {
                if isOut { outClosed = true } else { errClosed = true }
                condition.broadcast()
                condition.unlock()
                return
            }
            if isOut { out.append(contentsOf: buffer[0..<n]) } else { err.append(contentsOf: buffer[0..<n]) }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Waits until stdout holds at least `count` complete lines.
    func waitForLines(_ count: Int, timeout: TimeInterval = 20) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while out.reduce(0, { $0 + ($1 == 10 ? 1 : 0) }) < count {
            if outClosed { throw HarnessError(description: "stdout closed after fewer than \(count) lines") }
            if !condition.wait(until: deadline) { throw HarnessError(description: "fewer than \(count) lines within \(timeout) s") }
        }
    }

    /// Waits for the process to end and for both pipes to close.
    func finish(timeout: TimeInterval = 30) throws -> CommandResult {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        while !(outClosed && errClosed) {
            if !condition.wait(until: deadline) {
                condition.unlock()
                process.terminate()
                throw HarnessError(description: "nextpage \(process.arguments ?? []) did not finish within \(timeout) s")
            }
        }
        condition.unlock()
        process.waitUntilExit()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        condition.lock()
        defer { condition.unlock() }
        return CommandResult(status: status, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }
}

/// Runs `nextpage arguments...` in `directory` to its end.
func runNextpage(_ arguments: [String], in directory: String, stdin: String? = nil, environment: [String: String] = [:]) throws -> CommandResult {
    try CommandProcess(arguments, in: directory, stdin: stdin, environment: environment).finish()
}

/// Opens a FIFO for writing, which blocks until a reader opens it: returns
/// the descriptor once the reader (a fetch of that page) is there.
func waitForReader(of fifo: String, timeout: TimeInterval = 20) throws -> Int32 {
    final class Box: @unchecked Sendable { var fd: Int32 = -1 }
    let box = Box()
    let opened = DispatchSemaphore(value: 0)
    startThread {
        box.fd = open(fifo, O_WRONLY | O_CLOEXEC)
        opened.signal()
    }
    guard opened.wait(timeout: .now() + timeout) == .success, box.fd >= 0 else {
        throw HarnessError(description: "nobody opened \(fifo) for reading within \(timeout) s")
    }
    return box.fd
}

/// The `id` of each JSON line.
func ids(ofLines lines: [String]) throws -> [Int64] {
    try lines.map { line in
        guard let id = try JSONValue.parse(line)["id"]?.intValue else { throw HarnessError(description: "a line without an integer id: \(line)") }
        return id
    }
}

/// The folder of the repository (for Schemas/ and Tests/Transcripts/).
let repositoryRoot: String = {
    var path = "\(#filePath)"
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path
}()
