import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `loadAll` over pipes (docs/methods.md, The methods): a `page` notification for every page
/// before the reply, `$/progress` with a progressToken, limits, and
/// cancellation by `$/cancelRequest`.
final class LoadAllTests: EndToEndTestCase {
    func testEveryPageIsNotifiedBeforeTheReplyWithProgress() throws {
        let server = try startServer()
        try server.request("1", "loadAll", #"{"collection": "demo", "progressToken": "p"}"#)
        var ids: [Int64] = []
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"kind":"begin","pages":0,"count":0}}}"#)
        for page in 1...10 {
            let notification = try server.nextMessage()
            XCTAssertEqual(notification["method"], .string("page"), "page \(page) comes before anything else")
            XCTAssertEqual(notification["params"]?["page"], .int(Int64(page)))
            XCTAssertEqual(notification["params"]?["count"], .int(Int64(page * 25)))
            ids += notification["params"]?["items"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
            try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"kind":"report","pages":\#(page),"count":\#(page * 25)}}}"#)
        }
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"kind":"end","pages":10,"count":250}}}"#)
        try expectMatch(server.nextMessage(), rpcResult(1, #"{"collection":"demo","pages":10,"count":250,"hasNext":false,"lastId":null}"#))
        XCTAssertEqual(ids, Array(1...250))
        try server.finish()
    }

    func testAProgressTokenBesideParamsReportsProgressToo() throws {
        let server = try startServer()
        try server.send(#"{"jsonrpc":"2.0","id":1,"method":"loadAll","params":{"collection":"demo","maxPages":2},"progressToken":"beside"}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"beside","value":{"kind":"begin","pages":0,"count":0}}}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"demo","pages":2,"count":50,"hasNext":true,"lastId":"<any>"}"#))
        let kinds = server.takeAll { $0["method"] == .string("$/progress") }.map { $0["params"]?["value"]?["kind"] }
        XCTAssertEqual(kinds, [.string("report"), .string("report"), .string("end")])
        XCTAssertEqual(server.takeAll { $0["method"] == .string("page") }.count, 2)
        // A token of the wrong kind is a bad param, wherever it is.
        try server.send(#"{"jsonrpc":"2.0","id":2,"method":"loadAll","params":{"collection":"demo"},"progressToken":[1]}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"{"code":-32602,"message":"<string>","data":{"field":"progressToken","expected":"<string>"}}"#))
        // In `params._meta`, as MCP clients send it.
        try server.send(#"{"jsonrpc":"2.0","id":3,"method":"loadAll","params":{"collection":"demo","maxPages":1,"_meta":{"progressToken":7}}}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","method":"$/progress","params":{"token":7,"value":{"kind":"begin","pages":0,"count":0}}}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"demo","pages":3,"count":75,"hasNext":true,"lastId":"page-4"}"#))
        let progress = server.takeAll { $0["method"] == .string("$/progress") }
        XCTAssertEqual(progress.map { $0["params"]?["token"] }, [.int(7), .int(7)])
        XCTAssertEqual(server.takeAll { $0["method"] == .string("page") }.count, 1)
        try server.finish()
    }

    func testCancelRequestStopsALoadAllBetweenPagesAndKeepsWhatLanded() throws {
        let directory = try temporaryDirectory()
        try ShellCommandTests.writePages(5, size: 2, in: directory)
        try FileManager.default.removeItem(atPath: directory + "/pages/p3.json")
        let fifo = try makeFifo(directory + "/pages/p3.json")
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), in: directory)

        try server.request("1", "loadAll", #"{"collection": "c", "progressToken": 9}"#)
        try expectMatch(server.notification("page"), #"{"jsonrpc":"2.0","method":"page","params":{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"p2","count":2}}"#)
        try expectMatch(server.notification("page"), #"{"jsonrpc":"2.0","method":"page","params":{"collection":"c","items":[{"id":3},{"id":4}],"page":2,"hasNext":true,"lastId":"p3","count":4}}"#)
        // Page 3 is being fetched (the server opened the FIFO); cancel now.
        let writer = try waitForReader(of: fifo.path)
        try server.notify("$/cancelRequest", #"{"id": 1}"#)
        // The progress that began ends, before the reply (after it the token means nothing).
        var progress: [JSONValue?] = []
        while true {
            let message = try server.nextMessage()
            if message["method"] == .string("$/progress") {
                progress.append(message["params"]?["value"]?["kind"])
                continue
            }
            try expectMatch(message, #"{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}"#)
            break
        }
        close(writer)
        XCTAssertEqual(progress, [.string("begin"), .string("report"), .string("report"), .string("end")])

        // The two pages that landed stay; the cursor is where page 3 starts.
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"p3","count":4,"pages":2,"lastError":null}"#))
        try fifo.replace(withFile: #"{"items":[{"id":5},{"id":6}],"next_cursor":"p4"}"#)
        try server.request("3", "loadAll", #"{"collection": "c", "maxItems": 3}"#)
        try expectMatch(server.notification("page"), #"{"jsonrpc":"2.0","method":"page","params":{"collection":"c","items":[{"id":5},{"id":6}],"page":3,"hasNext":true,"lastId":"p4","count":6}}"#)
        try expectMatch(server.notification("page"), #"{"jsonrpc":"2.0","method":"page","params":{"collection":"c","items":[{"id":7},{"id":8}],"page":4,"hasNext":true,"lastId":"p5","count":8}}"#)
        // The limits count this call's pages and items; the result says where the collection stands.
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","pages":4,"count":8,"hasNext":true,"lastId":"p5"}"#))
        try server.request("4", "loadAll", #"{"collection": "c", "maxPages": 1}"#)
        _ = try server.notification("page")
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","pages":5,"count":10,"hasNext":false,"lastId":null}"#))
        try server.finish()
    }

    func testAFailedLoadAllEndsItsProgressBeforeTheError() throws {
        let directory = try temporaryDirectory()
        try ShellCommandTests.writePages(3, size: 2, in: directory)
        try #"{"items": [{"id": 3}, "#.write(toFile: directory + "/pages/p2.json", atomically: true, encoding: .utf8)
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), in: directory)

        try server.request("1", "loadAll", #"{"collection": "c", "progressToken": "t"}"#)
        var kinds: [JSONValue?] = []
        var pages = 0
        while true {
            let message = try server.nextMessage()
            if message["method"] == .string("$/progress") {
                kinds.append(message["params"]?["value"]?["kind"])
                continue
            }
            if message["method"] == .string("page") {
                pages += 1
                continue
            }
            try expectMatch(message, rpcError(1, #"{"code":-32003,"message":"<string>","data":"<any>"}"#))
            break
        }
        XCTAssertEqual(pages, 1)
        XCTAssertEqual(kinds, [.string("begin"), .string("report"), .string("end")])
        try server.finish()
    }
}
