import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--sequential` (docs/cli.md): each message is answered, its notifications
/// sent first, before the next one is read, so a file of requests gets the
/// replies an interactive session gets.
final class SequentialTests: EndToEndTestCase {
    /// The README's 30-second session over the built-in demo.
    static let session = [
        #"{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"demo"}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"demo"}}"#,
        #"{"jsonrpc":"2.0","id":3,"method":"items","params":{"collection":"demo","offset":10,"limit":2}}"#,
        #"{"jsonrpc":"2.0","id":4,"method":"loadAll","params":{"collection":"demo","maxPages":2}}"#,
    ]

    func testTheReadmeSessionFromAFileGetsTheRepliesOfTheInteractiveSession() throws {
        // Interactive: each request is sent once the reply before it has arrived.
        let interactive = try startServer()
        for (index, request) in Self.session.enumerated() {
            try interactive.send(request)
            if index == 3 {
                _ = try interactive.notification("page")
                _ = try interactive.notification("page")
            }
            _ = try interactive.reply("\(index + 1)")
        }
        try interactive.finish()

        // From a file, read as fast as the server likes.
        let directory = try temporaryDirectory()
        try writeFile(directory + "/requests.jsonl", Self.session.joined(separator: "\n") + "\n")
        let piped = try startServer(arguments: ["--sequential"], in: directory, stdinFile: directory + "/requests.jsonl")
        let status = try piped.reply("2")
        let items = try piped.reply("3")
        _ = try piped.reply("1")
        _ = try piped.notification("page")
        _ = try piped.notification("page")
        _ = try piped.reply("4")
        try piped.finish()

        XCTAssertEqual(piped.stdoutText, interactive.stdoutText, "the same replies, byte for byte and in the same order")
        try expectMatch(status, #"{"jsonrpc":"2.0","id":2,"result":{"collection":"demo","hasNext":true,"isLoading":false,"lastId":"page-2","count":25,"pages":1,"lastError":null}}"#)
        XCTAssertEqual(items["result"]?["items"]?[0]?["id"], JSONValue.int(11))
        XCTAssertEqual(items["result"]?["items"]?[1]?["id"], JSONValue.int(12))
        let lines = piped.stdoutText.split(separator: "\n").map { try? JSONValue.parse(String($0)) }
        XCTAssertEqual(lines.map { $0?["id"] ?? $0?["method"] }, [.int(1), .int(2), .int(3), .string("page"), .string("page"), .int(4)],
                       "replies in the order of the requests, each request's notifications before its reply")
    }

    func testABatchRunsItsMembersOneAfterAnother() throws {
        let server = try startServer(arguments: ["--sequential"])
        try server.send(#"[{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"demo"}},"#
            + #"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"demo"}},"#
            + #""not a request","#
            + #"{"jsonrpc":"2.0","id":3,"method":"items","params":{"collection":"demo","offset":24}}]"#)
        let batch = try server.nextBatch()
        XCTAssertEqual(batch[0]?["id"], JSONValue.int(1))
        try expectMatch(batch[1] ?? .null, #"{"jsonrpc":"2.0","id":2,"result":{"collection":"demo","hasNext":true,"isLoading":false,"lastId":"page-2","count":25,"pages":1,"lastError":null}}"#)
        XCTAssertEqual(batch[2]?["error"]?["code"], JSONValue.int(-32600))
        XCTAssertEqual(batch[3]?["result"]?["items"]?[0]?["id"], JSONValue.int(25), "the item of the page the member before it loaded")
        try server.finish()
    }

    func testExitInsideABatchEndsTheServerOnceTheBatchIsAnswered() throws {
        let server = try startServer(arguments: ["--sequential"])
        try server.send(#"[{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"demo"}},"#
            + #"{"jsonrpc":"2.0","method":"exit"},"#
            + #"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"demo"}}]"#)
        let batch = try server.nextBatch()
        XCTAssertEqual(batch[0]?["result"]?["page"], JSONValue.int(1))
        XCTAssertEqual(batch[1]?["result"]?["count"], JSONValue.int(25))
        XCTAssertEqual(try server.waitForExit(), 1, "exit without shutdown, as in LSP")
    }

    func testSIGTERMDuringARequestDrainsIt() throws {
        let directory = try temporaryDirectory()
        let fifo = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#), arguments: ["--sequential", "--drain-timeout", "0.2"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        // Not read yet: the first page is still being fetched.
        try server.request("2", "status", #"{"collection": "c"}"#)
        // Returns once the server opens the page to read it: the fetch is in flight.
        let holder = open(fifo.path, O_WRONLY | O_CLOEXEC)
        defer { if holder >= 0 { close(holder) } }
        server.sendSignal(SIGTERM)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"error":{"code":-32801,"message":"Server is shutting down"}}"#)
        XCTAssertEqual(try server.waitForExit(), 0)
        XCTAssertEqual(server.takeAll { _ in true }.count, 0, "the request behind it was never read")
    }
}
