import XCTest

/// Loop guards, `dedupe`, the `hasNext` pointer, empty pages and `loadAll`
/// limits over file sources (docs/methods.md, docs/config.md).
final class PagingOptionsTests: EndToEndTestCase {
    func testRepeatedCursorStopsWithTheLoadedPage() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: [
                "pages/first.json": #"{"items": [1], "next_cursor": "a"}"#,
                "pages/a.json": #"{"items": [2], "next_cursor": "a"}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[1],"page":1,"hasNext":true,"lastId":"a","count":1}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[2],"page":2,"hasNext":false,"lastId":null,"count":2,"lastError":"source returned the cursor 'a' again"}"#))
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":2,"pages":2,"lastError":"source returned the cursor 'a' again"}"#))
        // The repeated cursor is never fetched again.
        try FileManager.default.removeItem(atPath: server.directory + "/pages/a.json")
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[],"page":"<int>","hasNext":false,"lastId":null,"count":2}"#))
        try server.finish()
    }

    func testAnEmptyPageThatSaysThereIsMoreStopsLastIdAndOffsetWithAReasonThatSaysSo() throws {
        // These strategies move on by the items: an empty page leaves the
        // cursor where it was, and asking for it again would be a loop.
        let files = [
            "pages/first.json": #"{"items": [{"id": 1}, {"id": 2}], "more": true}"#,
            "pages/2.json": #"{"items": [], "more": true}"#,
        ]
        for strategy in ["lastId", "offset"] {
            let server = try startServer(config: fileConfig(paging: #"{"strategy": "\#(strategy)", "hasNext": "/more"}"#), files: files)
            try server.request("1", "loadNext", #"{"collection": "c"}"#)
            try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":2,"count":2}"#), strategy)
            try server.request("2", "loadNext", #"{"collection": "c"}"#)
            try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[],"page":2,"hasNext":false,"lastId":null,"count":2,"lastError":"the page is empty and leads back to the cursor '2' it was fetched with, although the source says there is more"}"#), strategy)
            try server.finish()
        }
    }

    func testRepeatedCursorWithOnRepeatedCursorErrorFails() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#, extra: #""onRepeatedCursor": "error""#),
            files: [
                "pages/first.json": #"{"items": [1], "next_cursor": "a"}"#,
                "pages/a.json": #"{"items": [2], "next_cursor": "a"}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        _ = try server.reply("1")
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"{"code":"<int>","message":"<string>","data":{"collection":"c","pointer?":"<string>","message?":"<string>"}}"#))
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":1,"pages":1,"lastError":"<contains:'a' again>"}"#))
        try server.finish()
    }

    func testEmptyPagesContinueUntilMaxEmptyPages() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#, extra: #""maxEmptyPages": 2"#),
            files: [
                "pages/first.json": #"{"items": [], "next_cursor": "e1"}"#,
                "pages/e1.json": #"{"items": [], "next_cursor": "e2"}"#,
                "pages/e2.json": #"{"items": [], "next_cursor": "e3"}"#,
                "pages/e3.json": #"{"items": [], "next_cursor": "e4"}"#,
            ])
        // An empty page is not the end while the source says there is more...
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[],"page":1,"hasNext":true,"lastId":"e1","count":0}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[],"page":2,"hasNext":true,"lastId":"e2","count":0}"#))
        // ...but more than maxEmptyPages of them in a row stop the collection.
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[],"page":3,"hasNext":false,"lastId":null,"count":0,"lastError":"stopped after 3 empty pages in a row"}"#))
        try server.request("4", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":0,"pages":3,"lastError":"<string>"}"#))
        try server.finish()
    }

    func testDedupeDropsItemsAlreadyDelivered() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "page", "items": ""}"#, extra: #""dedupe": true"#),
            files: [
                "pages/first.json": #"[{"id": 1}, {"id": 2}]"#,
                "pages/2.json": #"[{"id": 2}, {"id": 3}]"#,
                "pages/3.json": #"[]"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":2,"count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":3}],"page":2,"hasNext":true,"lastId":3,"count":3}"#))
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[],"page":3,"hasNext":false,"lastId":null,"count":3}"#))
        try server.request("4", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":1},{"id":2},{"id":3}],"count":3,"offset":0}"#))
        try server.finish()
    }

    func testHasNextPointerIsTheEndTest() throws {
        let server = try startServer(
            config: fileConfig(paging: #"""
                {"strategy": "cursor", "items": "/data/nodes", "next": "/data/pageInfo/endCursor",
                 "hasNext": "/data/pageInfo/hasNextPage"}
                """#),
            files: [
                "pages/first.json": #"{"data": {"nodes": ["a"], "pageInfo": {"endCursor": "c1", "hasNextPage": true}}}"#,
                // The last page still carries an endCursor.
                "pages/c1.json": #"{"data": {"nodes": ["b"], "pageInfo": {"endCursor": "c2", "hasNextPage": false}}}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":["a"],"page":1,"hasNext":true,"lastId":"c1","count":1}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":["b"],"page":2,"hasNext":false,"lastId":null,"count":2}"#))
        try server.finish()
    }

    func testAPageThatClaimsMoreWithoutACursorEndsAndSaysWhy() throws {
        try claimsMoreWithoutACursor(extra: "")
        // Not a repeated cursor: the page is delivered under `onRepeatedCursor: error` too.
        try claimsMoreWithoutACursor(extra: #""onRepeatedCursor": "error""#)
    }

    func claimsMoreWithoutACursor(extra: String) throws {
        let server = try startServer(
            config: fileConfig(paging: #"""
                {"strategy": "cursor", "items": "/data/nodes", "next": "/data/pageInfo/endCursor",
                 "hasNext": "/data/pageInfo/hasNextPage"}
                """#, extra: extra),
            files: ["pages/first.json": #"{"data": {"nodes": ["a"], "pageInfo": {"endCursor": null, "hasNextPage": true}}}"#])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"""
            {"collection":"c","items":["a"],"page":1,"hasNext":false,"lastId":null,"count":1,
             "lastError":"<contains:no cursor to continue from>"}
            """#))
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"""
            {"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":1,"pages":1,
             "lastError":"<contains:no cursor to continue from>"}
            """#))
        try server.finish()
    }

    func testMissingIdPointerOfTheLastIdStrategyIsNotUnderstood() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "lastId", "id": "/key"}"#),
            files: ["pages/first.json": #"{"items": [{"key": 1}, {"name": "no key"}]}"#])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"{"code":-32003,"message":"<string>","data":{"collection":"c","pointer":"/key","message?":"<string>"}}"#))
        try server.finish()
    }

    func testACycleOfCursorsEndsLoadAll() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: [
                "pages/first.json": #"{"items": [1], "next_cursor": "a"}"#,
                "pages/a.json": #"{"items": [2], "next_cursor": "b"}"#,
                "pages/b.json": #"{"items": [3], "next_cursor": "a"}"#,
            ])
        try server.request("1", "loadAll", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection?":"c","pages":3,"count":3,"hasNext":false,"lastId":null}"#))
        let pages = server.takeAll { $0["method"] == .string("page") }
        XCTAssertEqual(pages.map { $0["params"]?["items"] }, [.array([.int(1)]), .array([.int(2)]), .array([.int(3)])])
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"""
            {"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":3,"pages":3,
             "lastError":"source returned the cursor 'a' of an earlier page again (a cycle)"}
            """#))
        try server.finish()
    }

    func testLoadAllStopsAtMaxPagesAndLoadNextContinues() throws {
        let server = try startServer()
        try server.request("1", "loadAll", #"{"collection": "demo", "maxPages": 2}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection?":"demo","pages":2,"count":50,"hasNext":true,"lastId":"page-3"}"#))
        let pages = server.takeAll { $0["method"] == .string("page") }
        XCTAssertEqual(pages.map { $0["params"]?["page"] }, [.int(1), .int(2)], "one page notification per page, in order")
        try server.request("2", "loadNext", #"{"collection": "demo"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"demo","items":"<any>","page":3,"hasNext":true,"lastId":"page-4","count":75}"#))
        try server.finish()
    }
}
