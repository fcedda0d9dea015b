import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--state F` survives SIGKILL: a server or `nextpage all` killed in the
/// middle of a run resumes from the last completed page, and every item is
/// delivered exactly once overall (docs/cli.md). The kill lands while a page is
/// being fetched: the page file is a FIFO, and the test kills the process
/// once it has opened the FIFO for reading (nothing sleeps).
final class StateFileTests: EndToEndTestCase {
    private func pagesConfig(_ directory: String, pages: Int, size: Int) throws {
        try ShellCommandTests.writePages(pages, size: size, in: directory)
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))
    }

    /// The text of page `page` (of `size` items, `pages` in all), as `writePages` makes it.
    private func pageText(_ page: Int, size: Int, pages: Int) -> String {
        let items = (1...size).map { #"{"id":\#((page - 1) * size + $0)}"# }.joined(separator: ",")
        let next = page < pages ? "\"p\(page + 1)\"" : "null"
        return #"{"items":[\#(items)],"next_cursor":\#(next)}"#
    }

    func testAllKilledWithSIGKILLMidRunResumesWithEveryItemExactlyOnce() throws {
        let directory = try temporaryDirectory()
        let (pages, size, stuck) = (40, 5, 23)
        try pagesConfig(directory, pages: pages, size: size)
        let fifoPath = "\(directory)/pages/p\(stuck).json"
        try FileManager.default.removeItem(atPath: fifoPath)
        let fifo = try makeFifo(fifoPath)

        let first = try CommandProcess(["all", "c", "--state", "run.state"], in: directory)
        // The fetch of page 23 is in flight. File pages are read ahead of the
        // ones still being checked, so the last page printed and saved may be
        // any page up to 22: whichever it is, the state names the page after it.
        let writer = try waitForReader(of: fifoPath)
        kill(first.pid, SIGKILL)
        let killed = try first.finish()
        close(writer)
        XCTAssertEqual(killed.status, 128 + SIGKILL)
        let before = try ids(ofLines: killed.lines)
        let printedPages = before.count / size
        XCTAssertEqual(before.count % size, 0, "whole pages")
        XCTAssertEqual(before, (0..<before.count).map { Int64($0 + 1) }, "in order")
        XCTAssertLessThanOrEqual(printedPages, stuck - 1)
        XCTAssertGreaterThan(printedPages, 0)
        let saved = try JSONValue.parse(String(contentsOfFile: directory + "/run.state", encoding: .utf8))
        // The state names the page after the last one printed; or, when the
        // kill fell between a page's write and its save (README: the shell
        // commands save after writing), the page before, printed again next run.
        let savedPages = Int(saved["collections"]?["c"]?["pages"]?.intValue ?? -1)
        XCTAssert([printedPages, printedPages - 1].contains(savedPages), "saved \(savedPages) pages, printed \(printedPages)")
        XCTAssertEqual(saved["collections"]?["c"]?["lastId"], .string("p\(savedPages + 1)"))

        try fifo.replace(withFile: pageText(stuck, size: size, pages: pages))
        let second = try runNextpage(["all", "c", "--state", "run.state"], in: directory)
        XCTAssertEqual(second.status, 0, second.stderr)
        let after = try ids(ofLines: second.lines)
        XCTAssertEqual(Array(before.prefix(savedPages * size)) + after, Array(1...Int64(pages * size)), "every saved item once, in order")
    }

    func testNextKilledWithSIGKILLWhileFetchingLeavesTheCursorOnThatPage() throws {
        let directory = try temporaryDirectory()
        try pagesConfig(directory, pages: 3, size: 2)
        let fifoPath = "\(directory)/pages/p2.json"
        try FileManager.default.removeItem(atPath: fifoPath)
        let fifo = try makeFifo(fifoPath)
        let first = try runNextpage(["next", "c", "--state", "n.state"], in: directory)
        XCTAssertEqual(try JSONValue.parse(first.stdout)["items"], J("[{\"id\":1},{\"id\":2}]"))

        let killed = try CommandProcess(["next", "c", "--state", "n.state"], in: directory)
        let writer = try waitForReader(of: fifoPath)
        kill(killed.pid, SIGKILL)
        let result = try killed.finish()
        close(writer)
        XCTAssertEqual(result.status, 128 + SIGKILL)
        XCTAssertEqual(result.stdout, "", "killed before it printed anything")

        try fifo.replace(withFile: pageText(2, size: 2, pages: 3))
        let second = try runNextpage(["next", "c", "--state", "n.state"], in: directory)
        XCTAssertEqual(second.status, 0, second.stderr)
        try expectMatch(JSONValue.parse(second.stdout), #"{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":true,"lastId":"p3","count":4}"#)
    }

    func testServerKilledWithSIGKILLResumesWhereItStopped() throws {
        let directory = try temporaryDirectory()
        try pagesConfig(directory, pages: 6, size: 3)
        let fifoPath = "\(directory)/pages/p4.json"
        try FileManager.default.removeItem(atPath: fifoPath)
        let fifo = try makeFifo(fifoPath)

        var delivered: [Int64] = []
        let server = try startServer(arguments: ["--state", "server.state"], in: directory)
        for id in 1...3 {
            try server.request("\(id)", "loadNext", #"{"collection": "c"}"#)
            delivered += try server.reply("\(id)")["result"]?["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
        }
        // The fourth page is being fetched when the server dies.
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        let writer = try waitForReader(of: fifoPath)
        server.sendSignal(SIGKILL)
        XCTAssertEqual(try server.waitForExit(), 128 + SIGKILL)
        close(writer)
        try fifo.replace(withFile: pageText(4, size: 3, pages: 6))

        let restarted = try startServer(arguments: ["--state", "server.state"], in: directory)
        try restarted.request("1", "status", #"{"collection": "c"}"#)
        try expectMatch(restarted.reply("1"), rpcResult(1, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"p4","count":9,"pages":3,"lastError":null}"#))
        try restarted.request("2", "loadAll", #"{"collection": "c"}"#)
        for page in 4...6 {
            let notification = try restarted.notification("page")
            XCTAssertEqual(notification["params"]?["page"], .int(Int64(page)))
            delivered += notification["params"]?["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
        }
        try expectMatch(restarted.reply("2"), rpcResult(2, #"{"collection":"c","pages":6,"count":18,"hasNext":false,"lastId":null}"#))
        XCTAssertEqual(delivered, Array(1...18), "every item exactly once")
        try restarted.finish()
    }

    func testStateFileIsReplacedWholeAfterEveryPage() throws {
        let directory = try temporaryDirectory()
        try pagesConfig(directory, pages: 3, size: 1)
        let server = try startServer(arguments: ["--state", "s.json"], in: directory)
        for id in 1...3 {
            try server.request("\(id)", "loadNext", #"{"collection": "c"}"#)
            _ = try server.reply("\(id)")
            // Saved before the reply was sent: the file already says where the collection stands.
            let text = try String(contentsOfFile: directory + "/s.json", encoding: .utf8)
            let lastId: JSONValue = id < 3 ? .string("p\(id + 1)") : .null
            XCTAssertEqual(try JSONValue.parse(text)["collections"]?["c"]?["lastId"], lastId)
            XCTAssertEqual(try JSONValue.parse(text)["collections"]?["c"]?["pages"], .int(Int64(id)))
        }
        try server.request("4", "reset", #"{"collection": "c"}"#)
        _ = try server.reply("4")
        let reset = try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
        try expectMatch(reset, #"{"version":1,"collections":{"c":{"hasNext":true,"lastId":null,"count":0,"pages":0,"lastError":null}}}"#)
        try server.finish()
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(".") }
        XCTAssertEqual(leftovers, [], "the temporary file was renamed into place")
    }
}
