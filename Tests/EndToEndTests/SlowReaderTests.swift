import Foundation
import XCTest

/// A client that stops reading its replies while it keeps sending requests
/// (docs/methods.md, Transport): the server stops reading stdin once too many replies wait,
/// its memory stays bounded whatever was asked, and once the client reads
/// again every request is answered, exactly once. (`scripts/soak` runs a
/// 10-second version of this inside its long session.)
final class SlowReaderTests: EndToEndTestCase {
    /// One page of `items` items of about `itemBytes` bytes each.
    private func bigPageServer(items: Int, itemBytes: Int, arguments: [String] = []) throws -> ServerHarness {
        let directory = try temporaryDirectory()
        let text = String(repeating: "t", count: itemBytes)
        let list = (1...items).map { #"{"id":\#($0),"text":"\#(text)"}"# }.joined(separator: ",")
        try writeFile(directory + "/pages/first.json", #"{"items": [\#(list)], "next_cursor": null}"#)
        try writeFile(directory + "/pages/nothing.json", #"{"items": [], "next_cursor": null}"#)
        return try startServer(config: fileConfig("big", paging: #"{"strategy": "cursor"}"#), arguments: arguments, in: directory)
    }

    func testRepliesWaitingStopTheReadingAndMemoryStaysBounded() throws {
        // Each `items` reply is about 100 kB; 600 of them would be 60 MB.
        let server = try bigPageServer(items: 20, itemBytes: 5000)
        server.timeout = 60
        try server.request("0", "loadNext", #"{"collection": "big"}"#)
        try expectMatch(server.reply("0"), rpcResult(0, #"{"collection":"big","items":"<any>","page":1,"hasNext":false,"lastId":null,"count":20}"#))
        let before = try XCTUnwrap(processStatus(server.pid, "VmRSS"))

        // Requests of about 1 kB (a pipe holds 64 of them), 600 in all.
        let count = 600
        let padding = String(repeating: " ", count: 1000)
        var requests: [UInt8] = []
        for id in 1...count {
            requests += Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"items",\#(padding)"params":{"collection":"big"}}"#.utf8) + [0x0A]
        }
        server.pauseReading()
        // The first 30 requests make 3 MB of replies: once the pipe to the
        // client is full, the rest of them wait in the server.
        let firstBatch = requests.split(separator: 0x0A, maxSplits: 30, omittingEmptySubsequences: false)
            .prefix(30).reduce(0) { $0 + $1.count + 1 }
        try server.sendRaw(Array(requests[..<firstBatch]))
        XCTAssertTrue(server.waitUntilStdoutIsFull(timeout: 30), "the server's replies did not fill the pipe")
        // Give the server time to build the rest of the 30 replies.
        Thread.sleep(forTimeInterval: 1)
        // Requests keep coming until the server has taken none for 2 s.
        let written = firstBatch + (try server.sendRawUntilStalled(Array(requests[firstBatch...]), quiet: 2))
        let during = try XCTUnwrap(processStatus(server.pid, "VmRSS"))
        XCTAssertLessThan(written, requests.count, "the server kept reading requests while nobody read its replies")
        assertMemoryBound(during - before, 24 << 20, "RSS growth while replies wait (\(before) bytes before)")

        server.resumeReading()
        try server.sendRaw(Array(requests[written...]))
        for id in 1...count {
            let reply = try server.reply("\(id)")
            try expectMatch(reply, rpcResult(id, #"{"collection":"big","items":"<any>","count":20,"offset":0}"#))
            XCTAssertEqual(reply["result"]?["items"]?.arrayValue?.count, 20)
        }
        try server.finish()
    }

    func testLoadAllWaitsForTheReaderBetweenPages() throws {
        // 300 pages of about 50 kB, each sent as a `page` notification: 15 MB
        // that must not pile up while nobody reads.
        let directory = try temporaryDirectory()
        let text = String(repeating: "t", count: 5000)
        let pages = 300
        for page in 1...pages {
            let items = (1...10).map { #"{"id":\#((page - 1) * 10 + $0),"text":"\#(text)"}"# }.joined(separator: ",")
            let next = page < pages ? #""p\#(page + 1)""# : "null"
            try writeFile(directory + "/pages/\(page == 1 ? "first" : "p\(page)").json", #"{"items": [\#(items)], "next_cursor": \#(next)}"#)
        }
        let server = try startServer(config: fileConfig("many", paging: #"{"strategy": "cursor"}"#), arguments: ["--state", "run.state"], in: directory)
        server.timeout = 60
        server.pauseReading()
        try server.request("1", "loadAll", #"{"collection": "many"}"#)
        // Until a megabyte of replies waits, the server reads on: on a busy
        // machine the blank lines below could all be read before loadAll has
        // written that much. So first wait until loadAll stops between pages
        // (its saved page count holds still for a second).
        var settled = (pages: -1, since: Date())
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date().timeIntervalSince(settled.since) < 1 {
            let state = try? JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: directory + "/run.state")))
            let pages = Int(state?["collections"]?["many"]?["pages"]?.intValue ?? -1)
            if pages != settled.pages { settled = (pages, Date()) }
            guard Date() < deadline else { return XCTFail("loadAll never stopped for the reader (at page \(pages))") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertGreaterThan(settled.pages, 0, "loadAll wrote pages before stopping")
        // Blank lines keep coming until the server has taken none for 2 s.
        let padding = [UInt8](repeating: UInt8(ascii: "\n"), count: 1 << 20)
        let written = try server.sendRawUntilStalled(padding, quiet: 2)
        XCTAssertLessThan(written, padding.count, "the server kept reading while nobody read its replies")
        // The state file tells how far loadAll got while nobody read: about
        // a megabyte of pages (the output limit), not all of them.
        let saved = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: directory + "/run.state")))
        let savedPages = try XCTUnwrap(saved["collections"]?["many"]?["pages"]?.intValue)
        XCTAssertLessThan(savedPages, 100, "loadAll ran ahead of the reader")
        server.resumeReading()
        try server.sendRaw(Array(padding[written...]))
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"many","pages":300,"count":3000,"hasNext":false,"lastId":null}"#))
        for page in 1...pages {
            try expectMatch(server.notification("page"), #"{"jsonrpc":"2.0","method":"page","params":{"collection":"many","items":"<any>","page":\#(page),"hasNext":"<bool>","lastId":"<any>","count":\#(page * 10)}}"#)
        }
        try server.finish()
    }
}
