import Foundation
import XCTest

/// A client that sends thousands of requests at once (a file on stdin, a
/// script that writes them all before reading): every request is answered
/// exactly once, in page order, and end of input does not cut the queue
/// short while it keeps being answered.
final class BulkInputTests: EndToEndTestCase {
    /// `pages` one-item pages `first.json`, `p2.json`, ... linked by `next_cursor`.
    private func writePages(_ directory: String, pages: Int) throws {
        for page in 1...pages {
            let next = page < pages ? #""p\#(page + 1)""# : "null"
            let name = page == 1 ? "first" : "p\(page)"
            try writeFile(directory + "/pages/\(name).json", #"{"items": [{"id": \#(page)}], "next_cursor": \#(next)}"#)
        }
    }

    func testThousandsOfQueuedRequestsFromAFileAreAllAnsweredAfterEndOfInput() throws {
        let pages = 3000
        let directory = try temporaryDirectory()
        try writePages(directory, pages: pages)
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))
        var input = ""
        for id in 1...pages + 1 {
            input += #"{"jsonrpc":"2.0","id":\#(id),"method":"loadNext","params":{"collection":"c"}}"# + "\n"
        }
        try writeFile(directory + "/requests.jsonl", input)
        // The whole queue takes longer than the drain timeout; it keeps being answered, so none is cut off.
        let server = try startServer(arguments: ["--drain-timeout", "0.25"], in: directory, stdinFile: directory + "/requests.jsonl")
        server.timeout = 60
        for id in 1...pages {
            let reply = try server.reply("\(id)")
            XCTAssertEqual(reply["result"]?["items"]?[0]?["id"], JSONValue.int(Int64(id)), "request \(id) gets page \(id)")
            XCTAssertEqual(reply["result"]?["page"], JSONValue.int(Int64(id)))
        }
        let last = try server.reply("\(pages + 1)")
        XCTAssertEqual(last["result"]?["items"], JSONValue.array([]), "after the end: no items")
        XCTAssertEqual(last["result"]?["hasNext"], JSONValue.bool(false))
        try server.finish()
    }
}
