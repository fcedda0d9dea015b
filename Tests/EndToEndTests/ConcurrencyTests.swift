import XCTest

/// One fetch per collection at a time, queueing, skip, reset and cancellation
/// during a fetch, and collections loading concurrently (docs/methods.md, Guarantees). A page file
/// that is a FIFO keeps a fetch in flight until the test writes the page.
final class ConcurrencyTests: EndToEndTestCase {
    static let page1 = #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "p2"}"#
    static let page2 = #"{"items": [{"id": 3}, {"id": 4}], "next_cursor": null}"#
    static let loading = #"{"collection":"c","hasNext":true,"isLoading":true,"lastId":null,"count":0,"pages":0,"lastError":null}"#
    static let fresh = #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#
    static let cancelled = #"{"code":-32800,"message":"<string>","data?":"<any>"}"#

    /// A server with collection "c" whose first page is a FIFO; `p2.json` is a regular page.
    func startWithBlockedFirstPage(arguments: [String] = []) throws -> (ServerHarness, Fifo) {
        let directory = try temporaryDirectory()
        let fifo = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: ["pages/p2.json": Self.page2], arguments: arguments, in: directory)
        return (server, fifo)
    }

    func testFifoPageIsReadWhenTheTestWritesIt() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, Self.loading), "status while the first page is in flight")
        fifo.write(Self.page1)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try server.finish()
    }

    func testQueuedLoadNextCallsGetConsecutivePagesInOrder() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(3, Self.loading), "status while two loadNext wait")
        fifo.write(Self.page1)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":false,"lastId":null,"count":4}"#))
        try server.finish()
    }

    func testSkipWhileLoadingReturnsAtOnce() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "loadNext", #"{"collection": "c", "ifLoading": "skip"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, #"{"collection":"c","items":[],"page":"<int>","hasNext":true,"lastId":null,"count":0,"skipped":true}"#))
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(3, Self.loading))
        fifo.write(Self.page1)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        // Idle: "skip" loads as usual (and the skipped call took no page).
        try server.request("4", "loadNext", #"{"collection": "c", "ifLoading": "skip"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":false,"lastId":null,"count":4}"#))
        try server.finish()
    }

    func testResetWhileLoadingCancelsAndThePageNeverLands() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(3, Self.loading))
        try server.request("4", "reset", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, Self.fresh))
        try expectMatch(server.reply("1"), rpcError(1, Self.cancelled), "the fetch in flight")
        try expectMatch(server.reply("2"), rpcError(2, Self.cancelled), "the queued call")
        try server.request("5", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, Self.fresh))
        try server.request("6", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","items":[],"count":0,"offset":0}"#))
        // The collection starts over from its first page. The cancelled
        // fetch lets go of the FIFO (just after its call was answered): what
        // is written now is read by the new fetch alone (were the old read
        // still waiting, it could take it).
        try waitUntilNobodyReads(fifo.path)
        try server.request("7", "loadNext", #"{"collection": "c"}"#)
        fifo.write(#"{"items": [{"id": "fresh"}], "next_cursor": null}"#)
        try expectMatch(server.reply("7"), rpcResult(7, #"{"collection":"c","items":[{"id":"fresh"}],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try fifo.waitWritten()
        try server.finish()
    }

    func testLoadWhileLoadingCancelsTheFetchInFlight() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, Self.loading))
        // `load` resumes after a saved cursor: it does not need the blocked first page.
        try server.request("3", "load", #"{"collection": "c", "lastId": "p2"}"#)
        try expectMatch(server.reply("1"), rpcError(1, Self.cancelled))
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"id":3},{"id":4}],"page":"<int>","hasNext":false,"lastId":null,"count":2}"#))
        fifo.release()
        try server.finish()
    }

    func testCancelRequestEndsTheCallAndTheCollectionStillWorks() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.notify("$/cancelRequest", #"{"id": 99}"#)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try server.request(#""two""#, "loadNext", #"{"collection": "c"}"#)
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(3, Self.loading))
        // The queued call first (a string id), then the one in flight.
        try server.notify("$/cancelRequest", #"{"id": "two"}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":"two","error":\#(Self.cancelled)}"#, "the cancelled queued call")
        try server.notify("$/cancelRequest", #"{"id": 1}"#)
        try expectMatch(server.nextMessage(), rpcError(1, Self.cancelled), "the cancelled fetch")
        try server.request("4", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, Self.fresh))
        // The abandoned read is released; the collection pages normally.
        try fifo.replace(withFile: Self.page1)
        try server.request("5", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try server.request("6", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":false,"lastId":null,"count":4}"#))
        try server.finish()
    }

    func testCancelRequestReachesAMemberOfABatch() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        // Two calls in one batch: the fetch in flight and the call queued behind it.
        try server.send(#"[{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"c"}},"#
            + #"{"jsonrpc":"2.0","id":"two","method":"loadNext","params":{"collection":"c"}}]"#)
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.nextMessage(), rpcResult(3, Self.loading))
        try server.notify("$/cancelRequest", #"{"id": "two"}"#)
        try server.notify("$/cancelRequest", #"{"id": 1}"#)
        // The batch's reply holds both, each ended by its own cancellation.
        try expectMatch(server.nextMessage(), #"""
            [{"jsonrpc":"2.0","id":1,"error":\#(Self.cancelled)},{"jsonrpc":"2.0","id":"two","error":\#(Self.cancelled)}]
            """#)
        try server.request("4", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, Self.fresh))
        try fifo.replace(withFile: Self.page1)
        try server.request("5", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try server.finish()
    }

    func testCancelRequestRightBehindABatchReachesItsMember() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        // The batch and the cancel arrive in one write: the member is
        // registered before the cancel is handled.
        try server.sendRaw(#"[{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"c"}}]"# + "\n"
            + #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"# + "\n")
        try expectMatch(server.nextMessage(), #"[{"jsonrpc":"2.0","id":1,"error":\#(Self.cancelled)}]"#)
        try fifo.replace(withFile: Self.page1)
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try server.finish()
    }

    func testCancelRequestRightBehindARequestInTheSameWriteReachesIt() throws {
        let (server, fifo) = try startWithBlockedFirstPage()
        try server.sendRaw(#"{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"c"}}"# + "\n"
            + #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"# + "\n")
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"error":\#(Self.cancelled)}"#)
        try fifo.replace(withFile: Self.page1)
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}"#))
        try server.finish()
    }

    /// A server with collection "c" over regular page files, read at once:
    /// a call is answered within microseconds.
    func startWithFastPages() throws -> ServerHarness {
        try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: ["pages/first.json": Self.page1, "pages/p2.json": Self.page2])
    }

    func testACancelInTheSameWriteEndsEvenAFastRequestAndItsPageNeverLands() throws {
        let server = try startWithFastPages()
        for round in 1...20 {
            try server.sendRaw(#"{"jsonrpc":"2.0","id":"l\#(round)","method":"loadNext","params":{"collection":"c"}}"# + "\n"
                + #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"l\#(round)"}}"# + "\n"
                + #"[{"jsonrpc":"2.0","id":"b\#(round)","method":"loadNext","params":{"collection":"c"}},{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"b\#(round)"}}]"# + "\n")
            try expectMatch(server.reply("\"l\(round)\""), #"{"jsonrpc":"2.0","id":"l\#(round)","error":\#(Self.cancelled)}"#, "round \(round)")
            // A cancel inside the batch reaches the member before it.
            try expectMatch(server.nextBatch(), #"[{"jsonrpc":"2.0","id":"b\#(round)","error":\#(Self.cancelled)}]"#, "round \(round)")
            try server.request("\"s\(round)\"", "status", #"{"collection": "c"}"#)
            try expectMatch(server.reply("\"s\(round)\""), #"{"jsonrpc":"2.0","id":"s\#(round)","result":\#(Self.fresh)}"#, "no page landed")
        }
        try server.finish()
    }

    func testRequestsReadTogetherAreAdmittedBeforeAnyOfThemRuns() throws {
        // A status sent in the same write as a loadNext still sees that page
        // loading, every time, however fast the page.
        let server = try startWithFastPages()
        for round in 1...20 {
            try server.sendRaw(#"{"jsonrpc":"2.0","id":"r\#(round)","method":"reset","params":{"collection":"c"}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":"l\#(round)","method":"loadNext","params":{"collection":"c"}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":"s\#(round)","method":"status","params":{"collection":"c"}}"# + "\n")
            try expectMatch(server.reply("\"s\(round)\""), #"{"jsonrpc":"2.0","id":"s\#(round)","result":\#(Self.loading)}"#, "round \(round)")
            try expectMatch(server.reply("\"l\(round)\""), #"{"jsonrpc":"2.0","id":"l\#(round)","result":{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}}"#)
            _ = try server.reply("\"r\(round)\"")
        }
        try server.finish()
    }

    func testDifferentCollectionsLoadConcurrently() throws {
        let directory = try temporaryDirectory()
        let fifo = try makeFifo(directory + "/slow/first.json")
        let server = try startServer(
            config: #"""
                {"collections": {
                  "slow": {"source": {"type": "file", "dir": "slow"}, "paging": {"strategy": "cursor"}},
                  "fast": {"source": {"type": "file", "dir": "fast"}, "paging": {"strategy": "cursor"}}
                }}
                """#,
            files: ["fast/first.json": #"{"items": ["f1"], "next_cursor": null}"#], in: directory)
        try server.request("1", "loadNext", #"{"collection": "slow"}"#)
        try server.request("2", "loadNext", #"{"collection": "fast"}"#)
        try expectMatch(server.nextMessage(), rpcResult(2, #"{"collection":"fast","items":["f1"],"page":1,"hasNext":false,"lastId":null,"count":1}"#),
                        "the fast collection answers while the slow one is blocked")
        try server.request("3", "collections")
        let states = try server.reply("3")
        try expectUnorderedMatch(try XCTUnwrap(states["result"]), [
            #"{"collection":"fast","hasNext":false,"isLoading":false,"lastId":null,"count":1,"pages":1,"lastError":null}"#,
            #"{"collection":"slow","hasNext":true,"isLoading":true,"lastId":null,"count":0,"pages":0,"lastError":null}"#,
        ])
        fifo.write(#"{"items": ["s1"], "next_cursor": null}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"slow","items":["s1"],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
    }
}

extension ConcurrencyTests {
    /// Reads that wait on writers (FIFO pages) each hold a thread of their
    /// own: however many wait, the server's other work goes on. (When they
    /// ran on Dispatch's global queue, which the Swift concurrency pool shares
    /// on Linux, 48 of them held up every other request for most of a minute.)
    func testManyPagesWaitingOnWritersHoldUpNothingElse() throws {
        let directory = try temporaryDirectory()
        let count = 48
        var collections: [String] = [#""good": {"source": {"type": "file", "dir": "good"}, "paging": {"strategy": "cursor"}}"#]
        var fifos: [Fifo] = []
        for index in 0..<count {
            collections.append(#""f\#(index)": {"source": {"type": "file", "dir": "f\#(index)"}, "paging": {"strategy": "cursor"}}"#)
            fifos.append(try makeFifo(directory + "/f\(index)/first.json"))
        }
        let server = try startServer(
            config: #"{"collections": {"# + collections.joined(separator: ", ") + "}}",
            files: ["good/first.json": #"{"items": ["g1"], "next_cursor": null}"#], in: directory)
        for index in 0..<count {
            try server.request("\(index)", "loadNext", #"{"collection": "f\#(index)"}"#)
        }
        // Another collection answers at once (within the harness's 10 s: the
        // reads queued before it used to take a minute to get their threads).
        try server.request("\"good\"", "loadNext", #"{"collection": "good"}"#)
        try expectMatch(server.reply("\"good\""), #"{"jsonrpc":"2.0","id":"good","result":{"collection":"good","items":["g1"],"page":1,"hasNext":false,"lastId":null,"count":1}}"#)
        // Every read is waiting: each FIFO has its reader (the writer's open
        // returns once it has), and a writer that has not written yet.
        var writers: [Int32] = []
        defer { for fd in writers { close(fd) } }
        for index in 0..<count {
            writers.append(try waitForReader(of: fifos[index].path))
        }
        try server.request("\"status\"", "status", #"{"collection": "f0"}"#)
        try expectMatch(server.reply("\"status\""), #"{"jsonrpc":"2.0","id":"status","result":{"collection":"f0","hasNext":true,"isLoading":true,"lastId":null,"count":0,"pages":0,"lastError":null}}"#)
        // Then every page comes, and every call gets its own.
        for (index, fd) in writers.enumerated() {
            let page = Array(#"{"items": [\#(index)], "next_cursor": null}"#.utf8)
            XCTAssertEqual(page.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }, page.count)
            close(fd)
        }
        writers = []
        for index in 0..<count {
            try expectMatch(server.reply("\(index)"), rpcResult(index, #"{"collection":"f\#(index)","items":[\#(index)],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        }
        try server.finish()
    }
}

/// Waits until no process has the FIFO at `path` open for reading (a writer
/// that does not wait fails to open it with ENXIO then).
private func waitUntilNobodyReads(_ path: String, timeout: TimeInterval = 10) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 && errno == ENXIO { return }
        if fd >= 0 { close(fd) }
        guard Date() < deadline else { throw HarnessError(description: "\(path) still has a reader after \(timeout) s") }
        usleep(1000)
    }
}
