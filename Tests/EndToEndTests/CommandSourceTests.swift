import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The `command` source through the real binary (docs/config.md, docs/methods.md, docs/cli.md): paging a
/// config-file command, its failures, `define` and `--allow-commands`, and
/// `reset` killing a running command.
final class CommandSourceTests: EndToEndTestCase {
    /// Pages by the cursor given as the first argument; logs each call to `$CALLS`.
    static let pagesScript = #"""
        #!/bin/sh
        printf '[%s][%s]\n' "$1" "$NEXTPAGE_CURSOR" >> "$CALLS"
        case "$1" in
          "") echo '{"items": [{"id": 1}, {"id": 2}], "next_cursor": "b c"}' ;;
          "b c") echo '{"items": [{"id": 3}], "next_cursor": "z"}' ;;
          z) echo '{"items": [{"id": 4}], "next_cursor": null}' ;;
          *) echo "no page at '$1'" >&2; exit 9 ;;
        esac
        """#

    /// Writes an executable file in the server's folder.
    func writeScript(_ directory: String, _ name: String, _ text: String) throws {
        try writeFile(directory + "/" + name, text)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory + "/" + name)
    }

    func testConfigCommandCollectionPagesThroughLoadNext() throws {
        let directory = try temporaryDirectory()
        try writeScript(directory, "pages.sh", Self.pagesScript)
        let server = try startServer(
            config: #"""
                {"collections": {"cmd": {
                  "source": {"type": "command", "argv": ["./pages.sh", "{cursor}"], "env": {"CALLS": "calls.log"}, "timeout": 60},
                  "paging": {"strategy": "cursor"}}}}
                """#,
            in: directory)
        try server.request("1", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"cmd","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"b c","count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"cmd","items":[{"id":3}],"page":2,"hasNext":true,"lastId":"z","count":3}"#))
        try server.request("3", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"cmd","items":[{"id":4}],"page":3,"hasNext":false,"lastId":null,"count":4}"#))
        // After the end: no more runs.
        try server.request("4", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"cmd","items":[],"page":"<int>","hasNext":false,"lastId":null,"count":4}"#))
        try server.finish()
        let calls = try String(contentsOfFile: directory + "/calls.log", encoding: .utf8)
        XCTAssertEqual(calls, "[][]\n[b c][b c]\n[z][z]\n")
    }

    func testFailingCommandIsAnUpstreamErrorWithStatusAndStderr() throws {
        let server = try startServer(config: #"""
            {"collections": {"bad": {
              "source": {"type": "command", "argv": ["/bin/sh", "-c", "echo no pages today >&2; exit 4"]},
              "paging": {"strategy": "cursor"}}}}
            """#)
        try server.request("1", "loadNext", #"{"collection": "bad"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"""
            {"code": -32002, "message": "<contains:command '/bin/sh' exited with status 4: stderr: no pages today>",
             "data": {"collection": "bad", "attempts": 1, "retryable": false,
                      "message": "command '/bin/sh' exited with status 4: stderr: no pages today"}}
            """#))
        try server.request("2", "status", #"{"collection": "bad"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"bad","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":"command '/bin/sh' exited with status 4: stderr: no pages today"}"#))
        try server.finish()
    }

    // MARK: define and --allow-commands

    /// `define` params (on one line, as NDJSON needs) of a command that
    /// touches `marker` and answers one page.
    static func defineCommand(marker: String) -> String {
        #"{"name": "cmd", "source": {"type": "command", "argv": ["/bin/sh", "-c", "touch \"$0\"; echo '{\"items\": [7]}'", "\#(marker)"]}, "paging": {"strategy": "cursor"}}"#
    }

    func testDefineRefusesCommandSourcesWithoutAllowCommands() throws {
        let directory = try temporaryDirectory()
        let marker = directory + "/ran"
        let server = try startServer(in: directory)
        try server.request("1", "define", Self.defineCommand(marker: marker))
        let reply = try server.reply("1")
        try expectMatch(reply, rpcError(1, #"""
            {"code": -32004, "message": "<contains:--allow-commands>",
             "data": {"field": "source.type", "expected": "<contains:--allow-commands>"}}
            """#))
        // Nothing was defined, so nothing can run, and nothing did.
        try server.request("2", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"{"code": -32001, "message": "<string>", "data": {"collection": "cmd", "known": ["demo"]}}"#))
        try server.request("3", "collections")
        let states = try server.reply("3")["result"]?.arrayValue?.compactMap { $0["collection"]?.stringValue }
        XCTAssertEqual(states, ["demo"])
        try server.finish()
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "the command ran")
    }

    func testDefineAcceptsCommandSourcesWithAllowCommands() throws {
        let directory = try temporaryDirectory()
        let marker = directory + "/ran"
        let server = try startServer(arguments: ["--allow-commands"], in: directory)
        try server.request("1", "define", Self.defineCommand(marker: marker))
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"cmd","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#))
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "define alone runs nothing")
        try server.request("2", "loadNext", #"{"collection": "cmd"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"cmd","items":[7],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the command did not run")
    }

    // MARK: Cancellation

    /// A server whose collection "slow" runs a script that starts a
    /// background child and waits for it. Returns once the script runs, with
    /// the read end of a FIFO that the script and its child hold open: end of
    /// file on it means both are gone.
    fileprivate func startWithRunningCommand(arguments: [String] = []) throws -> (ServerHarness, FifoReadEnd) {
        let directory = try temporaryDirectory()
        let hold = try ReadableFifo(path: directory + "/hold")
        let pids = try ReadableFifo(path: directory + "/pids")
        let holdReader = try hold.openWithoutWaiting()
        try writeScript(directory, "slow.sh", #"""
            #!/bin/sh
            exec 3>"$1"
            sleep 60 &
            echo "$$ $!" > "$2"
            wait
            """#)
        let server = try startServer(
            config: #"""
                {"collections": {"slow": {
                  "source": {"type": "command", "argv": ["./slow.sh", "hold", "pids"], "timeout": 600},
                  "paging": {"strategy": "cursor"}}}}
                """#,
            arguments: arguments, in: directory)
        try server.request("1", "loadNext", #"{"collection": "slow"}"#)
        // The command is running once it has written its pids.
        let written = try pids.readToEnd(timeout: 30)
        XCTAssertEqual(String(decoding: written, as: UTF8.self).split(whereSeparator: \.isWhitespace).count, 2)
        return (server, holdReader)
    }

    func testResetKillsTheRunningCommandAndItsChildren() throws {
        let (server, hold) = try startWithRunningCommand()
        try server.request("2", "reset", #"{"collection": "slow"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"{"code":-32800,"message":"<string>","data?":"<any>"}"#))
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"slow","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#))
        XCTAssertEqual(try hold.readToEnd(timeout: 30), [], "the command or its child still holds the FIFO")
        try server.finish()
    }

    func testServerExitLeavesNoCommandRunning() throws {
        let (server, hold) = try startWithRunningCommand(arguments: ["--drain-timeout", "0"])
        server.closeInput()
        try expectMatch(server.reply("1"), rpcError(1, #"{"code":"<int>","message":"<string>","data?":"<any>"}"#))
        XCTAssertEqual(try server.waitForExit(), 0)
        XCTAssertEqual(try hold.readToEnd(timeout: 30), [], "the command or its child outlived the server")
        try server.finish()
    }
}

/// A FIFO the test reads from.
private struct ReadableFifo {
    let path: String

    init(path: String) throws {
        self.path = path
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError(description: "mkfifo \(path): \(String(cString: strerror(errno)))") }
    }

    /// Opens the read end at once (no writer needed), so writers never block on it.
    func openWithoutWaiting() throws -> FifoReadEnd {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw HarnessError(description: "open \(path): \(String(cString: strerror(errno)))") }
        return FifoReadEnd(fd: fd)
    }

    /// Waits for a writer, then reads until every writer has closed the FIFO.
    func readToEnd(timeout: TimeInterval) throws -> [UInt8] {
        let path = self.path
        return try readOnThread(timeout: timeout, what: "a writer of \(path)") {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return [] }
            defer { close(fd) }
            return readUntilEnd(fd)
        } unblock: {
            let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { close(fd) }
        }
    }
}

/// The read end of a FIFO, opened before any writer.
private final class FifoReadEnd: @unchecked Sendable {
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    /// Reads until end of file: until every process that opened the FIFO for
    /// writing has closed it or died.
    func readToEnd(timeout: TimeInterval) throws -> [UInt8] {
        let fd = self.fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return try readOnThread(timeout: timeout, what: "the writers of a FIFO to close it") { readUntilEnd(fd) } unblock: {}
    }
}

private func readUntilEnd(_ fd: Int32) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}

/// A blocking read on its own thread, failing after `timeout` seconds (a guard
/// against a broken test, not a timing assertion).
private func readOnThread(
    timeout: TimeInterval, what: String, _ body: @escaping @Sendable () -> [UInt8], unblock: () -> Void
) throws -> [UInt8] {
    let result = ReadResult()
    let done = DispatchSemaphore(value: 0)
    startThread {
        result.set(body())
        done.signal()
    }
    guard done.wait(timeout: .now() + timeout) == .success else {
        unblock()
        throw HarnessError(description: "timed out after \(timeout) s waiting for \(what)")
    }
    return result.bytes
}

/// The bytes a reading thread hands over.
private final class ReadResult: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [UInt8] = []

    func set(_ bytes: [UInt8]) {
        lock.lock(); stored = bytes; lock.unlock()
    }

    var bytes: [UInt8] {
        lock.lock(); defer { lock.unlock() }
        return stored
    }
}
