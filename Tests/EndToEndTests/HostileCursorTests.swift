import XCTest

/// A cursor is never a path (docs/config.md): the file source percent-encodes it
/// byte by byte outside A-Z a-z 0-9 - _ and reads only inside its directory.
final class HostileCursorTests: EndToEndTestCase {
    func testRelativeCursorCannotLeaveTheDirectory() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: [
                "pages/first.json": #"{"items": [1], "next_cursor": "../secret"}"#,
                // One level above the pages: what a naive client would read.
                "secret.json": #"{"items": ["SECRET"], "next_cursor": null}"#,
            ])
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("1"), #"{"jsonrpc":"2.0","id":1,"result":{"collection":"c","items":[1],"page":1,"hasNext":true,"lastId":"../secret","count":1}}"#)
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), #"""
            {"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"<string>","data":{"collection":"c","attempts":"<int>",
             "retryable":"<bool>","message":"<contains:%2E%2E%2Fsecret.json>"}}}
            """#)
        // The encoded name inside the directory is the page.
        try writeFile(server.directory + "/pages/%2E%2E%2Fsecret.json", #"{"items": ["inside"], "next_cursor": null}"#)
        try server.request("3", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"result":{"collection":"c","items":["inside"],"page":2,"hasNext":false,"lastId":null,"count":2}}"#)
        try server.finish()
        XCTAssertFalse(server.stdoutText.contains("SECRET"), "the file outside the directory was read")
    }

    func testTraversalAbsoluteAndNonASCIICursorsAreEncoded() throws {
        let server = try startServer(
            config: fileConfig(paging: #"{"strategy": "cursor"}"#),
            files: [
                "pages/first.json": #"{"items": [1], "next_cursor": "../../etc/passwd"}"#,
                "pages/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.json": #"{"items": [2], "next_cursor": "/etc/passwd"}"#,
                "pages/%2Fetc%2Fpasswd.json": #"{"items": [3], "next_cursor": "é+ .~%"}"#,
            ])
        for (number, lastId) in [(1, "../../etc/passwd"), (2, "/etc/passwd"), (3, "é+ .~%")] {
            try server.request("\(number)", "loadNext", #"{"collection": "c"}"#)
            try expectMatch(server.reply("\(number)"), #"{"jsonrpc":"2.0","id":\#(number),"result":{"collection":"c","items":[\#(number)],"page":\#(number),"hasNext":true,"lastId":"\#(lastId)","count":\#(number)}}"#)
        }
        try server.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("4"), #"""
            {"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"<string>","data":{"collection":"c","attempts":"<int>",
             "retryable":"<bool>","message":"<contains:%C3%A9%2B%20%2E%7E%25.json>"}}}
            """#)
        try writeFile(server.directory + "/pages/%C3%A9%2B%20%2E%7E%25.json", #"{"items": [4], "next_cursor": "A-z_0-9"}"#)
        try server.request("5", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("5"), #"{"jsonrpc":"2.0","id":5,"result":{"collection":"c","items":[4],"page":4,"hasNext":true,"lastId":"A-z_0-9","count":4}}"#)
        // Unreserved bytes stay as they are.
        try writeFile(server.directory + "/pages/A-z_0-9.json", #"{"items": [5], "next_cursor": null}"#)
        try server.request("6", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("6"), #"{"jsonrpc":"2.0","id":6,"result":{"collection":"c","items":[5],"page":5,"hasNext":false,"lastId":null,"count":5}}"#)
        try server.finish()
    }
}
