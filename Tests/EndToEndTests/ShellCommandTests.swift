import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `nextpage next`, `all`, `reset` and `schema` run as a shell would run
/// them: a process per command, the cursor kept in a state file between
/// them (docs/cli.md).
final class ShellCommandTests: EndToEndTestCase {
    /// Pages `p1`…`pN` of `size` items each, ids counting from 1, walked with the cursor strategy.
    static func writePages(_ count: Int, size: Int, in directory: String, dir: String = "pages") throws {
        for page in 1...count {
            let items = (1...size).map { #"{"id":\#((page - 1) * size + $0)}"# }.joined(separator: ",")
            let next = page < count ? "\"p\(page + 1)\"" : "null"
            try writeFile("\(directory)/\(dir)/\(page == 1 ? "first" : "p\(page)").json", #"{"items":[\#(items)],"next_cursor":\#(next)}"#)
        }
    }

    func testNextPrintsOnePageARunAndResumesFromTheStateFile() throws {
        let directory = try temporaryDirectory()
        var seen: [Int64] = []
        for page in 1...10 {
            let result = try runNextpage(["next", "demo", "--state", "demo.state"], in: directory)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.lines.count, 1, "one page, one line")
            let reply = try JSONValue.parse(result.stdout)
            XCTAssertEqual(reply["page"], .int(Int64(page)))
            XCTAssertEqual(reply["hasNext"], .bool(page < 10))
            seen += reply["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
            let state = try JSONValue.parse(String(contentsOfFile: directory + "/demo.state", encoding: .utf8))
            XCTAssertEqual(state["collections"]?["demo"]?["count"], .int(Int64(page * 25)))
            XCTAssertEqual(state["collections"]?["demo"]?["pages"], .int(Int64(page)))
        }
        XCTAssertEqual(seen, Array(1...250))

        // At the end: nothing loaded, exit status 1, so `while nextpage next ...; do` loops end.
        let end = try runNextpage(["next", "demo", "--state", "demo.state"], in: directory)
        XCTAssertEqual(end.status, 1)
        try expectMatch(JSONValue.parse(end.stdout), #"{"collection":"demo","items":[],"page":10,"hasNext":false,"lastId":null,"count":250}"#)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).sorted(), ["demo.state"], "no temporary file left")
    }

    func testAnUnwritableStdoutIsAnErrorNotTheEnd() throws {
        // A full disk exited 1 with no message: a `while nextpage next` loop read it as "at the end".
        let directory = try temporaryDirectory()
        for command in [["next", "demo"], ["all", "demo"]] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try nextpageBinary())
            process.arguments = command + ["--state", "s.state"]
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
            let stderr = Pipe()
            process.standardError = stderr
            try process.run()
            let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 5, command.joined(separator: " "))
            XCTAssertTrue(message.contains("nextpage: cannot write to stdout: No space left on device"), message)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/s.state"), "nothing unprinted is saved")
        }
    }

    func testMaxEmptyPagesStopsANextLoopAcrossRuns() throws {
        // Each run counted empty pages from 0, so a source of endless empty pages kept the loop going.
        let directory = try temporaryDirectory()
        try writeFile(directory + "/pages/first.json", #"{"items": [], "next_cursor": "1"}"#)
        for page in 1...5 { try writeFile(directory + "/pages/\(page).json", #"{"items": [], "next_cursor": "\#(page + 1)"}"#) }
        try writeFile(directory + "/nextpage.json", #"{"collections": {"e": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "cursor"}, "maxEmptyPages": 2}}}"#)
        var runs = 0
        while runs < 6 {
            let result = try runNextpage(["next", "e", "--state", "e.state"], in: directory)
            runs += 1
            XCTAssertEqual(result.status, 0, result.stderr)
            let reply = try JSONValue.parse(result.stdout)
            if reply["hasNext"] == .bool(false) {
                XCTAssertEqual(reply["page"], .int(3))
                XCTAssertEqual(reply["lastError"], .string("stopped after 3 empty pages in a row"))
                break
            }
        }
        XCTAssertEqual(runs, 3, "the third empty page in a row stops the collection, as in one process")
        XCTAssertEqual(try runNextpage(["next", "e", "--state", "e.state"], in: directory).status, 1)
    }

    func testNextFetchesOnlyThePageItPrintsEvenWithPrefetch() throws {
        let directory = try temporaryDirectory()
        // Each run of the source logs its cursor first, then answers at once.
        try writeFile(directory + "/pages.sh", #"""
            #!/bin/sh
            echo "[$1]" >> calls.log
            case "$1" in
              "") echo '{"items": [1], "next_cursor": "c1"}' ;;
              c1) echo '{"items": [2], "next_cursor": "c2"}' ;;
              *) echo '{"items": [3], "next_cursor": null}' ;;
            esac
            """#)
        XCTAssertEqual(chmod(directory + "/pages.sh", 0o755), 0)
        try writeFile(directory + "/nextpage.json", #"""
            {"collections": {"c": {"source": {"type": "command", "argv": ["./pages.sh", "{cursor}"]},
                                   "paging": {"strategy": "cursor"}, "prefetch": 1}}}
            """#)
        for page in 1...3 {
            let result = try runNextpage(["next", "c", "--state", "c.state"], in: directory)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try JSONValue.parse(result.stdout)["items"], .array([.int(Int64(page))]))
        }
        // A page fetched ahead by a run that then exits would be fetched again by the next run.
        let calls = try String(contentsOfFile: directory + "/calls.log", encoding: .utf8)
        XCTAssertEqual(calls.split(separator: "\n"), ["[]", "[c1]", "[c2]"])
    }

    func testAllPrintsEveryItemOnceAsCompactLinesAndHonoursLimits() throws {
        let directory = try temporaryDirectory()
        let whole = try runNextpage(["all", "demo"], in: directory)
        XCTAssertEqual(whole.status, 0, whole.stderr)
        XCTAssertEqual(try ids(ofLines: whole.lines), Array(1...250))
        XCTAssertEqual(whole.lines[0], #"{"id":1,"name":"blue heron 1","page":1,"tags":["blue","odd"]}"#)
        XCTAssertEqual(whole.stderr, "", "no progress line when stderr is not a terminal")
        // Without a state file, --max-items N prints N items, even within a page.
        let thirty = try runNextpage(["all", "demo", "--max-items", "30"], in: directory)
        XCTAssertEqual(thirty.status, 0, thirty.stderr)
        XCTAssertEqual(try ids(ofLines: thirty.lines), Array(1...30))

        let two = try runNextpage(["all", "demo", "--max-pages", "2", "--state", "s.json"], in: directory)
        XCTAssertEqual(two.status, 0, two.stderr)
        XCTAssertEqual(try ids(ofLines: two.lines), Array(1...50))
        let some = try runNextpage(["all", "demo", "--max-items", "30", "--state", "s.json"], in: directory)
        XCTAssertEqual(try ids(ofLines: some.lines), Array(51...100), "with --state, the page that reaches --max-items is printed whole")
        let rest = try runNextpage(["all", "demo", "--state", "s.json"], in: directory)
        XCTAssertEqual(try ids(ofLines: rest.lines), Array(101...250))
        let none = try runNextpage(["all", "demo", "--state", "s.json"], in: directory)
        XCTAssertEqual(none.status, 0)
        XCTAssertEqual(none.stdout, "")

        let reset = try runNextpage(["reset", "demo", "--state", "s.json"], in: directory)
        XCTAssertEqual(reset.status, 0, reset.stderr)
        try expectMatch(JSONValue.parse(reset.stdout), LifecycleTests.freshDemo)
        let again = try runNextpage(["all", "demo", "--max-pages", "1", "--state", "s.json"], in: directory)
        XCTAssertEqual(try ids(ofLines: again.lines), Array(1...25), "reset forgot the saved cursor")
    }

    func testAConfigWithAnUnsetVariableChecksAndServesTheRest() throws {
        // docs/config.md's command example names ${env:API_TOKEN}; where it is not
        // set, the file is still valid and the other collections are served.
        let directory = try temporaryDirectory()
        try writeFile(directory + "/nextpage.json", #"""
            {"collections": {
              "friends": {"source": {"type": "http", "url": "https://api.example.com/friends", "headers": {"Authorization": "Bearer ${env:NEXTPAGE_TEST_UNSET_TOKEN}"}},
                          "paging": {"strategy": "lastId", "param": "since_id", "items": "/items", "id": "/id"}},
              "c": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "cursor"}}}}
            """#)
        try writeFile(directory + "/pages/first.json", #"{"items": [1], "next_cursor": null}"#)
        let check = try runNextpage(["check-config", "nextpage.json"], in: directory)
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stdout, "nextpage.json: ok, 2 collection(s): friends, c\n")
        XCTAssert(check.stderr.contains("collection 'friends' cannot fetch here: environment variable NEXTPAGE_TEST_UNSET_TOKEN is not set"), check.stderr)

        let reason = "environment variable NEXTPAGE_TEST_UNSET_TOKEN is not set (for ${env:NEXTPAGE_TEST_UNSET_TOKEN} in collections.friends.source.headers.Authorization)"
        let server = try startServer(in: directory)
        try server.request("1", "loadNext", #"{"collection": "friends"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"{"code":-32002,"message":"Upstream failed: \#(reason)","data":{"collection":"friends","attempts":0,"retryable":false,"message":"\#(reason)"}}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[1],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.request("3", "status", #"{"collection": "friends"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"friends","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":"\#(reason)"}"#))
        try server.finish()
    }

    func testAllPrintsItemsAsTheSourceSentThem() throws {
        // Numbers, escapes and key order as written, only whitespace removed,
        // as a loadNext reply has them.
        let directory = try temporaryDirectory()
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))
        try writeFile(directory + "/pages/first.json", #"{"items": [2.50, 1e3, -0.0, "caf\u00e9 \"x\"", {"b" : [1, 2], "a": null}, [ ]], "next_cursor": null}"#)
        let all = try runNextpage(["all", "c"], in: directory)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(all.lines, ["2.50", "1e3", "-0.0", #""caf\u00e9 \"x\"""#, #"{"b":[1,2],"a":null}"#, "[]"])
        let next = try runNextpage(["next", "c"], in: directory)
        XCTAssert(next.stdout.contains(#""items":[2.50,1e3,-0.0,"caf\u00e9 \"x\"",{"b":[1,2],"a":null},[]]"#), next.stdout)
    }

    func testShellCommandsAndTheServerShareTheStateFile() throws {
        let directory = try temporaryDirectory()
        try Self.writePages(4, size: 2, in: directory)
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))
        let first = try runNextpage(["next", "c", "--state", "shared.state"], in: directory)
        XCTAssertEqual(first.status, 0, first.stderr)

        let server = try startServer(arguments: ["--state", "shared.state"], in: directory)
        try server.request("1", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"p2","count":2,"pages":1,"lastError":null}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":true,"lastId":"p3","count":4}"#))
        try server.request("3", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"id":3},{"id":4}],"count":4,"offset":2}"#))
        try server.finish()

        let rest = try runNextpage(["all", "c", "--state", "shared.state"], in: directory)
        XCTAssertEqual(try ids(ofLines: rest.lines), [5, 6, 7, 8])
    }

    func testErrorsGoToStderrWithTheirOwnExitStatus() throws {
        let directory = try temporaryDirectory()
        try Self.writePages(2, size: 1, in: directory)
        try writeFile(directory + "/pages/p2.json", "{\"items\": [") // page 2 is not JSON
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))

        let unknown = try runNextpage(["next", "nope"], in: directory)
        XCTAssertEqual(unknown.status, 2)
        XCTAssertEqual(unknown.stdout, "")
        XCTAssertEqual(unknown.stderr, "nextpage: unknown collection 'nope' (defined: c)\n")

        let broken = try runNextpage(["all", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(broken.status, 4, "the source failed")
        XCTAssertEqual(broken.lines, [#"{"id":1}"#], "the page before the failure is printed")
        XCTAssert(broken.stderr.hasPrefix("nextpage: collection 'c': Upstream page not understood"), broken.stderr)
        let saved = try String(contentsOfFile: directory + "/s.json", encoding: .utf8)
        try expectMatch(JSONValue.parse(saved), #"{"version":1,"collections":{"c":{"hasNext":true,"lastId":"p2","count":1,"pages":1,"lastError":"<string>"}}}"#)

        try writeFile(directory + "/corrupt.state", "{\"version\": 1, \"collections\": {\"c\": {\"hasNext\": \"yes\"}}}")
        let corrupt = try runNextpage(["next", "c", "--state", "corrupt.state"], in: directory)
        XCTAssertEqual(corrupt.status, 3)
        XCTAssertEqual(corrupt.stdout, "")
        XCTAssertEqual(
            corrupt.stderr,
            "nextpage: state file corrupt.state: collections.c.hasNext: expected true or false (fix the file, or delete it to start over)\n")
        XCTAssertEqual(try String(contentsOfFile: directory + "/corrupt.state", encoding: .utf8),
                       "{\"version\": 1, \"collections\": {\"c\": {\"hasNext\": \"yes\"}}}", "a corrupt state file is left as it is")

        try writeFile(directory + "/notjson.state", "{\"version\": 1,")
        let notJSON = try runNextpage(["all", "c", "--state", "notjson.state"], in: directory)
        XCTAssertEqual(notJSON.status, 3)
        XCTAssert(notJSON.stderr.hasPrefix("nextpage: state file notjson.state: not JSON (line 1, column"), notJSON.stderr)

        let nowhere = try runNextpage(["next", "c", "--state", "no/such/folder/s.json"], in: directory)
        XCTAssertEqual(nowhere.status, 3)
        XCTAssert(nowhere.stderr.contains("cannot write in its folder 'no/such/folder'"), nowhere.stderr)

        try writeFile(directory + "/bad.json", #"{"collections": {"c": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "sideways"}}}}"#)
        let badConfig = try runNextpage(["next", "c", "--config", "bad.json"], in: directory)
        XCTAssertEqual(badConfig.status, 2)
        XCTAssert(badConfig.stderr.contains("collections.c.paging.strategy: expected one of"), badConfig.stderr)

        let usage = try runNextpage(["all", "c", "--max-items", "0"], in: directory)
        XCTAssertEqual(usage.status, 64)
        XCTAssert(usage.stderr.hasPrefix("nextpage: --max-items must be at least 1\nUsage: nextpage all"), usage.stderr)

        // Log levels by name in any case, with the short names other tools use.
        for level in ["warn", "WARNING", "err", "debug"] {
            let run = try runNextpage(["next", "c", "--log-level", level], in: directory)
            XCTAssertEqual(run.status, 0, "--log-level \(level): \(run.stderr)")
        }
        let noLevel = try runNextpage(["next", "c", "--log-level", "loud"], in: directory)
        XCTAssertEqual(noLevel.status, 64)
        XCTAssert(noLevel.stderr.contains("'loud' is invalid for '--log-level"), noLevel.stderr)

        let serverState = try runNextpage(["--state", "corrupt.state"], in: directory, stdin: "")
        XCTAssertEqual(serverState.status, 3, "a server refuses to start with a corrupt state file")
        XCTAssertEqual(serverState.stdout, "")
    }

    func testSchemaPrintsEachSchemaAsInSchemasFolder() throws {
        let directory = try temporaryDirectory()
        for (name, file) in [("openrpc", "openrpc.json"), ("config", "config.schema.json"), ("transcript", "transcript.schema.json")] {
            let result = try runNextpage(["schema", name], in: directory)
            XCTAssertEqual(result.status, 0, result.stderr)
            let expected = try String(contentsOfFile: "\(repositoryRoot)/Schemas/\(file)", encoding: .utf8)
            XCTAssertEqual(try JSONValue.parse(result.stdout), try JSONValue.parse(expected), name)
        }
        let unknown = try runNextpage(["schema", "nope"], in: directory)
        XCTAssertEqual(unknown.status, 64)
        XCTAssert(unknown.stderr.hasPrefix("nextpage: The value 'nope' is invalid"), unknown.stderr)
    }
}

/// The progress line of `nextpage all`, which appears only on a terminal.
final class ProgressLineTests: EndToEndTestCase {
    func testAllShowsItemsPagesAndRateWhenStderrIsATerminal() throws {
        let directory = try temporaryDirectory()
        // grantpt, unlockpt and ptsname are not imported into Swift; look them up.
        typealias PTFunction = @convention(c) (Int32) -> Int32
        typealias NameFunction = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            guard let found = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
                throw HarnessError(description: "\(name) is not available")
            }
            return unsafeBitCast(found, to: type)
        }
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0, try symbol("grantpt", as: PTFunction.self)(master) == 0,
              try symbol("unlockpt", as: PTFunction.self)(master) == 0,
              let name = try symbol("ptsname", as: NameFunction.self)(master) else {
            throw HarnessError(description: "no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        defer { close(master) }
        let terminal = try XCTUnwrap(FileHandle(forWritingAtPath: String(cString: name)))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try nextpageBinary())
        process.arguments = ["all", "demo", "--max-pages", "3"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = terminal
        try process.run()
        try terminal.close()
        let items = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(String(decoding: items, as: UTF8.self).split(separator: "\n").count, 75, "items still go to stdout")

        // Everything the terminal received: three updates of one line, then a newline.
        var shown: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var waiter = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&waiter, 1, 5000) == 1 else { break }
            let n = read(master, &buffer, buffer.count)
            if n <= 0 { break }
            shown += buffer[0..<n]
            if shown.last == UInt8(ascii: "\n") { break }
        }
        let text = String(decoding: shown, as: UTF8.self)
        XCTAssertEqual(shown.last, UInt8(ascii: "\n"), "the line is ended: \(text.debugDescription)")
        // A terminal shows "\n" as "\r\n"; each update starts with "\r" and clears the line.
        let updates = shown.split(separator: UInt8(ascii: "\r"), omittingEmptySubsequences: true)
            .map { String(decoding: $0, as: UTF8.self) }.filter { $0 != "\n" }
        XCTAssertEqual(updates.count, 3, text.debugDescription)
        for (index, update) in updates.enumerated() {
            let pattern = "^\u{1B}\\[Kdemo: \((index + 1) * 25) items, \(index + 1) pages, [0-9]+ items/s$"
            XCTAssertNotNil(update.range(of: pattern, options: .regularExpression), update.debugDescription)
        }
    }
}
