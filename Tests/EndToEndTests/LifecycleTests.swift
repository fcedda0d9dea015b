import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// End of input, shutdown/exit, signals, stdout hygiene, `define`, the
/// collection errors, and stdin as a regular file (docs/methods.md).
final class LifecycleTests: EndToEndTestCase {
    static let freshDemo = JSONRPCSpecTests.freshDemo

    func testEndOfInputDrainsTheRequestInFlight() throws {
        let directory = try temporaryDirectory()
        let fifo = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, ConcurrencyTests.loading))
        server.closeInput()
        fifo.write(#"{"items": ["late"], "next_cursor": null}"#)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":{"collection":"c","items":["late"],"page":1,"hasNext":false,"lastId":null,"count":1}}"#)
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    func testShutdownThenExit() throws {
        let server = try startServer()
        try server.request("1", "shutdown")
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":null}"#)
        try server.request("2", "status", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        try server.request("3", "loadNext", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        // A second shutdown is a later request too.
        try server.request("4", "shutdown")
        try expectMatch(server.reply("4"), #"{"jsonrpc":"2.0","id":4,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        // `exit` ends the process although stdin is still open.
        try server.notify("exit")
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    func testNotificationMethodsSentWithAnIdAreAnswered() throws {
        let server = try startServer()
        // JSON-RPC answers every request; these methods are notifications
        // in docs/methods.md, and sent with an id they still do their work.
        try server.request("1", "initialized", "{}")
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":null}"#)
        try server.request("2", "$/cancelRequest", #"{"id": 99}"#)
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"result":null}"#)
        try server.request("3", "shutdown")
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"result":null}"#)
        try server.request("4", "exit")
        try expectMatch(server.reply("4"), #"{"jsonrpc":"2.0","id":4,"result":null}"#)
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    /// After a reply, `signal` ends an idle server with status 0.
    private func expectSignalWhileIdleExitsZero(_ signal: Int32) throws {
        let server = try startServer()
        try server.request("1", "status", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":\#(Self.freshDemo)}"#)
        server.sendSignal(signal)
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    func testSIGTERMWhileIdleExitsZero() throws {
        try expectSignalWhileIdleExitsZero(SIGTERM)
    }

    /// A stop signal that comes while the server is still starting (here,
    /// waiting for its config, a FIFO) is neither fatal nor lost: once
    /// started, the server drains and exits 0. (The kernel discards a signal
    /// whose disposition is "ignore", and the default action kills.)
    func testSIGTERMWhileStartingStopsTheServerOnceStarted() throws {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/pages", withIntermediateDirectories: true)
        let config = try makeFifo(directory + "/nextpage.json")
        let server = try startServer(in: directory)
        // The server has the FIFO open: it is inside startup, past the point where it catches signals.
        let opened = Date(timeIntervalSinceNow: 10)
        while !Self.hasOpen(pid: server.pid, path: config.path) {
            guard Date() < opened else { return XCTFail("the server never opened its config FIFO; stderr: \(server.stderrText)") }
            usleep(2_000)
        }
        server.sendSignal(SIGTERM)
        usleep(50_000)
        XCTAssertFalse(server.hasExited, "SIGTERM during startup killed the server: \(server.terminatingSignal.map(String.init) ?? "-")")
        config.write(fileConfig(paging: #"{"strategy": "cursor"}"#))
        XCTAssertEqual(try server.waitForExit(), 0, "stderr: \(server.stderrText)")
        XCTAssertNil(server.terminatingSignal)
        // stderr is read apart from the exit: wait for the line, or for stderr to close without it.
        try server.waitForStderr(containing: "signal received before serving")
        try server.finish()
    }

    /// Whether process `pid` has `path` open.
    private static func hasOpen(pid: pid_t, path: String) -> Bool {
        let folder = "/proc/\(pid)/fd"
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return entries.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) == target }
    }

    func testSIGTERMDrainIsBoundedByDrainTimeout() throws {
        let directory = try temporaryDirectory()
        _ = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#), arguments: ["--drain-timeout", "0.5"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, ConcurrencyTests.loading))
        // The page never comes: after the drain timeout the request is cancelled and answered.
        server.sendSignal(SIGTERM)
        // Cut off by the shutdown, not cancelled by the client: -32801.
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    func testStdoutCarriesOnlyProtocolAndLogsGoToStderr() throws {
        let server = try startServer(arguments: ["--log-level", "debug"])
        try server.request("1", "initialize", #"{"processId": null, "capabilities": {}}"#)
        let initialize = try server.reply("1")
        try expectMatch(initialize, #"{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"nextpage","version":"<string>"},"capabilities":{"methods":"<any>"}}}"#)
        let methods = initialize["result"]?["capabilities"]?["methods"]?.arrayValue ?? []
        for method in ["load", "loadNext", "reset", "status", "collections", "items", "define", "loadAll", "shutdown", "exit", "$/cancelRequest"] {
            XCTAssert(methods.contains(.string(method)), "initialize lists \(method): \(methods)")
        }
        try server.notify("initialized", "{}")
        try server.request("2", "collections")
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"result":[\#(Self.freshDemo)]}"#)
        try server.sendRaw("garbage\n{\"unterminated\": \n\u{1}\u{2}\n")
        for _ in 0..<3 {
            try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":"<any>"}}"#)
        }
        try server.request("3", "loadAll", #"{"collection": "demo", "progressToken": "tok"}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"result":{"collection?":"demo","pages":10,"count":250,"hasNext":false,"lastId":null}}"#)
        // Each page went out first as a `page` notification, in order.
        for number in 1...10 {
            let note = try server.notification("page", timeout: 0)
            let lastId = number < 10 ? "\"page-\(number + 1)\"" : "null"
            try expectMatch(note, #"""
                {"jsonrpc":"2.0","method":"page","params":{"collection":"demo","items":"<any>","page":\#(number),
                 "hasNext":\#(number < 10),"lastId":\#(lastId),"count":\#(number * 25)}}
                """#)
        }
        let progress = server.takeAll { $0["method"] == .string("$/progress") }
        XCTAssertFalse(progress.isEmpty, "loadAll with a progressToken reports $/progress")
        for note in progress {
            try expectMatch(note, #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"tok","value":"<any>"}}"#)
        }
        try server.finish()
        XCTAssert(server.stderrText.contains("nextpage"), "logs go to stderr: \(server.stderrText)")
        XCTAssertFalse(server.stdoutText.contains("nextpage info"), "no log line on stdout")
    }

    func testTheServerAllocatesThroughMimalloc() throws {
        // Package.swift links the executable with mimalloc, ahead of the C
        // library, except in sanitizer builds (which set this variable).
        if ProcessInfo.processInfo.environment["NEXTPAGE_SYSTEM_MALLOC"] == "1" {
            throw XCTSkip("built with the system allocator (NEXTPAGE_SYSTEM_MALLOC=1)")
        }
        let server = try startServer()
        try server.request("1", "loadNext", #"{"collection": "demo"}"#)
        _ = try server.reply("1")
        // Read to the end: /proc reports a size of 0, and a single read may stop at a page.
        let maps = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(server.pid)/maps")).readDataToEndOfFile()
        let libraries = Set(String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap {
            $0.split(separator: " ").last.map(String.init)
        })
        XCTAssert(libraries.contains { $0.contains("/libc.so") }, "the whole map was read: \(libraries.sorted())")
        XCTAssert(libraries.contains { $0.contains("/libmimalloc.so") }, "mimalloc is loaded in the server: \(libraries.sorted())")
        try server.finish()
    }

    func rpcDiscover(_ framing: WireFraming) throws {
        // docs/methods.md (Transport): replies are compact, one per line, never containing a raw newline.
        let server = try startServer(framing: framing)
        try server.request("1", "rpc.discover")
        let discover = try server.reply("1")
        try expectMatch(discover, #"{"jsonrpc":"2.0","id":1,"result":"<any>"}"#)
        XCTAssertNotNil(discover["result"]?["openrpc"]?.stringValue, "rpc.discover returns an OpenRPC document")
        let names = (discover["result"]?["methods"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        for method in ["load", "loadNext", "reset", "status", "collections", "items", "define", "loadAll"] {
            XCTAssert(names.contains(method), "rpc.discover documents \(method): \(names)")
        }
        try server.finish()
    }

    func testRPCDiscoverReplyIsOneCompactMessage_ndjson() throws { try rpcDiscover(.ndjson) }
    func testRPCDiscoverReplyIsOneCompactMessage_lsp() throws { try rpcDiscover(.lsp) }

    func testSIGHUPWhileIdleExitsZero() throws {
        // SIGHUP killed the server with the default action.
        try expectSignalWhileIdleExitsZero(SIGHUP)
    }

    func testSIGINTWhileIdleExitsZero() throws {
        try expectSignalWhileIdleExitsZero(SIGINT)
    }

    func testClosedStdoutExitsQuietlyAndNonZero() throws {
        let server = try startServer(closeStdout: true)
        // Every reply fails to be written (EPIPE): the server must end by itself.
        for id in 1...20 {
            try? server.request("\(id)", "status", #"{"collection": "demo"}"#)
        }
        let status = try server.waitForExit()
        XCTAssertNil(server.terminatingSignal, "killed by a signal (SIGPIPE?) instead of exiting; stderr: \(server.stderrText)")
        XCTAssertNotEqual(status, 0, "a closed stdout exits non-zero")
    }

    /// A peer that stops reading its replies: the server's last writes block.
    static let repliesNobodyReads = 100

    private func startServerNobodyReads(_ arguments: [String]) throws -> ServerHarness {
        let server = try startServer(arguments: arguments.contains("--drain-timeout") ? arguments : ["--drain-timeout", "1"] + arguments)
        server.pauseReading()
        // Each reply is the OpenRPC document (tens of kilobytes): far more
        // than the pipe and the server's 1 MiB of pending output hold.
        for index in 0..<Self.repliesNobodyReads { try server.request("\(index)", "rpc.discover") }
        XCTAssertTrue(server.waitUntilStdoutIsFull(timeout: 20), "the replies fill the pipe")
        return server
    }

    func testSIGTERMEndsTheServerWhenStdoutIsNotRead() throws {
        // The drain was done, and the final flush waited for a reader forever.
        let server = try startServerNobodyReads([])
        server.sendSignal(SIGTERM)
        try expectExit(server)
    }

    func testEndOfInputEndsTheServerWhenStdoutIsNotRead() throws {
        let server = try startServerNobodyReads([])
        server.closeInput()
        try expectExit(server)
    }

    /// Kills the watched parent of a server nobody reads; the server must exit.
    private func expectExitWhenTheParentGoes(drainTimeout: String) throws {
        let watched = try spawnProcess(["/bin/sleep", "60"])
        let server = try startServerNobodyReads(["--drain-timeout", drainTimeout, "--parent-pid", "\(watched)"])
        _ = Glibc.kill(watched, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(watched, &status, 0)
        try expectExit(server)
    }

    /// The server exits 0 (its last replies unread), then is cleaned up.
    private func expectExit(_ server: ServerHarness) throws {
        XCTAssertEqual(try server.waitForExit(timeout: 30), 0)
        server.resumeReading()
        server.kill()
    }

    func testAGoneParentEndsTheServerWhenStdoutIsNotRead() throws {
        try expectExitWhenTheParentGoes(drainTimeout: "1")
    }

    func testASecondSIGTERMAbandonsTheLastReplies() throws {
        // With a long drain timeout, only the second signal stops the wait for a peer that does not read.
        let server = try startServerNobodyReads(["--drain-timeout", "1000"])
        server.sendSignal(SIGTERM)
        usleep(300_000)
        server.sendSignal(SIGTERM)
        try expectExit(server)
    }

    func testAGoneParentAbandonsTheLastReplies() throws {
        // The parent check repeats the stop: the second one abandons the wait, whatever the drain timeout.
        try expectExitWhenTheParentGoes(drainTimeout: "1000")
    }

    func testAPeerThatPausesReadingGetsEveryReplyEvenWithNoDrainTimeout() throws {
        // `--drain-timeout 0` gave up on the last replies at once, though the peer was reading them.
        let server = try startServerNobodyReads(["--drain-timeout", "0"])
        server.closeInput()
        usleep(1_000_000)
        server.resumeReading()
        for index in 0..<Self.repliesNobodyReads { XCTAssertNotNil(try server.reply("\(index)")["result"]) }
        XCTAssertEqual(try server.waitForExit(timeout: 30), 0)
        try server.finish()
    }

    func testALoadAllWaitingForAPeerThatStoppedReadingDoesNotHoldTheExit() throws {
        let directory = try temporaryDirectory()
        let item = #"{"id": 0, "text": "\#(String(repeating: "x", count: 480))"}"#
        for page in 0..<30 {
            let next = page < 29 ? #""p\#(page + 1)""# : "null"
            let items = Array(repeating: item, count: 200).joined(separator: ",")
            try writeFile(directory + "/pages/\(page == 0 ? "first" : "p\(page)").json", #"{"items": [\#(items)], "next_cursor": \#(next)}"#)
        }
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#), arguments: ["--drain-timeout", "1"], in: directory)
        server.pauseReading()
        try server.request("1", "loadAll", #"{"collection": "c"}"#)
        XCTAssertTrue(server.waitUntilStdoutIsFull(timeout: 20))
        server.closeInput()
        try expectExit(server)
    }

    func testServerExitsWhenTheWatchedParentPidIsGone() throws {
        let watched = try spawnProcess(["/bin/sleep", "60"])
        var reaped = false
        defer {
            if !reaped {
                _ = Glibc.kill(watched, SIGKILL)
                var status: Int32 = 0
                _ = waitpid(watched, &status, 0)
            }
        }
        let server = try startServer(arguments: ["--parent-pid", "\(watched)"])
        try server.request("1", "status", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":\#(Self.freshDemo)}"#)
        _ = Glibc.kill(watched, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(watched, &status, 0)
        reaped = true
        // stdin stays open: only the watched process's end can stop the server.
        XCTAssertEqual(try server.waitForExit(timeout: 10), 0)
        try server.finish()
    }

    func testDefineACollectionAtRunTimeAndPageIt() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/rt/first.json", #"{"entries": [{"k": 1}], "more": "two"}"#)
        try writeFile(directory + "/rt/two.json", #"{"entries": [{"k": 2}], "more": null}"#)
        let server = try startServer(in: directory)
        let definition = #"{"name": "rt", "source": {"type": "file", "dir": "\#(directory)/rt"}, "paging": {"strategy": "cursor", "items": "/entries", "next": "/more"}}"#
        try server.request("1", "define", definition)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":{"collection":"rt","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}}"#)
        try server.request("2", "loadNext", #"{"collection": "rt"}"#)
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"result":{"collection":"rt","items":[{"k":1}],"page":1,"hasNext":true,"lastId":"two","count":1}}"#)
        try server.request("3", "loadNext", #"{"collection": "rt"}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"result":{"collection":"rt","items":[{"k":2}],"page":2,"hasNext":false,"lastId":null,"count":2}}"#)
        try server.request("4", "collections")
        try expectUnorderedMatch(try XCTUnwrap(server.reply("4")["result"]), [
            Self.freshDemo,
            #"{"collection":"rt","hasNext":false,"isLoading":false,"lastId":null,"count":2,"pages":2,"lastError":null}"#,
        ])
        // Defining it again replaces it with a fresh collection.
        try server.request("5", "define", definition)
        try expectMatch(server.reply("5"), #"{"jsonrpc":"2.0","id":5,"result":{"collection":"rt","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}}"#)
        try server.request("6", "loadNext", #"{"collection": "rt"}"#)
        try expectMatch(server.reply("6"), #"{"jsonrpc":"2.0","id":6,"result":{"collection":"rt","items":[{"k":1}],"page":1,"hasNext":true,"lastId":"two","count":1}}"#)
        try server.finish()
    }

    func testDefineWithAnInvalidDefinitionNamesTheField() throws {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/rt", withIntermediateDirectories: true)
        let server = try startServer(in: directory)
        try server.request("1", "define", #"{"name": "bad", "source": {"type": "file", "dir": "\#(directory)/rt"}, "paging": {"strategy": "sideways"}}"#)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"<string>","data":{"field":"paging.strategy","expected":"<string>"}}}"#)
        try server.request("2", "define", #"{"name": "bad", "source": {"type": "file", "dir": "\#(directory)/nowhere"}, "paging": {"strategy": "cursor"}}"#)
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"error":{"code":-32004,"message":"<string>","data":{"field":"source.dir","expected":"<string>"}}}"#)
        try server.request("3", "define", #"{"name": "bad", "source": {"type": "file", "dir": "\#(directory)/rt"}, "paging": {"strategy": "cursor"}, "pageSize": 0}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"error":{"code":-32004,"message":"<string>","data":{"field":"pageSize","expected":"<string>"}}}"#)
        // Nothing was defined.
        try server.request("4", "status", #"{"collection": "bad"}"#)
        try expectMatch(server.reply("4"), #"{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"<string>","data":{"collection":"bad","known":["demo"]}}}"#)
        try server.finish()
    }

    func testUnknownCollectionListsTheKnownOnes() throws {
        let server = try startServer(
            config: #"""
                {"collections": {
                  "b": {"source": {"type": "file", "dir": "p"}, "paging": {"strategy": "cursor"}},
                  "a": {"source": {"type": "file", "dir": "p"}, "paging": {"strategy": "page"}}
                }}
                """#,
            files: ["p/first.json": "{}"])
        for (id, method) in [(1, "status"), (2, "loadNext"), (3, "items"), (4, "reset"), (5, "load")] {
            try server.request("\(id)", method, #"{"collection": "nope"}"#)
            try expectMatch(server.reply("\(id)"), #"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32001,"message":"<string>","data":{"collection":"nope","known":["a","b"]}}}"#, method)
        }
        try server.finish()
    }

    func testBadParamsNameTheField() throws {
        let server = try startServer()
        let cases: [(String, String, String)] = [
            ("loadNext", #"{"collection": 5}"#, "collection"),
            ("status", #"{}"#, "collection"),
            ("status", #"{"collection": null}"#, "collection"),
            ("loadNext", #"{"collection": "demo", "ifLoading": "sometimes"}"#, "ifLoading"),
            ("items", #"{"collection": "demo", "offset": 1.5}"#, "offset"),
            ("load", #"{"collection": "demo", "lastId": {"a": 1}}"#, "lastId"),
        ]
        for (index, (method, params, field)) in cases.enumerated() {
            try server.request("\(index + 1)", method, params)
            try expectMatch(server.reply("\(index + 1)"), #"{"jsonrpc":"2.0","id":\#(index + 1),"error":{"code":-32602,"message":"<string>","data":{"field":"\#(field)","expected":"<string>"}}}"#, "\(method) \(params)")
        }
        // Nothing was loaded by the rejected calls.
        try server.request("99", "status", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("99"), #"{"jsonrpc":"2.0","id":99,"result":\#(Self.freshDemo)}"#)
        try server.finish()
    }

    func testStdinAsARegularFile() throws {
        let directory = try temporaryDirectory()
        let requests = [
            #"{"jsonrpc":"2.0","id":1,"method":"status","params":{"collection":"demo"}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"loadNext","params":{"collection":"demo"}}"#,
            #"{"jsonrpc":"2.0","id":"three","method":"loadNext","params":{"collection":"demo"}}"#,
            #"{"jsonrpc":"2.0","method":"loadNext","params":{"collection":"demo"}}"#,
            #"{"jsonrpc":"2.0","id":4,"method":"loadNext","params":{"collection":"demo"}}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"nope"}"#,
            "not json",
            #"[{"jsonrpc":"2.0","id":6,"method":"collections"},{"jsonrpc":"2.0","method":"status","params":{"collection":"demo"}}]"#,
            #"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#,
            #"{"jsonrpc":"2.0","id":8,"method":"status","params":{"collection":"demo"}}"#,
        ]
        let input = directory + "/requests.jsonl"
        try writeFile(input, requests.joined(separator: "\n") + "\n")
        let server = try startServer(in: directory, stdinFile: input)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":\#(Self.freshDemo)}"#)
        try expectMatch(server.reply("2"), #"{"jsonrpc":"2.0","id":2,"result":{"collection":"demo","items":"<any>","page":1,"hasNext":true,"lastId":"page-2","count":25}}"#)
        try expectMatch(server.reply(#""three""#), #"{"jsonrpc":"2.0","id":"three","result":{"collection":"demo","items":"<any>","page":2,"hasNext":true,"lastId":"page-3","count":50}}"#)
        // The notification in between took page 3.
        try expectMatch(server.reply("4"), #"{"jsonrpc":"2.0","id":4,"result":{"collection":"demo","items":"<any>","page":4,"hasNext":true,"lastId":"page-5","count":100}}"#)
        try expectMatch(server.reply("5"), #"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"<string>","data":{"method":"nope"}}}"#)
        try expectMatch(server.take("the parse error") { $0["id"] == .null }, #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":"<any>"}}"#)
        try expectMatch(server.nextBatch(), #"[{"jsonrpc":"2.0","id":6,"result":[{"collection":"demo","hasNext":"<bool>","isLoading":"<bool>","lastId":"<any>","count":"<int>","pages":"<int>","lastError":null}]}]"#)
        try expectMatch(server.reply("7"), #"{"jsonrpc":"2.0","id":7,"result":null}"#)
        try expectMatch(server.reply("8"), #"{"jsonrpc":"2.0","id":8,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        try server.finish()
    }

    func testAnEndlessDrainTimeoutDrainsAndExits() throws {
        // `inf` (or 1e16) trapped converting the timeout to milliseconds, with a request in flight.
        for timeout in ["inf", "1e16"] {
            let server = try startServer(arguments: ["--drain-timeout", timeout])
            try server.request("1", "loadNext", #"{"collection": "demo"}"#)
            server.closeInput()
            XCTAssertEqual(try server.reply("1")["result"]?["page"], .int(1))
            XCTAssertEqual(try server.waitForExit(), 0, timeout)
            try server.finish()
        }
        let nan = try runNextpage(["--drain-timeout", "nan"], in: try temporaryDirectory(), stdin: "")
        XCTAssertEqual(nan.status, 64)
        XCTAssertTrue(nan.stderr.contains("--drain-timeout must be a number of seconds"), nan.stderr)
    }

    func testEndOfInputDrainIsBoundedByDrainTimeout() throws {
        let directory = try temporaryDirectory()
        _ = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#), arguments: ["--drain-timeout", "0.5"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, ConcurrencyTests.loading))
        server.closeInput()
        // Cut off by the shutdown, not cancelled by the client: -32801.
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"error":{"code":-32801,"message":"<string>","data?":"<any>"}}"#)
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
    }

    func testLogsNeverBlockTheProtocolWhenStderrIsFull() throws {
        // Nobody reads stderr: its pipe fills up after a few dozen log lines.
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/p", withIntermediateDirectories: true)
        let server = try startServer(in: directory, readStderr: false)
        let padding = String(repeating: "n", count: 2000)
        var bytes: [UInt8] = []
        for id in 1...300 {
            bytes += Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"define","params":{"name":"\#(padding)\#(id)","source":{"type":"file","dir":"\#(directory)/p"},"paging":{"strategy":"cursor"}}}"#.utf8) + [0x0A]
        }
        try server.sendRaw(bytes)
        for id in 1...300 {
            try expectMatch(server.reply("\(id)"), #"{"jsonrpc":"2.0","id":\#(id),"result":{"collection":"\#(padding)\#(id)","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}}"#)
        }
        try server.finish()
    }

    func testConfigDirIsRelativeToTheConfigFile() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/conf/setup.json", fileConfig(dir: "pages", paging: #"{"strategy": "cursor"}"#))
        try writeFile(directory + "/conf/pages/first.json", #"{"items": ["from conf/pages"], "next_cursor": null}"#)
        try writeFile(directory + "/pages/first.json", #"{"items": ["from the working directory"], "next_cursor": null}"#)
        let server = try startServer(arguments: ["--config", "conf/setup.json"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":["from conf/pages"],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
    }

    func testInvalidConfigIsRefusedNamingTheField() throws {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/pages", withIntermediateDirectories: true)
        let server = try startServer(config: fileConfig("friends", paging: #"{"strategy": "sideways"}"#), in: directory)
        let status = try server.waitForExit()
        try server.waitForEndOfOutput()
        XCTAssertNotEqual(status, 0, "an invalid config must not be served")
        XCTAssertEqual(server.stdoutText, "", "nothing on stdout")
        XCTAssert(server.stderrText.contains("collections.friends.paging.strategy"), "stderr names the field: \(server.stderrText)")
    }
}
