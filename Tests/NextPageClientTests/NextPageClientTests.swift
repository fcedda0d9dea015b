import Foundation
import Jansson
import NextPageClient
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// NextPageClient against the real nextpage binary, each test in a fresh
/// folder (no nextpage.json: the built-in demo is served).
final class NextPageClientTests: XCTestCase {
    var folder = ""

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("nextpage-client-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    func spawn(_ arguments: [String] = [], executable: String? = nil, stderr: (@Sendable (String) -> Void)? = { _ in }) async throws -> NextPageClient {
        try await NextPageClient.spawn(
            executable: executable ?? nextpageBinary(), arguments: arguments, currentDirectory: folder, stderrHandler: stderr)
    }

    // MARK: Paging

    func testItemsYieldEveryDemoItemOnceInOrder() async throws {
        let client = try await spawn()
        XCTAssertEqual(client.serverVersion, try versionOfBinary())
        var ids: [Int64] = []
        for try await item in client.items("demo") { ids.append(item["id"]?.integer ?? -1) }
        XCTAssertEqual(ids, Array(1...250))
        let state = try await client.status("demo")
        XCTAssertEqual(state.count, 250)
        XCTAssertFalse(state.hasNext)
        let status = await client.close()
        XCTAssertEqual(status, 0)
    }

    func testPagesFollowTheCursorToTheEnd() async throws {
        let client = try await spawn()
        var pages: [Page] = []
        for try await page in client.pages("demo") { pages.append(page) }
        XCTAssertEqual(pages.map(\.page), Array(1...10))
        XCTAssertEqual(pages.map(\.hasNext), Array(repeating: true, count: 9) + [false])
        XCTAssertEqual(pages.first?.lastId?.string, "page-2")
        XCTAssertNil(pages.last?.lastId)
        var restarted = client.pages("demo", restart: true).makeAsyncIterator()
        let first = try await restarted.next()
        XCTAssertEqual(first?.items.first?["id"]?.integer, 1, "restart loads the first page again")
        await client.close()
    }

    func testTheTypedMethods() async throws {
        let client = try await spawn()
        let first = try await client.loadNext("demo")
        XCTAssertEqual(first.count, 25)
        let slice = try await client.itemSlice("demo", offset: 10, limit: 2)
        XCTAssertEqual(slice.items.map { $0["id"]?.integer }, [11, 12])
        XCTAssertEqual(slice.offset, 10)
        let resumed = try await client.load("demo", lastId: .string("page-3"))
        XCTAssertEqual(resumed.items.first?["id"]?.integer, 51, "the page after the cursor given")
        let fresh = try await client.reset("demo")
        XCTAssertEqual(fresh.count, 0)
        XCTAssertFalse(fresh.isLoading)
        let all = try await client.collections()
        XCTAssertEqual(all.map(\.collection), ["demo"])
        let definition = try JSON.parse(#"{"source": {"type": "file", "dir": "."}, "paging": {"strategy": "cursor"}}"#)
        let defined = try await client.define("copy", definition)
        XCTAssertEqual(defined.collection, "copy")
        await client.close()
    }

    func testConcurrentCallsOnOneCollectionGetSuccessivePages() async throws {
        let client = try await spawn()
        let pages = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 1...10 { group.addTask { try await client.loadNext("demo").page } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(pages.sorted(), Array(1...10), "each call its own page, none twice")
        await client.close()
    }

    func testLoadAllReportsPagesAndProgress() async throws {
        let client = try await spawn()
        let pages = Mutex<[Int]>([]), progress = Mutex<[String]>([]), seen = Mutex<[Int]>([])
        let stop = client.on("page") { params in seen.withLock { $0.append(Int(params["page"]?.integer ?? -1)) } }
        let result = try await client.loadAll(
            "demo", maxPages: 3, onPage: { page in pages.withLock { $0.append(page.page) } },
            onProgress: { value in progress.withLock { $0.append(value.kind) } })
        XCTAssertEqual(result.pages, 3)
        XCTAssertEqual(result.count, 75)
        XCTAssertEqual(result.lastId?.string, "page-4")
        XCTAssertEqual(pages.withLock { $0 }, [1, 2, 3])
        XCTAssertEqual(progress.withLock { $0 }, ["begin", "report", "report", "report", "end"])
        stop()
        _ = try await client.loadAll("demo", maxPages: 1)
        XCTAssertEqual(seen.withLock { $0 }, [1, 2, 3], "a handler that was stopped hears nothing more")
        await client.close()
    }

    // MARK: Errors

    func testErrorRepliesCarryTheirCodeAndData() async throws {
        let client = try await spawn()
        do {
            _ = try await client.status("nope")
            XCTFail("status of an unknown collection succeeded")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unknownCollection)
            XCTAssertEqual(error.code.rawValue, -32001)
            XCTAssertEqual(error.data?.compactString, #"{"collection":"nope","known":["demo"]}"#)
            XCTAssertEqual(error.method, "status")
        }
        await assertRPCError(.methodNotFound, field: nil) { _ = try await client.call("noSuchMethod") }
        await assertRPCError(.invalidParams, field: "limit") { _ = try await client.itemSlice("demo", limit: -1) }
        let bad = try JSON.parse(#"{"source": {"type": "file", "dir": "."}, "paging": {"strategy": "curser"}}"#)
        await assertRPCError(.invalidDefinition, field: "paging.strategy") { _ = try await client.define("x", bad) }
        let page = try await client.loadNext("demo")
        XCTAssertEqual(page.page, 1, "the server keeps serving")
        await client.close()
    }

    func testUpstreamErrorsCarryTheirData() async throws {
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/bad", withIntermediateDirectories: true)
        try #"{"items": [1,"#.write(toFile: folder + "/bad/first.json", atomically: true, encoding: .utf8)
        try #"""
            {"collections": {"missing": {"source": {"type": "file", "dir": "empty"}, "paging": {"strategy": "cursor"}},
                             "garbled": {"source": {"type": "file", "dir": "bad"}, "paging": {"strategy": "cursor"}}}}
            """#.write(toFile: folder + "/broken.json", atomically: true, encoding: .utf8)
        let client = try await spawn(["--config", folder + "/broken.json"])
        await assertRPCError(.upstreamFailed, field: nil) { _ = try await client.loadNext("missing") }
        do {
            _ = try await client.loadNext("garbled")
            XCTFail("a page that is not JSON was accepted")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .pageNotUnderstood)
            XCTAssertEqual(error.data?["collection"]?.string, "garbled")
            XCTAssertNotNil(error.data?["line"])
        }
        await client.close()
    }

    func testAProgramThatEchoesItsInputIsNotNextPage() async throws {
        do {
            _ = try await spawn(executable: "/bin/cat")
            XCTFail("/bin/cat was taken for nextpage")
        } catch let error as NextPageClientError {
            guard case .notNextPage(let what) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(what.hasPrefix("it sent a request"), what)
        }
    }

    func testAProgramThatExitsAtOnceIsReportedWithItsStatus() async throws {
        do {
            _ = try await spawn(executable: "/bin/true")
            XCTFail("/bin/true was taken for nextpage")
        } catch let error as NextPageClientError {
            XCTAssertEqual(error, .serverExited(status: 0, signal: nil, stderr: ""))
        }
    }

    func testAServerThatCannotStartShowsItsStderr() async throws {
        let lines = Mutex<[String]>([])
        do {
            _ = try await spawn(["--config", "missing.json"], stderr: { line in lines.withLock { $0.append(line) } })
            XCTFail("a server without its config started")
        } catch let error as NextPageClientError {
            guard case .serverExited(let status, _, let stderr) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(status, 2)
            XCTAssertTrue(stderr.contains("missing.json"), stderr)
        }
        XCTAssertTrue(lines.withLock { $0 }.contains { $0.hasPrefix("nextpage: config") })
    }

    func testAMissingExecutableSaysSo() async throws {
        do {
            _ = try await spawn(executable: folder + "/no-such-nextpage")
            XCTFail("a missing executable started")
        } catch let error as NextPageClientError {
            guard case .executableNotFound = error else { return XCTFail("\(error)") }
        }
        do {
            _ = try await spawn(executable: "no-such-nextpage-anywhere")
            XCTFail("a missing executable started")
        } catch let error as NextPageClientError {
            XCTAssertTrue(error.description.contains("on PATH"), error.description)
        }
    }

    // MARK: Cancellation and ending

    func testCancellingTheTaskCancelsTheRequest() async throws {
        let page = try BlockedPage(folder)
        let client = try await spawn(page.arguments)
        let call = Task { try await client.loadNext("c") }
        await page.waitForReader()
        call.cancel()
        do {
            _ = try await call.value
            XCTFail("a cancelled call returned a page")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .requestCancelled)
        }
        let state = try await client.status("c")
        XCTAssertFalse(state.isLoading)
        try page.release()
        var ids: [Int64] = []
        for try await item in client.items("c") { ids.append(item["id"]?.integer ?? -1) }
        XCTAssertEqual(ids, [1, 2, 3], "the cancelled call's page never landed")
        await client.close()
    }

    func testACallThatTimesOutIsCancelledOnTheServer() async throws {
        let page = try BlockedPage(folder)
        let client = try await spawn(page.arguments)
        do {
            _ = try await client.loadNext("c", timeout: .milliseconds(200))
            XCTFail("a call whose page never came returned")
        } catch let error as NextPageClientError {
            XCTAssertEqual(error, .timedOut(method: "loadNext", after: .milliseconds(200)))
        }
        try page.release()
        var ids: [Int64] = []
        for try await item in client.items("c") { ids.append(item["id"]?.integer ?? -1) }
        // Not cancelled, the call would have landed the first page and this would start at the second.
        XCTAssertEqual(ids, [1, 2, 3])
        await client.close()
    }

    func testAServerKilledMidCallFailsTheCallInsteadOfHanging() async throws {
        let page = try BlockedPage(folder)
        let client = try await spawn(page.arguments)
        let call = Task { try await client.loadNext("c") }
        await page.waitForReader()
        kill(try XCTUnwrap(client.processIdentifier), SIGKILL)
        do {
            _ = try await call.value
            XCTFail("a call to a killed server returned")
        } catch let error as NextPageClientError {
            XCTAssertEqual(error, .serverExited(status: nil, signal: SIGKILL, stderr: error.stderr))
            XCTAssertTrue(error.description.hasPrefix("nextpage was killed by signal 9"), error.description)
        }
        do {
            _ = try await client.status("c")
            XCTFail("a call after the server died returned")
        } catch let error as NextPageClientError {
            guard case .serverExited = error else { return XCTFail("\(error)") }
        }
        let status = await client.close()
        XCTAssertNil(status, "killed by a signal: no exit status")
    }

    func testCloseSendsShutdownAndExit() async throws {
        let client = try await spawn()
        _ = try await client.loadNext("demo")
        let status = await client.close()
        XCTAssertEqual(status, 0)
        do {
            _ = try await client.status("demo")
            XCTFail("a call after close returned")
        } catch let error as NextPageClientError {
            guard case .serverExited(0, nil, _) = error else { return XCTFail("\(error)") }
        }
    }

    func testAttachDrivesAProcessStartedElsewhere() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try nextpageBinary())
        process.arguments = ["--log-level", "warning"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let toServer = Pipe(), fromServer = Pipe()
        process.standardInput = toServer
        process.standardOutput = fromServer
        try process.run()
        let input = dup(toServer.fileHandleForWriting.fileDescriptor), output = dup(fromServer.fileHandleForReading.fileDescriptor)
        try toServer.fileHandleForWriting.close()
        try fromServer.fileHandleForReading.close()
        let client = try await NextPageClient.attach(input: input, output: output)
        let page = try await client.loadNext("demo")
        XCTAssertEqual(page.page, 1)
        let status = await client.close()
        XCTAssertNil(status, "the client did not start it")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }

    // MARK: Helpers

    func assertRPCError(
        _ code: RPCError.Code, field: String?, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("no error", file: file, line: line)
        } catch let error as RPCError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            if let field { XCTAssertEqual(error.data?["field"]?.string, field, file: file, line: line) }
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    func versionOfBinary() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try nextpageBinary())
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension NextPageClientError {
    /// The stderr of `serverExited` ("" for the other cases).
    var stderr: String {
        if case .serverExited(_, _, let stderr) = self { return stderr }
        return ""
    }
}
