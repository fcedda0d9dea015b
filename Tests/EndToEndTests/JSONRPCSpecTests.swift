import XCTest

/// The examples of the JSON-RPC 2.0 specification (§7), adapted to nextpage's
/// methods, each run in both framings (newline-delimited JSON and LSP
/// Content-Length), against the built-in `demo` collection.
final class JSONRPCSpecTests: EndToEndTestCase {
    static let freshDemo = #"{"collection":"demo","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#
    static let invalidRequest = #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"<string>","data":"<any>"}}"#

    // MARK: rpc call with named parameters

    func paramsByName(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"{"jsonrpc": "2.0", "method": "status", "params": {"collection": "demo"}, "id": 3}"#)
        try expectMatch(server.reply("3"), #"{"jsonrpc":"2.0","id":3,"result":\#(Self.freshDemo)}"#)

        try server.send(#"{"jsonrpc": "2.0", "method": "loadNext", "params": {"collection": "demo"}, "id": "4"}"#)
        let page = try server.reply(#""4""#)
        try expectDemoPage(page, id: #""4""#, number: 1)

        // Named params in any order.
        try server.send(#"{"jsonrpc": "2.0", "method": "items", "params": {"limit": 5, "offset": 24, "collection": "demo"}, "id": 5}"#)
        let last = try XCTUnwrap(page["result"]?["items"]?[24])
        try expectMatch(server.reply("5"), .object([
            "jsonrpc": .string("2.0"), "id": .int(5),
            "result": .object(["collection": .string("demo"), "items": .array([last]), "count": .int(25), "offset": .int(24)]),
        ]))
        try server.finish()
    }

    func testParamsByName_ndjson() throws { try paramsByName(.ndjson) }
    func testParamsByName_lsp() throws { try paramsByName(.lsp) }

    // MARK: a notification

    func notification(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        // A notification runs (it loads page 1) but is never answered...
        try server.send(#"{"jsonrpc": "2.0", "method": "loadNext", "params": {"collection": "demo"}}"#)
        // ...not even with an error: unknown method, positional params, bad params, no params.
        try server.send(#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#)
        try server.send(#"{"jsonrpc": "2.0", "method": "status", "params": {"collection": 5}}"#)
        try server.send(#"{"jsonrpc": "2.0", "method": "foobar"}"#)
        try server.send(#"{"jsonrpc": "2.0", "method": "loadNext", "params": {"collection": "demo"}, "id": 1}"#)
        // The only reply is the request's, and its page comes after the notification's.
        let first = try server.nextMessage()
        try expectDemoPage(first, id: "1", number: 2)
        try server.finish()
    }

    func testNotification_ndjson() throws { try notification(.ndjson) }
    func testNotification_lsp() throws { try notification(.lsp) }

    // MARK: a non-existent method

    func unknownMethod(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#)
        try expectMatch(server.reply(#""1""#),
                        #"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"<string>","data":{"method":"foobar"}}}"#)
        try server.send(#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 2}"#)
        try expectMatch(server.reply("2"),
                        #"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"<string>","data":{"method":"subtract"}}}"#)
        try server.finish()
    }

    func testUnknownMethod_ndjson() throws { try unknownMethod(.ndjson) }
    func testUnknownMethod_lsp() throws { try unknownMethod(.lsp) }

    // MARK: invalid JSON

    func invalidJSON(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)
        try expectMatch(server.nextMessage(), #"""
            {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>",
             "data":{"line":1,"column":45,"position":45,"text":"<string>"}}}
            """#)
        // The stream is still in sync.
        try server.send(#"{"jsonrpc": "2.0", "method": "status", "params": {"collection": "demo"}, "id": 2}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":2,"result":\#(Self.freshDemo)}"#)
        try server.finish()
    }

    func testInvalidJSON_ndjson() throws { try invalidJSON(.ndjson) }
    func testInvalidJSON_lsp() throws { try invalidJSON(.lsp) }

    // MARK: invalid Request object

    func invalidRequestObject(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "method 1")
        try server.send(#"{"jsonrpc": "1.0", "method": "status", "params": {"collection": "demo"}}"#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "jsonrpc 1.0")
        try server.send(#"{"method": "status", "params": {"collection": "demo"}}"#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "no jsonrpc member")
        try server.send(#""hello""#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "a string")
        try server.send(#"{"jsonrpc": "2.0", "method": "status", "id": {"a": 1}}"#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "an object id")
        // An id that can be read is the reply's id (JSON-RPC 2.0: null only
        // when there was an error in detecting it), so a client can match it.
        try server.send(#"{"jsonrpc": "1.0", "method": "status", "params": {"collection": "demo"}, "id": 41}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":41,"error":{"code":-32600,"message":"<string>","data":"<any>"}}"#, "jsonrpc 1.0 with an id")
        try server.send(#"{"jsonrpc": "2.0", "id": "no-method"}"#)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":"no-method","error":{"code":-32600,"message":"<string>","data":"<any>"}}"#, "no method")
        try server.send(#"{"jsonrpc": "2.0", "method": "status", "params": "demo", "id": null}"#)
        try expectMatch(server.nextMessage(), Self.invalidRequest, "bad params with id null")
        try server.finish()
    }

    func testInvalidRequestObject_ndjson() throws { try invalidRequestObject(.ndjson) }
    func testInvalidRequestObject_lsp() throws { try invalidRequestObject(.lsp) }

    // MARK: batch, invalid JSON

    func batchInvalidJSON(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"""
            [
              {"jsonrpc": "2.0", "method": "status", "params": {"collection": "demo"}, "id": "1"},
              {"jsonrpc": "2.0", "method"
            ]
            """#.replacingOccurrences(of: "\n", with: " "))
        // One error object, not an array.
        try expectMatch(server.nextMessage(), #"""
            {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>",
             "data":{"line":1,"column":"<int>","position":"<int>","text":"<string>"}}}
            """#)
        try server.finish()
    }

    func testBatchInvalidJSON_ndjson() throws { try batchInvalidJSON(.ndjson) }
    func testBatchInvalidJSON_lsp() throws { try batchInvalidJSON(.lsp) }

    // MARK: empty array

    func emptyBatch(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send("[]")
        try expectMatch(server.nextMessage(), Self.invalidRequest)
        try server.finish()
    }

    func testEmptyBatch_ndjson() throws { try emptyBatch(.ndjson) }
    func testEmptyBatch_lsp() throws { try emptyBatch(.lsp) }

    // MARK: invalid batch, not empty

    func batchOfOneInvalid(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send("[1]")
        try expectMatch(server.nextMessage(), "[\(Self.invalidRequest)]")
        try server.finish()
    }

    func testBatchOfOneInvalid_ndjson() throws { try batchOfOneInvalid(.ndjson) }
    func testBatchOfOneInvalid_lsp() throws { try batchOfOneInvalid(.lsp) }

    // MARK: invalid batch

    func batchOfThreeInvalid(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send("[1,2,3]")
        try expectMatch(server.nextMessage(), "[\(Self.invalidRequest),\(Self.invalidRequest),\(Self.invalidRequest)]")
        try server.finish()
    }

    func testBatchOfThreeInvalid_ndjson() throws { try batchOfThreeInvalid(.ndjson) }
    func testBatchOfThreeInvalid_lsp() throws { try batchOfThreeInvalid(.lsp) }

    // MARK: batch, mixed

    func mixedBatch(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"""
            [
              {"jsonrpc": "2.0", "method": "status", "params": {"collection": "demo"}, "id": "1"},
              {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
              {"jsonrpc": "2.0", "method": "items", "params": {"collection": "demo", "limit": 2}, "id": "2"},
              {"foo": "boo"},
              {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
              {"jsonrpc": "2.0", "method": "collections", "id": "9"},
              {"jsonrpc": "2.0", "method": "status", "params": {"collection": "nope"}},
              {"jsonrpc": "2.0", "method": "status", "params": {"collection": 7}, "id": 10},
              {"jsonrpc": "2.0", "method": 7, "id": 11}
            ]
            """#.replacingOccurrences(of: "\n", with: " "))
        try expectUnorderedMatch(server.nextBatch(), [
            #"{"jsonrpc":"2.0","id":"1","result":\#(Self.freshDemo)}"#,
            #"{"jsonrpc":"2.0","id":"2","result":{"collection":"demo","items":[],"count":0,"offset":0}}"#,
            Self.invalidRequest,
            #"{"jsonrpc":"2.0","id":"5","error":{"code":-32601,"message":"<string>","data":{"method":"foo.get"}}}"#,
            #"{"jsonrpc":"2.0","id":"9","result":[\#(Self.freshDemo)]}"#,
            #"{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"<string>","data":{"field":"collection","expected":"<string>"}}}"#,
            #"{"jsonrpc":"2.0","id":11,"error":{"code":-32600,"message":"<string>","data":"<any>"}}"#,
        ])
        try server.finish()
    }

    func testMixedBatch_ndjson() throws { try mixedBatch(.ndjson) }
    func testMixedBatch_lsp() throws { try mixedBatch(.lsp) }

    // MARK: batch, all notifications

    func allNotificationBatch(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        try server.send(#"""
            [{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
             {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
             {"jsonrpc": "2.0", "method": "loadNext", "params": {"collection": "demo"}}]
            """#.replacingOccurrences(of: "\n", with: " "))
        try server.send(#"{"jsonrpc": "2.0", "method": "loadNext", "params": {"collection": "demo"}, "id": 1}"#)
        // Nothing for the batch: the first message is the reply to the request
        // that followed it, whose page comes after the batch's loadNext.
        try expectDemoPage(server.nextMessage(), id: "1", number: 2)
        try server.finish()
    }

    func testAllNotificationBatch_ndjson() throws { try allNotificationBatch(.ndjson) }
    func testAllNotificationBatch_lsp() throws { try allNotificationBatch(.lsp) }

    // MARK: ids

    func idsKeepTheirType(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        let ids = ["1", #""1""#, "0", "-7", #""""#, #""a b\"c""#, "9007199254740993", "null"]
        for id in ids {
            try server.send(#"{"jsonrpc": "2.0", "method": "status", "params": {"collection": "demo"}, "id": \#(id)}"#)
        }
        for id in ids {
            try expectMatch(server.reply(id), #"{"jsonrpc":"2.0","id":\#(id),"result":\#(Self.freshDemo)}"#, "id \(id)")
        }
        try server.finish()
    }

    func testIdsKeepTheirType_ndjson() throws { try idsKeepTheirType(.ndjson) }
    func testIdsKeepTheirType_lsp() throws { try idsKeepTheirType(.lsp) }

    // MARK: helpers

    /// A demo page reply: the fixed fields literally; the 25 items by id and page.
    func expectDemoPage(_ reply: JSONValue, id: String, number: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let lastId = number < 10 ? "\"page-\(number + 1)\"" : "null"
        try expectMatch(reply, #"""
            {"jsonrpc":"2.0","id":\#(id),"result":{"collection":"demo","items":"<any>","page":\#(number),
             "hasNext":\#(number < 10),"lastId":\#(lastId),"count":\#(number * 25)}}
            """#, file: file, line: line)
        let items = try XCTUnwrap(reply["result"]?["items"]?.arrayValue, file: file, line: line)
        let first = (number - 1) * 25 + 1
        XCTAssertEqual(items.map { $0["id"] }, (first..<(first + 25)).map { JSONValue.int(Int64($0)) }, file: file, line: line)
        for item in items {
            try expectMatch(item, #"{"id":"<int>","name":"<string>","page":\#(number),"tags":"<any>"}"#, file: file, line: line)
        }
    }
}
