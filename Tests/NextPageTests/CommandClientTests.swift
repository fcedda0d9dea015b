import Foundation
import Jansson
import Logging
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// The `command` source: real child processes (small `/bin/sh` scripts in a
/// temporary folder). Every wait is for an event (a reply, a FIFO opened or
/// closed), bounded only as a failure guard; nothing sleeps.
final class CommandClientTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        let template = NSTemporaryDirectory() + "nextpage-command-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: template, withIntermediateDirectories: true)
        dir = URL(fileURLWithPath: template).resolvingSymlinksInPath().path
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Writes an executable script into the temp folder; returns its path.
    private func script(_ name: String, _ body: String) throws -> String {
        let path = dir + "/" + name
        try Data(("#!/bin/sh\n" + body).utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return path
    }

    private func request(_ cursor: Cursor?, first: Bool = false, strategy: Paging.Strategy = .cursor) -> PageRequest {
        PageRequest(cursor: cursor, isFirstPage: first, paging: Paging(strategy: strategy), options: CollectionOptions())
    }

    /// The upstream failure a fetch ends with (fails the test otherwise).
    private func upstreamFailure(
        _ client: CommandClient, _ request: PageRequest, file: StaticString = #filePath, line: UInt = #line
    ) async -> UpstreamFailure? {
        do {
            let response = try await client.fetch(request)
            XCTFail("fetched \(response.body.count) bytes instead of failing", file: file, line: line)
        } catch LoadError.upstream(let failure) {
            return failure
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
        return nil
    }

    // MARK: Success

    func testPagesThroughThreePagesWithPlaceholderAndEnvironment() async throws {
        let log = dir + "/calls.log"
        // Answers by the cursor given as an argument; logs exactly what it got.
        let pages = try script("pages.sh", #"""
            printf '%s|%s|%s|%s\n' "$1" "$2" "$NEXTPAGE_CURSOR" "$PAGES_GREETING" >> "$LOG"
            case "$NEXTPAGE_CURSOR" in
              "") echo '{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c 2;$(x)"}' ;;
              'c 2;$(x)') echo '{"items": [{"id": 3}], "next_cursor": "{cursor}"}' ;;
              '{cursor}') echo '{"items": [{"id": 4}, {"id": 5}], "next_cursor": null}' ;;
              *) echo "unexpected cursor" >&2; exit 7 ;;
            esac
            """#)
        let source = CommandSource(
            argv: [pages, "--after={cursor}", "[{cursor}]"],
            environment: [("PAGES_GREETING", "hello"), ("LOG", log)])
        let collection = PagedCollection(
            name: "c", client: CommandClient(source: source), paging: Paging(strategy: .cursor, items: "/items", next: "/next_cursor"))

        var ids: [Int] = []
        var hasNext = [Bool]()
        for _ in 0..<3 {
            let page = try await collection.loadNext()
            ids += itemIds(page.items)
            hasNext.append(page.state.hasNext)
        }
        XCTAssertEqual(ids, [1, 2, 3, 4, 5])
        XCTAssertEqual(hasNext, [true, true, false])
        // The end: no more runs.
        let after = try await collection.loadNext()
        XCTAssertEqual(after.items.count, 0)

        let calls = try String(contentsOfFile: log, encoding: .utf8)
        XCTAssertEqual(calls, """
            --after=|[]||hello
            --after=c 2;$(x)|[c 2;$(x)]|c 2;$(x)|hello
            --after={cursor}|[{cursor}]|{cursor}|hello

            """)
    }

    func testFirstPageCursorIsEmptyEvenForNumberedStrategies() async throws {
        let client = CommandClient(source: CommandSource(argv: ["/bin/sh", "-c", #"printf '[%s|%s]' "$0" "$NEXTPAGE_CURSOR""#, "{cursor}"]))
        let first = try await client.fetch(request(.integer(1), first: true, strategy: .page))
        XCTAssertEqual(String(decoding: first.body, as: UTF8.self), "[|]")
        let second = try await client.fetch(request(.integer(2), strategy: .page))
        XCTAssertEqual(String(decoding: second.body, as: UTF8.self), "[2|2]")
    }

    func testWholePageIsReadWhenTheCommandExitsRightAfterWritingIt() async throws {
        // Larger than a pipe's buffer: the child blocks until it is read, exits at once after.
        let client = CommandClient(source: CommandSource(argv: ["/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a"]))
        let response = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(response.body.count, 300_000)
        XCTAssertTrue(response.body.allSatisfy { $0 == UInt8(ascii: "a") })
    }

    func testStderrOfASuccessfulRunIsIgnored() async throws {
        let client = CommandClient(source: CommandSource(argv: ["/bin/sh", "-c", "echo warming up >&2; echo '{\"items\": []}'"]))
        let response = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"items\": []}\n")
    }

    // MARK: Failures

    func testNonZeroExitCarriesTheStatusAndTheEndOfStderrOnOneLine() async throws {
        let client = CommandClient(source: CommandSource(argv: [
            "/bin/sh", "-c", "echo partial page; printf 'first line\\n\\tsecond line\\r\\n\\nlast: boom\\n' >&2; exit 3",
        ]))
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(nil, first: true)))
        XCTAssertEqual(failure.message, "command '/bin/sh' exited with status 3: stderr: first line second line last: boom")
        XCTAssertFalse(failure.retryable)
        XCTAssertNil(failure.status)
        XCTAssertEqual(failure.attempts, 1)
    }

    func testLongStderrKeepsOnlyItsEnd() async throws {
        let client = CommandClient(source: CommandSource(argv: [
            "/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo ' THE END' >&2; exit 1",
        ]))
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(nil, first: true)))
        XCTAssertTrue(failure.message.hasPrefix("command '/bin/sh' exited with status 1: stderr: …xxx"), failure.message)
        XCTAssertTrue(failure.message.hasSuffix("xxx THE END"), String(failure.message.suffix(40)))
        XCTAssertLessThanOrEqual(failure.message.utf8.count, CommandClient.stderrTailBytes + 100)
        XCTAssertGreaterThanOrEqual(failure.message.utf8.count, CommandClient.stderrTailBytes)
    }

    func testDeathBySignalIsNamed() async throws {
        let client = CommandClient(source: CommandSource(argv: ["/bin/sh", "-c", "echo about to go >&2; kill -TERM $$"]))
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(nil, first: true)))
        XCTAssertEqual(failure.message, "command '/bin/sh' was killed by signal 15 (SIGTERM): stderr: about to go")
        XCTAssertFalse(failure.retryable)
    }

    func testMissingExecutableIsAClearUpstreamError() async throws {
        let onPath = CommandClient(source: CommandSource(argv: ["nextpage-test-no-such-program", "x"]))
        let failure = try XCTUnwrapAsync(await upstreamFailure(onPath, request(nil, first: true)))
        XCTAssertEqual(failure.message, "command 'nextpage-test-no-such-program' not found on PATH")
        XCTAssertFalse(failure.retryable)

        let byPath = CommandClient(source: CommandSource(argv: [dir + "/missing.sh"]))
        let pathFailure = try XCTUnwrapAsync(await upstreamFailure(byPath, request(nil, first: true)))
        XCTAssertEqual(pathFailure.message, "command '\(dir)/missing.sh' not found or not executable")
    }

    func testPathFromTheSourceEnvironmentFindsTheProgram() async throws {
        try FileManager.default.createDirectory(atPath: dir + "/bin", withIntermediateDirectories: true)
        let path = dir + "/bin/nextpage-test-page"
        try Data("#!/bin/sh\necho found\n".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        let client = CommandClient(source: CommandSource(argv: ["nextpage-test-page"], environment: [("PATH", dir + "/bin:/usr/bin:/bin")]))
        let response = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "found\n")
    }

    func testStdoutLargerThanMaxBodyBytesIsAnErrorNotAnUnboundedRead() async throws {
        // `yes` never stops by itself: only the limit ends this run.
        let client = CommandClient(source: CommandSource(argv: ["yes", "{cursor}"], maxBodyBytes: 1000))
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(nil, first: true)))
        XCTAssertEqual(failure.message, "command 'yes' wrote more than maxBodyBytes (1000 bytes) on stdout and was killed")
        XCTAssertFalse(failure.retryable)
    }

    func testCursorWithANulByteIsRefusedWithoutRunning() async throws {
        let marker = dir + "/ran"
        let client = CommandClient(source: CommandSource(argv: ["/bin/sh", "-c", "touch \"$0\"", marker]))
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(.string("a\u{0}b"))))
        XCTAssertTrue(failure.message.contains("NUL"), failure.message)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker))
    }

    // MARK: Timeout and cancellation

    func testTimeoutKillsTheChildAndIsRetryable() async throws {
        let logs = LogCapture()
        let logger = Logger(label: "test") { _ in logs }
        let client = CommandClient(
            source: CommandSource(argv: ["/bin/sh", "-c", "echo still working >&2; exec sleep 60"], timeout: 0.5), logger: logger)
        let failure = try XCTUnwrapAsync(await upstreamFailure(client, request(nil, first: true)))
        XCTAssertTrue(failure.message.hasPrefix("command '/bin/sh' timed out after 0.5 s and was killed"), failure.message)
        XCTAssertTrue(failure.retryable)

        // The child was running (it was started and logged) and is gone now: killed and reaped.
        let pid = try XCTUnwrap(logs.startedPids.first)
        XCTAssertEqual(logs.startedPids.count, 1)
        XCTAssertEqual(kill(pid, 0), -1)
        XCTAssertEqual(errno, ESRCH)
    }

    func testCancellationKillsTheChildAndItsProcessGroup() async throws {
        // `hold` stays open for writing in the child and its background
        // grandchild: end of file on it means every one of them is gone.
        let hold = try FIFO(path: dir + "/hold")
        let pids = try FIFO(path: dir + "/pids")
        let holdReader = try hold.openForReadingWithoutWaiting()
        let pager = try script("slow.sh", #"""
            exec 3>"$1"
            sleep 60 &
            echo "$$ $!" > "$2"
            wait
            """#)
        let client = CommandClient(source: CommandSource(argv: [pager, hold.path, pids.path], timeout: 600))
        let first = request(nil, first: true)
        let fetch = Task { try await client.fetch(first) }

        // The script is running once it has written its pids.
        let written = try await pids.readToEnd(timeout: 30)
        let numbers = String(decoding: written, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        XCTAssertEqual(numbers.count, 2, "pids: \(String(decoding: written, as: UTF8.self))")
        let child = try XCTUnwrap(numbers.first)
        XCTAssertEqual(kill(child, 0), 0, "the child runs before the cancellation")

        fetch.cancel()
        let result = await fetch.result
        switch result {
        case .success(let response): XCTFail("fetched \(response.body.count) bytes after cancellation")
        case .failure(let error): XCTAssertEqual(error as? LoadError, .cancelled)
        }
        // The child has been killed and reaped by the time the fetch returns.
        XCTAssertEqual(kill(child, 0), -1)
        XCTAssertEqual(errno, ESRCH)
        // And nothing else of its group holds the FIFO: the grandchild is dead too.
        let rest = try await holdReader.readToEnd(timeout: 30)
        XCTAssertEqual(rest, [])
    }

    func testProcessesLeftBehindAfterASuccessfulRunAreKilled() async throws {
        let hold = try FIFO(path: dir + "/hold")
        let holdReader = try hold.openForReadingWithoutWaiting()
        // The background sleep keeps stdout open too: the page still arrives
        // when the script itself exits.
        let client = CommandClient(source: CommandSource(argv: [
            "/bin/sh", "-c", #"exec 3>"$0"; sleep 60 & echo '{"items": [1]}'"#, hold.path,
        ]))
        let response = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"items\": [1]}\n")
        let rest = try await holdReader.readToEnd(timeout: 30)
        XCTAssertEqual(rest, [])
    }

    func testAlreadyCancelledTaskRunsNothing() async throws {
        let marker = dir + "/ran"
        let client = CommandClient(source: CommandSource(argv: ["/usr/bin/touch", marker]))
        let first = request(nil, first: true)
        let fetch = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.fetch(first)
        }
        let result = await fetch.result
        if case .success = result { XCTFail("fetched in a cancelled task") }
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker))
    }

    // MARK: Arguments

    func testPlaceholderIsReplacedEverywhereAndNotRescanned() {
        let source = CommandSource(argv: ["prog", "{cursor}", "a{cursor}b{cursor}", "{curs", "no"])
        XCTAssertEqual(source.arguments(cursor: "{cursor}"), ["{cursor}", "a{cursor}b{cursor}", "{curs", "no"])
        XCTAssertEqual(source.arguments(cursor: "x"), ["x", "axbx", "{curs", "no"])
        XCTAssertEqual(source.arguments(cursor: ""), ["", "ab", "{curs", "no"])
    }
}

/// `XCTUnwrap` for a value produced by an `await` (autoclosures cannot await).
private func XCTUnwrapAsync<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}

/// Records the pids of "command started" log records.
private final class LogCapture: LogHandler, @unchecked Sendable {
    private let pids = NIOLockedValueBox<[Int32]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.message.description == "command started", case .string(let text)? = event.metadata?["pid"],
              let pid = Int32(text) else { return }
        pids.withLockedValue { $0.append(pid) }
    }

    var startedPids: [Int32] { pids.withLockedValue { $0 } }
}

/// A named pipe in a test folder.
private struct FIFO {
    let path: String

    init(path: String) throws {
        self.path = path
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// Opens the read end at once, without waiting for a writer, so a writer
    /// opening it later never blocks.
    func openForReadingWithoutWaiting() throws -> FIFOReader {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return FIFOReader(fd: fd)
    }

    /// Waits for a writer, then reads until every writer has closed it.
    func readToEnd(timeout: TimeInterval) async throws -> [UInt8] {
        let path = self.path
        return try await blockingRead(timeout: timeout, what: "a writer of \(path)") {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return [] }
            defer { close(fd) }
            return readAll(fd)
        } unblock: {
            // Become a writer ourselves so a reader waiting in open() gets through.
            let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { close(fd) }
        }
    }
}

/// The read end of a FIFO opened before any writer.
private final class FIFOReader: @unchecked Sendable {
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    /// Reads until end of file: until every process that opened the FIFO for
    /// writing has closed it (or died).
    func readToEnd(timeout: TimeInterval) async throws -> [UInt8] {
        let fd = self.fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return try await blockingRead(timeout: timeout, what: "the writers of a FIFO to close it") {
            readAll(fd)
        } unblock: {}
    }
}

private func readAll(_ fd: Int32) -> [UInt8] {
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

/// A wait that did not end: the test is broken or the code under test hangs.
private struct WaitTimedOut: Error, CustomStringConvertible {
    let description: String
}

/// Runs a blocking read on its own thread; fails after `timeout` seconds (a
/// guard against a broken test, not a timing assertion).
private func blockingRead(
    timeout: TimeInterval, what: String, _ body: @escaping @Sendable () -> [UInt8], unblock: @escaping @Sendable () -> Void
) async throws -> [UInt8] {
    let result = NIOLockedValueBox<[UInt8]?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        let bytes = body()
        result.withLockedValue { $0 = bytes }
        done.signal()
    }
    thread.start()
    let finished = await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: done.wait(timeout: .now() + timeout) == .success) }
    }
    guard finished else {
        unblock()
        throw WaitTimedOut(description: "timed out after \(timeout) s waiting for \(what)")
    }
    return result.withLockedValue { $0 ?? [] }
}
