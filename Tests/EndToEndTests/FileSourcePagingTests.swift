import XCTest

/// Paging over `file` sources with hand-written pages (docs/methods.md, docs/config.md).
final class FileSourcePagingTests: EndToEndTestCase {

    func testCursorStrategyAcrossThreePagesEndsOnNullCursor() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor", "items": "/items", "next": "/next_cursor"}"#),
            files: [
                "pages/first.json": #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c2"}"#,
                "pages/c2.json": #"{"items": [{"id": 3}], "next_cursor": "c3"}"#,
                "pages/c3.json": #"{"items": [{"id": 4}, {"id": 5}], "next_cursor": null}"#,
            ])
        try server.request("1", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"c2","count":2}"#))
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"id":3}],"page":2,"hasNext":true,"lastId":"c3","count":3}"#))
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":4},{"id":5}],"page":3,"hasNext":false,"lastId":null,"count":5}"#))

        // After the end: no upstream call (the files are gone), items [] and hasNext false.
        for name in ["first", "c2", "c3"] { try FileManager.default.removeItem(atPath: server.directory + "/pages/\(name).json") }
        try server.request("5", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","items":[],"page":"<int>","hasNext":false,"lastId":null,"count":5}"#))
        try server.request("6", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":5,"pages":3,"lastError":null}"#))
        try server.request("7", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("7"), rpcResult(7, #"{"collection":"c","items":[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5}],"count":5,"offset":0}"#))
        try server.finish()
    }

    func testCursorStrategyEndsOnEmptyOrMissingCursor() throws {
        let server = try startServer(
            config: #"""
                {"collections": {
                  "empty": {"source": {"type": "file", "dir": "a"}, "paging": {"strategy": "cursor"}},
                  "missing": {"source": {"type": "file", "dir": "b"}, "paging": {"strategy": "cursor", "next": "/meta/next"}}
                }}
                """#,
            files: [
                "a/first.json": #"{"items": ["x"], "next_cursor": ""}"#,
                "b/first.json": #"{"items": ["y"], "meta": {}}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "empty"}"#)
        try server.request("2", "loadNext", #"{"collection": "missing"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"empty","items":["x"],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"missing","items":["y"],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
    }

    /// docs/config.md: `lastId` reads `hasNext`, else a boolean at `/has_more`: without
    /// a `hasNext` of its own, a `lastId` collection reads a boolean
    /// `/has_more` (Stripe's lists), so a full last page asks for nothing more.
    func testLastIdStrategyEndsOnHasMoreWithoutAHasNextPointer() throws {
        let server = try startServer(
            config: #"""
                {"collections": {
                  "stripe": {"source": {"type": "file", "dir": "s"}, "paging": {"strategy": "lastId", "items": "/data"}},
                  "plain": {"source": {"type": "file", "dir": "p"}, "paging": {"strategy": "lastId"}}
                }}
                """#,
            files: [
                "s/first.json": #"{"object": "list", "data": [{"id": "cus_1"}, {"id": "cus_2"}], "has_more": true}"#,
                "s/cus_2.json": #"{"object": "list", "data": [{"id": "cus_3"}, {"id": "cus_4"}], "has_more": false}"#,
                // A has_more that is not a boolean is no end test: the page goes on as before.
                "p/first.json": #"{"items": [{"id": 1}, {"id": 2}], "has_more": "unknown"}"#,
                "p/2.json": #"{"items": []}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "stripe"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"stripe","items":[{"id":"cus_1"},{"id":"cus_2"}],"page":1,"hasNext":true,"lastId":"cus_2","count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "stripe"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"stripe","items":[{"id":"cus_3"},{"id":"cus_4"}],"page":2,"hasNext":false,"lastId":null,"count":4}"#))
        // No page after the last is asked for (there is no s/cus_4.json: asking would fail).
        try server.request("3", "loadNext", #"{"collection": "stripe"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"stripe","items":[],"page":"<int>","hasNext":false,"lastId":null,"count":4}"#))
        try server.request("4", "status", #"{"collection": "stripe"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"stripe","hasNext":false,"isLoading":false,"lastId":null,"count":4,"pages":2,"lastError":null}"#))

        try server.request("5", "loadNext", #"{"collection": "plain"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"plain","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":2,"count":2}"#))
        try server.request("6", "loadNext", #"{"collection": "plain"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"plain","items":[],"page":2,"hasNext":false,"lastId":null,"count":2}"#))
        try server.finish()
    }

    func testLastIdStrategyEndsOnShortPage() throws {
        let server = try startServer(
            config: #"""
                {"collections": {
                  "n": {"source": {"type": "file", "dir": "n"}, "paging": {"strategy": "lastId", "items": "/items", "id": "/id"}, "pageSize": 2},
                  "s": {"source": {"type": "file", "dir": "s"}, "paging": {"strategy": "lastId", "items": "/results", "id": "/key/name"}}
                }}
                """#,
            files: [
                "n/first.json": #"{"items": [{"id": 10, "v": "a"}, {"id": 11, "v": "b"}]}"#,
                "n/11.json": #"{"items": [{"id": 12}, {"id": 13}]}"#,
                "n/13.json": #"{"items": [{"id": 14}]}"#,
                "s/first.json": #"{"results": [{"key": {"name": "x/1"}}, {"key": {"name": "x/2"}}]}"#,
                "s/x%2F2.json": #"{"results": []}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "n"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"n","items":[{"id":10,"v":"a"},{"id":11,"v":"b"}],"page":1,"hasNext":true,"lastId":11,"count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "n"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"n","items":[{"id":12},{"id":13}],"page":2,"hasNext":true,"lastId":13,"count":4}"#))
        try server.request("3", "loadNext", #"{"collection": "n"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"n","items":[{"id":14}],"page":3,"hasNext":false,"lastId":null,"count":5}"#))

        // String ids (read through a deeper pointer) and the end by an empty page.
        try server.request("4", "loadNext", #"{"collection": "s"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"s","items":[{"key":{"name":"x/1"}},{"key":{"name":"x/2"}}],"page":1,"hasNext":true,"lastId":"x/2","count":2}"#))
        try server.request("5", "loadNext", #"{"collection": "s"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"s","items":[],"page":2,"hasNext":false,"lastId":null,"count":2}"#))
        try server.finish()
    }

    func testPageStrategyEndsByTotal() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "page", "items": "/data", "total": "/meta/total"}"#),
            files: [
                "pages/first.json": #"{"data": ["a", "b"], "meta": {"total": 6}}"#,
                "pages/2.json": #"{"data": ["c", "d"], "meta": {"total": 6}}"#,
                "pages/3.json": #"{"data": ["e", "f"], "meta": {"total": 6}}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":["a","b"],"page":1,"hasNext":true,"lastId":2,"count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":["c","d"],"page":2,"hasNext":true,"lastId":3,"count":4}"#))
        // A full page, but the total is reached: the end (4.json does not exist).
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":["e","f"],"page":3,"hasNext":false,"lastId":null,"count":6}"#))
        try server.finish()
    }

    func testPageStrategyEndsByTotalAfterARestartAndAfterAResume() throws {
        let files = [
            "pages/first.json": #"{"items": [1, 2, 3], "total": 6}"#,
            "pages/2.json": #"{"items": [4, 5, 6], "total": 6}"#,
            "pages/3.json": #"{"items": ["beyond the total"], "total": 6}"#,
        ]
        let config = fileConfig(paging: #"{"strategy": "page", "total": "/total"}"#)
        // A restarted server counts the items its state file says were loaded.
        let first = try startServer(config: config, files: files, arguments: ["--state", "run.state"])
        try first.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(first.reply("1"), rpcResult(1, #"{"collection":"c","items":[1,2,3],"page":1,"hasNext":true,"lastId":2,"count":3}"#))
        try first.finish()
        let second = try startServer(arguments: ["--state", "run.state"], in: first.directory)
        try second.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(second.reply("1"), rpcResult(1, #"{"collection":"c","items":[4,5,6],"page":2,"hasNext":false,"lastId":null,"count":6}"#))
        // A resume from a cursor alone takes the pages before as long as this one.
        try second.request("2", "load", #"{"collection": "c", "lastId": 2}"#)
        try expectMatch(second.reply("2"), rpcResult(2, #"{"collection":"c","items":[4,5,6],"page":1,"hasNext":false,"lastId":null,"count":3}"#))
        try second.finish()
    }

    func testPageStrategyWithoutPageSizeEndsOnAShortPage() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "page"}"#),
            files: [
                "pages/first.json": #"{"items": [1, 2, 3]}"#,
                "pages/2.json": #"{"items": [4, 5, 6]}"#,
                "pages/3.json": #"{"items": [7, 8]}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[1,2,3],"page":1,"hasNext":true,"lastId":2,"count":3}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[4,5,6],"page":2,"hasNext":true,"lastId":3,"count":6}"#))
        // Shorter than the pages before it: the last (4.json does not exist, and is not asked for).
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[7,8],"page":3,"hasNext":false,"lastId":null,"count":8}"#))
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[],"page":3,"hasNext":false,"lastId":null,"count":8}"#))
        try server.request("5", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":8,"pages":3,"lastError":null}"#))
        try server.finish()
    }

    func testOffsetStrategyEndsOnShortPage() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "offset", "items": ""}"#, extra: #""pageSize": 2"#),
            files: [
                "pages/first.json": #"[{"n": 1}, {"n": 2}]"#,
                "pages/2.json": #"[{"n": 3}, {"n": 4}]"#,
                "pages/4.json": #"[{"n": 5}]"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"n":1},{"n":2}],"page":1,"hasNext":true,"lastId":2,"count":2}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"n":3},{"n":4}],"page":2,"hasNext":true,"lastId":4,"count":4}"#))
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"n":5}],"page":3,"hasNext":false,"lastId":null,"count":5}"#))
        try server.finish()
    }

    func testOffsetStrategyWithoutPageSizeEndsOnAShortPage() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "offset", "items": ""}"#),
            files: [
                "pages/first.json": #"[1, 2, 3]"#,
                "pages/3.json": #"[4, 5, 6]"#,
                "pages/6.json": #"[7, 8]"#,
            ])
        // Asked for all at once, so that pages are read ahead of the replies:
        // the third is shorter than those before it and is the last
        // (8.json does not exist, and is neither read ahead nor asked for).
        for id in 1...4 { try server.request("\(id)", "loadNext", #"{"collection": "c"}"#) }
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[1,2,3],"page":1,"hasNext":true,"lastId":3,"count":3}"#))
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[4,5,6],"page":2,"hasNext":true,"lastId":6,"count":6}"#))
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[7,8],"page":3,"hasNext":false,"lastId":null,"count":8}"#))
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[],"page":3,"hasNext":false,"lastId":null,"count":8}"#))
        try server.request("5", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":8,"pages":3,"lastError":null}"#))
        try server.finish()
    }

    static let fivePages = [
        "pages/first.json": #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "b"}"#,
        "pages/b.json": #"{"items": [{"id": 3}, {"id": 4}], "next_cursor": "c"}"#,
        "pages/c.json": #"{"items": [{"id": 5}], "next_cursor": null}"#,
    ]

    func testItemsWithOffsetAndLimit() throws {
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), files: Self.fivePages)
        try server.request("1", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[],"count":0,"offset":0}"#))
        for id in 2...4 {
            try server.request("\(id)", "loadNext", #"{"collection": "c"}"#)
            _ = try server.reply("\(id)")
        }
        try server.request("5", "items", #"{"collection": "c", "offset": 1, "limit": 2}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","items":[{"id":2},{"id":3}],"count":5,"offset":1}"#))
        try server.request("6", "items", #"{"collection": "c", "offset": 4, "limit": 10}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","items":[{"id":5}],"count":5,"offset":4}"#))
        try server.request("7", "items", #"{"collection": "c", "offset": 1, "limit": 0}"#)
        try expectMatch(server.reply("7"), rpcResult(7, #"{"collection":"c","items":[],"count":5,"offset":1}"#))
        try server.request("8", "items", #"{"collection": "c", "limit": 3}"#)
        try expectMatch(server.reply("8"), rpcResult(8, #"{"collection":"c","items":[{"id":1},{"id":2},{"id":3}],"count":5,"offset":0}"#))
        try server.request("9", "items", #"{"collection": "c", "offset": -1}"#)
        try expectMatch(server.reply("9"), rpcError(9, #"{"code":-32602,"message":"<string>","data":{"field":"offset","expected":"<string>"}}"#))
        try server.request("10", "items", #"{"collection": "c", "limit": "all"}"#)
        try expectMatch(server.reply("10"), rpcError(10, #"{"code":-32602,"message":"<string>","data":{"field":"limit","expected":"<string>"}}"#))
        // Offsets and limits up to 2^63 - 1 are answered, not overflowed.
        let huge = Int.max
        try server.request("11", "items", #"{"collection": "c", "offset": 1, "limit": \#(huge)}"#)
        try expectMatch(server.reply("11"), rpcResult(11, #"{"collection":"c","items":[{"id":2},{"id":3},{"id":4},{"id":5}],"count":5,"offset":1}"#))
        try server.request("12", "items", #"{"collection": "c", "offset": \#(huge), "limit": \#(huge)}"#)
        try expectMatch(server.reply("12"), rpcResult(12, #"{"collection":"c","items":[],"count":5,"offset":5}"#))
        try server.request("13", "items", #"{"collection": "c", "offset": \#(1 << 62), "limit": \#(1 << 62)}"#)
        try expectMatch(server.reply("13"), rpcResult(13, #"{"collection":"c","items":[],"count":5,"offset":5}"#))
        try server.finish()
    }

    func testMaxItemsKeepsTheNewestWithAbsoluteOffsets() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#, extra: #""maxItems": 5"#),
            files: [
                "pages/first.json": #"{"items": [{"id": 1}, {"id": 2}, {"id": 3}], "next_cursor": "p2"}"#,
                "pages/p2.json": #"{"items": [{"id": 4}, {"id": 5}, {"id": 6}], "next_cursor": "p3"}"#,
                "pages/p3.json": #"{"items": [{"id": 7}, {"id": 8}, {"id": 9}], "next_cursor": null}"#,
            ])
        // Pages still flow past the limit.
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1},{"id":2},{"id":3}],"page":1,"hasNext":true,"lastId":"p2","count":3}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":4},{"id":5},{"id":6}],"page":2,"hasNext":true,"lastId":"p3","count":6}"#))
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"id":7},{"id":8},{"id":9}],"page":3,"hasNext":false,"lastId":null,"count":9}"#))
        try server.request("4", "items", #"{"collection": "c", "offset": 0}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":5},{"id":6},{"id":7},{"id":8},{"id":9}],"count":9,"offset":4}"#))
        try server.request("5", "items", #"{"collection": "c", "offset": 6, "limit": 2}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","items":[{"id":7},{"id":8}],"count":9,"offset":6}"#))
        try server.request("6", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":9,"pages":3,"lastError":null}"#))
        try server.finish()
    }

    func testMissingPageFileIsAnUpstreamErrorAndTheRetryGetsTheSamePage() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: ["pages/first.json": #"{"items": [{"id": 1}], "next_cursor": "two"}"#])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1}],"page":1,"hasNext":true,"lastId":"two","count":1}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"""
            {"code":-32002,"message":"<string>","data":{"collection":"c","attempts":"<int>","retryable":"<bool>",
             "message":"<contains:two.json>"}}
            """#))
        // The cursor stayed; lastError records the failure.
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"two","count":1,"pages":1,"lastError":"<contains:two.json>"}"#))
        try writeFile(server.directory + "/pages/two.json", #"{"items": [{"id": 2}], "next_cursor": null}"#)
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":2}],"page":2,"hasNext":false,"lastId":null,"count":2}"#))
        try server.finish()
    }

    func testAPageFileOverMaxBodyBytesIsAnUpstreamErrorAndTheServerGoesOn() throws {
        let first = #"{"items": [{"id": 1}], "next_cursor": "big"}"#
        let config = #"{"collections": {"c": {"source": {"type": "file", "dir": "pages", "maxBodyBytes": \#(first.utf8.count)}, "paging": {"strategy": "cursor"}}}}"#
        let server = try startServer(
            config: config,
            files: ["pages/first.json": first, "pages/big.json": #"{"items": [{"id": 2}, {"id": 3}], "next_cursor": null}"#])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"collection":"c","items":[{"id":1}],"page":1,"hasNext":true,"lastId":"big","count":1}"#))
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"""
            {"code":-32002,"message":"<string>","data":{"collection":"c","attempts":"<int>","retryable":false,
             "message":"<contains:'big.json'>"}}
            """#))
        // The cursor stayed; lastError says why.
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"big","count":1,"pages":1,"lastError":"<contains:larger than maxBodyBytes (\#(first.utf8.count) bytes)>"}"#))
        try server.finish()
    }

    func testMalformedPageIsNotUnderstoodWithLineAndColumn() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: ["pages/first.json": "{\"items\": [1,\n  2,, 3]}\n"])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        let reply = try server.reply("1")
        try expectMatch(reply, rpcError(1, #"""
            {"code":-32003,"message":"<string>","data":{"collection":"c","line":2,"column":"<int>","message?":"<string>"}}
            """#))
        let column = try XCTUnwrap(reply["error"]?["data"]?["column"]?.intValue)
        XCTAssert((4...6).contains(column), "column \(column) should point at the second comma of line 2")
        // A failed first page leaves a fresh collection with lastError set.
        try server.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":"<string>"}"#))
        try server.finish()
    }

    func testMissingItemsPointerIsNotUnderstoodNamingThePointer() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor", "items": "/data/items"}"#),
            files: ["pages/first.json": #"{"data": {"list": [1, 2]}, "next_cursor": "x"}"#])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"""
            {"code":-32003,"message":"<string>","data":{"collection":"c","pointer":"/data/items","message?":"<string>"}}
            """#))
        try server.finish()
    }

    func testFailedFirstPageOfAReloadLeavesAFreshCollection() throws {
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), files: Self.fivePages)
        for id in 1...2 {
            try server.request("\(id)", "loadNext", #"{"collection": "c"}"#)
            _ = try server.reply("\(id)")
        }
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"c","count":4,"pages":2,"lastError":null}"#))
        try writeFile(server.directory + "/pages/first.json", "this is not json")
        try server.request("4", "load", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), rpcError(4, #"""
            {"code":-32003,"message":"<string>","data":{"collection":"c","line":1,"column":"<int>","message?":"<string>"}}
            """#))
        try server.request("5", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), rpcResult(5, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":"<string>"}"#))
        try server.request("6", "items", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"c","items":[],"count":0,"offset":0}"#))
        // A good first page again: paging starts over.
        try writeFile(server.directory + "/pages/first.json", Self.fivePages["pages/first.json"]!)
        try server.request("7", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("7"), rpcResult(7, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"b","count":2}"#))
        try server.finish()
    }

    func testLoadRefreshesAndLoadWithLastIdResumes() throws {
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), files: Self.fivePages)
        for id in 1...2 {
            try server.request("\(id)", "loadNext", #"{"collection": "c"}"#)
            _ = try server.reply("\(id)")
        }
        try server.request("3", "load", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection":"c","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"b","count":2}"#))
        try server.request("4", "load", #"{"collection": "c", "lastId": "c"}"#)
        try expectMatch(server.reply("4"), rpcResult(4, #"{"collection":"c","items":[{"id":5}],"page":"<int>","hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
    }
}
