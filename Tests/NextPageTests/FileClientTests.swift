import Foundation
import Jansson
@testable import NextPage
import XCTest

final class FileClientTests: XCTestCase {
    private var base = ""

    override func setUpWithError() throws {
        base = NSTemporaryDirectory() + "nextpage-fileclient-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base + "/pages", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: base)
    }

    private func write(_ path: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: base + "/" + path))
    }

    private func request(_ cursor: Cursor?, first: Bool = false) -> PageRequest {
        PageRequest(cursor: cursor, isFirstPage: first, paging: Paging(strategy: .cursor), options: CollectionOptions())
    }

    /// Reverses the percent-encoding.
    private func decodePercent(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            out.append(value)
        }
        return out
    }

    // MARK: Encoding

    func testEncodeExamples() {
        XCTAssertEqual(FileClient.encode(cursor: "../x"), "%2E%2E%2Fx")
        XCTAssertEqual(FileClient.encode(cursor: "abc-XYZ_019"), "abc-XYZ_019")
        XCTAssertEqual(FileClient.encode(cursor: "a b+c"), "a%20b%2Bc")
        XCTAssertEqual(FileClient.encode(cursor: "%"), "%25")
        XCTAssertEqual(FileClient.encode(cursor: "~."), "%7E%2E")
        XCTAssertEqual(FileClient.encode(cursor: "\u{0}"), "%00")
        XCTAssertEqual(FileClient.encode(cursor: "é"), "%C3%A9")
        XCTAssertEqual(FileClient.encode(cursor: "a\\b"), "a%5Cb")
    }

    func testEncodedCursorsNeverContainSlashOrStartWithDot() {
        var strings = ["/", ".", "..", "...", "./", "../", "/etc/passwd", "%", "%2F", "%2E%2E%2F", "\u{0}", "a\u{0}/b",
                       "é", "日本/語", "😀/..", "\\..\\", ".hidden", " .", "\n", String(repeating: "../", count: 10_000),
                       String(repeating: "é", count: 5000)]
        var generator = SplitMix64(state: 0x6E65_7874_7061_6765)
        let pool: [ClosedRange<UInt32>] = [0...0x7F, 0x2E...0x2F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
        for _ in 0..<2000 {
            let length = Int.random(in: 0...40, using: &generator)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<length {
                let range = pool.randomElement(using: &generator)!
                if let scalar = Unicode.Scalar(UInt32.random(in: range, using: &generator)) { scalars.append(scalar) }
            }
            strings.append(String(scalars))
        }
        // Arbitrary bytes, decoded leniently as the server would see them.
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 1...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            strings.append(String(decoding: bytes, as: UTF8.self))
        }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_%".utf8)
        for string in strings {
            let encoded = FileClient.encode(cursor: string)
            XCTAssertFalse(encoded.contains("/"), string.debugDescription)
            XCTAssertFalse(encoded.hasPrefix("."), string.debugDescription)
            XCTAssertFalse(encoded.contains("."), string.debugDescription)
            XCTAssertTrue(encoded.utf8.allSatisfy(allowed.contains), string.debugDescription)
            XCTAssertEqual(decodePercent(encoded), Array(string.utf8), "encoding is reversible: \(string.debugDescription)")
            let name = FileClient.fileName(for: request(.string(string)))
            XCTAssertFalse(name.contains("/"), string.debugDescription)
            XCTAssertTrue(name.hasSuffix(".json"))
        }
    }

    func testFileNames() {
        XCTAssertEqual(FileClient.fileName(for: request(nil, first: true)), "first.json")
        XCTAssertEqual(FileClient.fileName(for: request(.string("c2"))), "c2.json")
        XCTAssertEqual(FileClient.fileName(for: request(.integer(3))), "3.json", "page and offset cursors are numbers")
        XCTAssertEqual(FileClient.fileName(for: request(.string("../secret"))), "%2E%2E%2Fsecret.json")
        // The first page of a page-strategy source is first.json even though it carries a cursor.
        let firstPage = PageRequest(cursor: .integer(1), isFirstPage: true, paging: Paging(strategy: .page), options: CollectionOptions())
        XCTAssertEqual(FileClient.fileName(for: firstPage), "first.json")
    }

    // MARK: Reading

    func testFetchReadsFirstAndEncodedCursorFiles() async throws {
        try write("pages/first.json", #"{"items": [1], "next_cursor": "c 2"}"#)
        try write("pages/c%202.json", #"{"items": [2], "next_cursor": null}"#)
        let client = FileClient(directory: base + "/pages")
        let first = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(String(decoding: first.body, as: UTF8.self), #"{"items": [1], "next_cursor": "c 2"}"#)
        let second = try await client.fetch(request(.string("c 2")))
        XCTAssertEqual(String(decoding: second.body, as: UTF8.self), #"{"items": [2], "next_cursor": null}"#)
        // A trailing slash on the directory is fine.
        let slashed = try await FileClient(directory: base + "/pages/").fetch(request(nil, first: true))
        XCTAssertEqual(slashed.body, first.body)
    }

    func testHostileCursorStaysInTheDirectory() async throws {
        try write("secret.json", #"{"items": ["SECRET"]}"#)
        let client = FileClient(directory: base + "/pages")
        do {
            let response = try await client.fetch(request(.string("../secret")))
            XCTFail("read a file outside the directory: \(String(decoding: response.body, as: UTF8.self))")
        } catch LoadError.upstream(let failure) {
            XCTAssertTrue(failure.message.contains("%2E%2E%2Fsecret.json"), failure.message)
            XCTAssertFalse(failure.retryable)
        }
        // The encoded name is a file inside the directory like any other.
        try write("pages/%2E%2E%2Fsecret.json", #"{"items": ["inside"]}"#)
        let inside = try await client.fetch(request(.string("../secret")))
        XCTAssertEqual(String(decoding: inside.body, as: UTF8.self), #"{"items": ["inside"]}"#)
    }

    func testMissingFileIsAnUpstreamErrorNamingTheFile() async throws {
        let client = FileClient(directory: base + "/pages")
        do {
            _ = try await client.fetch(request(.string("nope")))
            XCTFail("read a missing file")
        } catch LoadError.upstream(let failure) {
            XCTAssertTrue(failure.message.contains("nope.json"), failure.message)
        }
        do {
            _ = try await client.fetch(request(nil, first: true))
            XCTFail("read a missing first page")
        } catch LoadError.upstream(let failure) {
            XCTAssertTrue(failure.message.contains("first.json"), failure.message)
        }
    }

    func testADirectoryIsNotAPage() async throws {
        try FileManager.default.createDirectory(atPath: base + "/pages/d.json", withIntermediateDirectories: true)
        do {
            _ = try await FileClient(directory: base + "/pages").fetch(request(.string("d")))
            XCTFail("read a directory as a page")
        } catch LoadError.upstream(let failure) {
            XCTAssertTrue(failure.message.contains("d.json"), failure.message)
        }
    }

    func testLargeAndEmptyFilesAreReadWhole() async throws {
        let big = "[" + (0..<50_000).map(String.init).joined(separator: ",") + "]"
        try write("pages/big.json", big)
        try write("pages/empty.json", "")
        let client = FileClient(directory: base + "/pages")
        let response = try await client.fetch(request(.string("big")))
        XCTAssertEqual(response.body.count, big.utf8.count)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), big)
        let empty = try await client.fetch(request(.string("empty")))
        XCTAssertEqual(empty.body, [])
    }

    /// The upstream failure of fetching `cursor`'s page, or a test failure.
    private func fetchFailure(_ client: FileClient, _ cursor: Cursor?, first: Bool = false) async -> UpstreamFailure? {
        do {
            let response = try await client.fetch(request(cursor, first: first))
            XCTFail("read \(response.body.count) bytes, over maxBodyBytes \(client.maxBodyBytes)")
        } catch LoadError.upstream(let failure) {
            return failure
        } catch {
            XCTFail("unexpected \(error)")
        }
        return nil
    }

    func testMaxBodyBytesBoundsAPageFile() async throws {
        let page = #"{"items": [1, 2, 3]}"#
        try write("pages/exact.json", page)
        try write("pages/over.json", page + " ")
        let client = FileClient(directory: base + "/pages", maxBodyBytes: page.utf8.count)
        let exact = try await client.fetch(request(.string("exact")))
        XCTAssertEqual(String(decoding: exact.body, as: UTF8.self), page, "a page of exactly maxBodyBytes is read")
        let failure = await fetchFailure(client, .string("over"))
        XCTAssertEqual(
            failure?.message, "page file 'over.json' in '\(base)/pages' is larger than maxBodyBytes (\(page.utf8.count) bytes)")
        XCTAssertEqual(failure?.retryable, false)
        XCTAssertEqual(FileClient(directory: base).maxBodyBytes, 64 << 20, "the default is that of http and command sources")
    }

    func testAnEndlessDeviceAsAPageStopsAtMaxBodyBytes() async throws {
        // /dev/zero never ends: without the limit the read would take all memory.
        XCTAssertEqual(symlink("/dev/zero", base + "/pages/first.json"), 0)
        let failure = await fetchFailure(FileClient(directory: base + "/pages", maxBodyBytes: 100_000), nil, first: true)
        XCTAssertEqual(failure?.message.contains("'first.json'"), true, failure?.message ?? "")
        XCTAssertEqual(failure?.message.contains("larger than maxBodyBytes (100000 bytes)"), true, failure?.message ?? "")
    }

    func testAFifoPageOverMaxBodyBytesFails() throws {
        let fd = try openFifoPage("many.json")
        try writeToOpenFifo(base + "/pages/many.json", ["0123456789", "0123456789", "x"])
        guard case .failure(let error) = FileClient.readStream(fd, limit: 20) else { return XCTFail("read 21 bytes with a limit of 20") }
        XCTAssertEqual(error.code, SystemError.tooLarge)
        let again = try openFifoPage("twenty.json")
        try writeToOpenFifo(base + "/pages/twenty.json", ["0123456789", "0123456789"])
        guard case .success(let bytes) = FileClient.readStream(again, limit: 20) else { return XCTFail("20 bytes are within a limit of 20") }
        XCTAssertEqual(bytes.count, 20)
    }

    // MARK: FIFOs

    /// Opens the FIFO for writing (a reader has it open, so this does not
    /// wait), writes `chunks` one `write` each, and closes it.
    private func writeToOpenFifo(_ path: String, _ chunks: [String]) throws {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        for chunk in chunks {
            let bytes = Array(chunk.utf8)
            XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }, bytes.count)
        }
    }

    private struct NotAFifo: Error {}

    private func openFifoPage(_ name: String) throws -> Int32 {
        let path = base + "/pages/" + name
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        guard case .stream(let fd) = FileClient.openPage(path) else { throw NotAFifo() }
        return fd
    }

    func testAWriterArrivingRightAfterTheFifoIsOpenedIsRead() throws {
        // The writer opens, writes its whole page and leaves between the
        // reader's open and its first read: the page is in the opened pipe
        // and must be read from it, not lost to a second open.
        let fd = try openFifoPage("w.json")
        try writeToOpenFifo(base + "/pages/w.json", [#"{"items": [1, 2]"#, #", "next_cursor": null}"#])
        guard case .success(let body) = FileClient.readStream(fd) else { return XCTFail("read failed") }
        XCTAssertEqual(String(decoding: body, as: UTF8.self), #"{"items": [1, 2], "next_cursor": null}"#)
    }

    func testAFifoIsReadUntilItsWriterCloses() throws {
        let fd = try openFifoPage("slow.json")
        let result = ReadResult()
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            result.value = FileClient.readStream(fd)
            finished.signal()
        }
        // Many writes, some larger than a pipe's buffer: the reader keeps
        // reading until end of file, whatever arrives between its waits.
        let chunks = (0..<40).map { String(repeating: "\($0 % 10)", count: 1 + $0 * 2000) }
        let writer = open(base + "/pages/slow.json", O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(writer, 0)
        for chunk in chunks {
            let bytes = Array(chunk.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(writer, $0.baseAddress! + offset, bytes.count - offset) }
                XCTAssertGreaterThan(n, 0)
                if n <= 0 { break }
                offset += n
            }
        }
        close(writer)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "the reader never saw end of file")
        guard case .success(let body)? = result.value else { return XCTFail("read failed") }
        XCTAssertEqual(String(decoding: body, as: UTF8.self), chunks.joined())
    }

    func testAWriterThatWritesNothingGivesAnEmptyPage() async throws {
        let path = base + "/pages/none.json"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        // The writer opens (waiting for the client's open), then closes.
        Thread.detachNewThread {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            if fd >= 0 { close(fd) }
        }
        let response = try await FileClient(directory: base + "/pages").fetch(request(.string("none")))
        XCTAssertEqual(response.body, [])
    }

    func testAStopSignalEndsTheWaitForAWriter() throws {
        let fd = try openFifoPage("never.json")
        let stop = try XCTUnwrap(StopSignal())
        stop.signal()
        guard case .failure(let error) = FileClient.readStream(fd, stop: stop) else { return XCTFail("read without a writer") }
        XCTAssertEqual(error.code, ECANCELED)
    }

    func testAStopSignalEndsAReadThatNeverRunsDry() throws {
        _ = signal(SIGPIPE, SIG_IGN)
        let fd = try openFifoPage("busy.json")
        let path = base + "/pages/busy.json"
        let writer = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(writer, 0)
        _ = fcntl(writer, F_SETFL, 0)  // blocking from here on
        // The writer writes until the reader is gone (or the test gives up).
        let progress = WriterProgress()
        let wrote = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 1 << 16)
            var total = 0
            while !progress.stopped {
                let n = chunk.withUnsafeBytes { Glibc.write(writer, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
                total += n
                if total >= 1 << 20 && total - n < 1 << 20 { wrote.signal() }
            }
            close(writer)
        }
        let stop = try XCTUnwrap(StopSignal())
        let result = ReadResult()
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            result.value = FileClient.readStream(fd, stop: stop)
            finished.signal()
        }
        XCTAssertEqual(wrote.wait(timeout: .now() + 20), .success, "the reader did not take a megabyte")
        stop.signal()
        let ended = finished.wait(timeout: .now() + 20)
        progress.stopped = true
        XCTAssertEqual(ended, .success, "the read went on while the writer kept writing")
        if ended == .timedOut { _ = finished.wait(timeout: .now() + 20) }
        guard case .failure(let error)? = result.value else { return XCTFail("the read ended with a page") }
        XCTAssertEqual(error.code, ECANCELED)
    }

    func testCancellingAFetchWaitingOnAFifoClosesIt() async throws {
        let path = base + "/pages/wait.json"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let client = FileClient(directory: base + "/pages")
        let page = request(.string("wait"))
        let fetch = Task { try await client.fetch(page) }
        // A writer that opens without waiting succeeds once the fetch holds
        // the FIFO open; it stays open, writing nothing, so the fetch waits.
        var writer: Int32 = -1
        for _ in 0..<10_000 where writer < 0 {
            writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        }
        guard writer >= 0 else {
            fetch.cancel()
            return XCTFail("the fetch never opened the FIFO")
        }
        // Should the cancellation not end the wait, the writer is closed after
        // a while (end of file for the read) so that the test ends anyway.
        let heldWriter = writer
        let gaveUp = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if finished.wait(timeout: .now() + 20) == .timedOut {
                close(heldWriter)
                gaveUp.signal()
            } else {
                close(heldWriter)
            }
        }
        fetch.cancel()
        do {
            _ = try await fetch.value
            XCTFail("a cancelled fetch returned a page")
        } catch LoadError.cancelled {
        }
        finished.signal()
        XCTAssertEqual(gaveUp.wait(timeout: .now()), .timedOut, "the fetch ended only when its writer left")
        // Nobody reads the FIFO any more: a page written now waits for the next fetch.
        let late = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        let lateError = errno
        XCTAssertEqual(late, -1)
        XCTAssertEqual(lateError, ENXIO)
        if late >= 0 { close(late) }
    }

    func testWalkingADirectoryWithAPagedCollection() async throws {
        try write("pages/first.json", #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "p2"}"#)
        try write("pages/p2.json", #"{"items": [{"id": 3}], "next_cursor": "p/3"}"#)
        try write("pages/p%2F3.json", #"{"items": [{"id": 4}], "next_cursor": null}"#)
        let collection = PagedCollection(name: "files", client: FileClient(directory: base + "/pages"), paging: Paging(strategy: .cursor))
        var all: [Int] = []
        var pages = 0
        while await collection.state.hasNext {
            let result = try await collection.loadNext()
            all += itemIds(result.items)
            pages += 1
            XCTAssertLessThanOrEqual(pages, 3)
            if pages > 3 { break }
        }
        XCTAssertEqual(all, [1, 2, 3, 4])
        XCTAssertEqual(pages, 3)
    }

    func testBundledClientNamesPagesLikeFileClient() async throws {
        let client = BundledClient(pages: ["first.json": Array("[1]".utf8), "%2E%2E%2Fx.json": Array("[2]".utf8)])
        let first = try await client.fetch(request(nil, first: true))
        XCTAssertEqual(first.body, Array("[1]".utf8))
        let hostile = try await client.fetch(request(.string("../x")))
        XCTAssertEqual(hostile.body, Array("[2]".utf8))
        do {
            _ = try await client.fetch(request(.string("missing")))
            XCTFail("served a missing page")
        } catch LoadError.upstream(let failure) {
            XCTAssertTrue(failure.message.contains("missing.json"), failure.message)
        }
    }
}

/// The result of a read made on another thread, handed over by a semaphore.
private final class ReadResult: @unchecked Sendable {
    var value: Result<[UInt8], SystemError>?
}

/// Tells a writing thread to stop.
private final class WriterProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    var stopped: Bool {
        get { lock.withLock { flag } }
        set { lock.withLock { flag = newValue } }
    }
}
