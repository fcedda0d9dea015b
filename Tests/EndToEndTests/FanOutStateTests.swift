import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Fan-out (`concurrency`) over the real binary: a `page` walk with a total
/// fetches several pages at once and lands them in order; a server killed
/// with SIGKILL in the middle of such a walk, with `--state`, resumes from
/// the last page that landed, and every item is delivered exactly once. The
/// kill lands while a page is being fetched (a FIFO nobody writes to) and
/// the pages after it may be fetched already; none of them had landed.
final class FanOutStateTests: EndToEndTestCase {
    private let (pages, size, stuck) = (12, 3, 6)

    /// Page `page` of the walk: `size` items and the total.
    private func pageText(_ page: Int) -> String {
        let items = (1...size).map { #"{"id":\#((page - 1) * size + $0)}"# }.joined(separator: ",")
        return #"{"items":[\#(items)],"total":\#(pages * size)}"#
    }

    private func makePages(_ directory: String) throws {
        for page in 1...pages {
            try writeFile("\(directory)/pages/\(page == 1 ? "first" : String(page)).json", pageText(page))
        }
        try writeFile(directory + "/nextpage.json", fileConfig(
            paging: #"{"strategy": "page", "total": "/total"}"#, extra: #""concurrency": 4"#))
    }

    private func itemIds(_ page: JSONValue) -> [Int64] {
        page["params"]?["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
    }

    func testAServerKilledMidWalkResumesWithEveryItemExactlyOnce() throws {
        let directory = try temporaryDirectory()
        try makePages(directory)
        let fifoPath = "\(directory)/pages/\(stuck).json"
        try FileManager.default.removeItem(atPath: fifoPath)
        let fifo = try makeFifo(fifoPath)

        var delivered: [Int64] = []
        let server = try startServer(arguments: ["--state", "walk.state"], in: directory)
        try server.request("1", "loadAll", #"{"collection": "c"}"#)
        for page in 1..<stuck {
            let notification = try server.notification("page")
            XCTAssertEqual(notification["params"]?["page"], .int(Int64(page)), "pages land in order")
            delivered += itemIds(notification)
        }
        // Page 6 is being read (pages after it may be read already): the server dies.
        let writer = try waitForReader(of: fifoPath)
        server.sendSignal(SIGKILL)
        XCTAssertEqual(try server.waitForExit(), 128 + SIGKILL)
        close(writer)
        try fifo.replace(withFile: pageText(stuck))

        let restarted = try startServer(arguments: ["--state", "walk.state"], in: directory)
        try restarted.request("1", "status", #"{"collection": "c"}"#)
        let count = (stuck - 1) * size
        try expectMatch(restarted.reply("1"), rpcResult(1, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":\#(stuck),"count":\#(count),"pages":\#(stuck - 1),"lastError":null}"#))
        try restarted.request("2", "loadAll", #"{"collection": "c"}"#)
        for page in stuck...pages {
            let notification = try restarted.notification("page")
            XCTAssertEqual(notification["params"]?["page"], .int(Int64(page)))
            delivered += itemIds(notification)
        }
        try expectMatch(restarted.reply("2"), rpcResult(2, #"{"collection":"c","pages":\#(pages),"count":\#(pages * size),"hasNext":false,"lastId":null}"#))
        XCTAssertEqual(delivered, Array(1...Int64(pages * size)), "every item exactly once, in order")
        try restarted.finish()
    }

    func testAllWithConcurrencyPrintsEveryItemOnceInOrder() throws {
        let directory = try temporaryDirectory()
        try makePages(directory)
        let run = try runNextpage(["all", "c"], in: directory)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try ids(ofLines: run.lines), Array(1...Int64(pages * size)))
    }
}
