import XCTest

/// Framing robustness (docs/methods.md, Transport): line ends, blank lines, split and coalesced
/// writes, the message size limit, extra LSP headers.
final class FramingTests: EndToEndTestCase {
    static func statusRequest(_ id: Int) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"status","params":{"collection":"demo"}}"#
    }

    static func freshReply(_ id: Int) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"result":\#(JSONRPCSpecTests.freshDemo)}"#
    }

    func testCRLFLineEndsAndBlankLinesAreAccepted() throws {
        let server = try startServer()
        try server.sendRaw("\r\n\r\n" + Self.statusRequest(1) + "\r\n\r\n   \t\r\n\n" + Self.statusRequest(2) + "\r\n\n")
        try expectMatch(server.reply("1"), Self.freshReply(1))
        try expectMatch(server.reply("2"), Self.freshReply(2))
        try server.finish()
    }

    func splitIntoSmallWrites(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        var bytes = framing.frame(Self.statusRequest(1)) + framing.frame(Self.statusRequest(2))
        if framing == .ndjson { bytes = Array("  \n".utf8) + bytes }
        for byte in bytes { try server.sendRaw([byte]) }
        try expectMatch(server.reply("1"), Self.freshReply(1))
        try expectMatch(server.reply("2"), Self.freshReply(2))
        // Two-byte and three-byte pieces across the next message.
        let more = framing.frame(Self.statusRequest(3))
        var index = 0
        while index < more.count {
            let end = min(more.count, index + 2 + index % 2)
            try server.sendRaw(Array(more[index..<end]))
            index = end
        }
        try expectMatch(server.reply("3"), Self.freshReply(3))
        try server.finish()
    }

    func testSplitIntoSmallWrites_ndjson() throws { try splitIntoSmallWrites(.ndjson) }
    func testSplitIntoSmallWrites_lsp() throws { try splitIntoSmallWrites(.lsp) }

    func manyMessagesInOneWrite(_ framing: WireFraming) throws {
        let server = try startServer(framing: framing)
        var bytes: [UInt8] = []
        for id in 1...200 { bytes += framing.frame(Self.statusRequest(id)) }
        // Queued loadNext calls written at once get consecutive pages in arrival order.
        for id in 201...210 {
            bytes += framing.frame(#"{"jsonrpc":"2.0","id":\#(id),"method":"loadNext","params":{"collection":"demo"}}"#)
        }
        try server.sendRaw(bytes)
        for id in 1...200 {
            try expectMatch(server.reply("\(id)"), #"{"jsonrpc":"2.0","id":\#(id),"result":"<any>"}"#)
        }
        for page in 1...10 {
            let reply = try server.reply("\(200 + page)")
            let lastId = page < 10 ? "\"page-\(page + 1)\"" : "null"
            try expectMatch(reply, #"""
                {"jsonrpc":"2.0","id":\#(200 + page),"result":{"collection":"demo","items":"<any>","page":\#(page),
                 "hasNext":\#(page < 10),"lastId":\#(lastId),"count":\#(page * 25)}}
                """#)
            XCTAssertEqual(reply["result"]?["items"]?[0]?["id"], .int(Int64((page - 1) * 25 + 1)))
        }
        try server.finish()
    }

    func testManyMessagesInOneWrite_ndjson() throws { try manyMessagesInOneWrite(.ndjson) }
    func testManyMessagesInOneWrite_lsp() throws { try manyMessagesInOneWrite(.lsp) }

    static let tooLarge = #"{"jsonrpc":"2.0","id":null,"error":{"code":"<int>","message":"<string>","data?":"<any>"}}"#

    func oversizedMessageIsSkipped(_ framing: WireFraming) throws {
        let server = try startServer(arguments: ["--max-message-bytes", "100"], framing: framing)
        let padding = String(repeating: "x", count: 300)
        let big = #"{"jsonrpc":"2.0","id":1,"method":"status","params":{"collection":"demo","padding":"\#(padding)"}}"#
        XCTAssertLessThanOrEqual(Self.statusRequest(2).utf8.count, 100)
        try server.sendRaw(framing.frame(big) + framing.frame(Self.statusRequest(2)))
        let error = try server.nextMessage()
        try expectMatch(error, Self.tooLarge, "the reply to the oversized message")
        XCTAssert([-32600, -32700].contains(error["error"]?["code"]?.intValue ?? 0), "code \(error)")
        try expectMatch(server.reply("2"), Self.freshReply(2))
        // A huge one (far beyond any read buffer), then a normal one again.
        let huge = #"{"jsonrpc":"2.0","id":3,"method":"status","params":{"collection":"demo","padding":"\#(String(repeating: "y", count: 300_000))"}}"#
        try server.sendRaw(framing.frame(huge) + framing.frame(Self.statusRequest(4)))
        try expectMatch(server.nextMessage(), Self.tooLarge, "the reply to the huge message")
        try expectMatch(server.reply("4"), Self.freshReply(4))
        try server.finish()
    }

    func testOversizedMessageIsSkipped_ndjson() throws { try oversizedMessageIsSkipped(.ndjson) }
    func testOversizedMessageIsSkipped_lsp() throws { try oversizedMessageIsSkipped(.lsp) }

    func testLSPOtherHeadersAndHeaderCaseAreAccepted() throws {
        let server = try startServer(framing: .lsp)
        let body1 = Self.statusRequest(1)
        let body2 = Self.statusRequest(2)
        try server.sendRaw(
            "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: \(body1.utf8.count)\r\n\r\n" + body1
                + "content-length: \(body2.utf8.count)\r\nX-Anything: 1\r\n\r\n" + body2)
        try expectMatch(server.reply("1"), Self.freshReply(1))
        try expectMatch(server.reply("2"), Self.freshReply(2))
        try server.finish()
    }

    func testLSPBodyMayContainNewlines() throws {
        let server = try startServer(framing: .lsp)
        let body = Self.statusRequest(1).replacingOccurrences(of: ",", with: ",\r\n")
        try server.sendRaw("Content-Length: \(body.utf8.count)\r\n\r\n" + body)
        try expectMatch(server.reply("1"), Self.freshReply(1))
        try server.finish()
    }

    func testForcedNDJSONFramingOverridesDetection() throws {
        // With --framing ndjson a header line is just a line that is not JSON.
        let server = try startServer(arguments: ["--framing", "ndjson"])
        try server.sendRaw("Content-Length: 10\r\n\r\n" + Self.statusRequest(1) + "\n")
        try expectMatch(server.nextMessage(),
                        #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":{"line":1,"column":"<int>","position":"<int>","text":"<string>"}}}"#)
        try expectMatch(server.nextMessage(), Self.freshReply(1))
        try server.finish()
    }

    func testRepliesAreOneLineEvenWhenTheyCarryNewlines() throws {
        let server = try startServer()
        try server.send(#"{"jsonrpc":"2.0","id":1,"method":"line one\nline two\r\n"}"#)
        try expectMatch(server.reply("1"),
                        #"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"<string>","data":{"method":"line one\nline two\r\n"}}}"#)
        XCTAssertEqual(server.stdoutText.filter { $0 == "\n" }.count, 1, "one reply, one line: \(server.stdoutText)")
        try server.finish()
    }

    func testUTF8IsKeptIntact() throws {
        let server = try startServer()
        try server.send(#"{"jsonrpc":"2.0","id":"é€😀","method":"ünïcødé 😀"}"#)
        try expectMatch(server.reply(#""é€😀""#),
                        #"{"jsonrpc":"2.0","id":"é€😀","error":{"code":-32601,"message":"<string>","data":{"method":"ünïcødé 😀"}}}"#)
        try server.finish()
    }

    func testMessageOfExactlyTheLimitIsAcceptedOneByteMoreIsNot() throws {
        let exact = Self.statusRequest(1)
        let server = try startServer(arguments: ["--max-message-bytes", "\(exact.utf8.count)"])
        try server.send(exact)
        try expectMatch(server.nextMessage(), Self.freshReply(1), "a message of exactly --max-message-bytes")
        try server.send(Self.statusRequest(2).replacingOccurrences(of: "{\"jsonrpc", with: "{ \"jsonrpc"))
        try expectMatch(server.nextMessage(), Self.tooLarge, "one byte over the limit")
        try server.send(Self.statusRequest(3))
        try expectMatch(server.nextMessage(), Self.freshReply(3))
        try server.finish()
    }

    static let parseError = #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data?":"<any>"}}"#

    func testInvalidUTF8IsAParseErrorAndTheStreamGoesOn() throws {
        let server = try startServer()
        try server.sendRaw(Array(#"{"jsonrpc":"2.0","id":1,"method":"st"#.utf8) + [0xFF, 0xFE, 0xC3] + Array(#"","params":{}}"#.utf8) + [0x0A])
        try expectMatch(server.nextMessage(), Self.parseError)
        try server.send(Self.statusRequest(2))
        try expectMatch(server.nextMessage(), Self.freshReply(2))
        try server.finish()
    }

    func testAByteOrderMarkBeforeTheFirstMessageIsIgnored() throws {
        for framing in [WireFraming.ndjson, .lsp] {
            let server = try startServer(framing: framing)
            try server.sendRaw([0xEF, 0xBB, 0xBF] + framing.frame(Self.statusRequest(1)))
            try expectMatch(server.nextMessage(), Self.freshReply(1), "\(framing)")
            try server.send(Self.statusRequest(2))
            try expectMatch(server.nextMessage(), Self.freshReply(2), "\(framing)")
            try server.finish()
        }
    }

    func testDeeplyNestedJSONDoesNotCrash() throws {
        let server = try startServer()
        try server.sendRaw(String(repeating: "[", count: 200_000) + "\n")
        try server.sendRaw("{\"a\":" + String(repeating: "{\"a\":", count: 100_000) + "\n")
        try expectMatch(server.nextMessage(), Self.parseError, "deep arrays")
        try expectMatch(server.nextMessage(), Self.parseError, "deep objects")
        try server.send(Self.statusRequest(3))
        try expectMatch(server.nextMessage(), Self.freshReply(3))
        try server.finish()
    }

    func testInputEndingInsideAnLSPMessageIsAnsweredAndExitsZero() throws {
        let server = try startServer(framing: .lsp)
        try server.send(Self.statusRequest(1))
        try expectMatch(server.reply("1"), Self.freshReply(1))
        try server.sendRaw("Content-Length: 100\r\n\r\n{\"jsonrpc\":\n\"2.0\"")
        server.closeInput()
        // `data` says where the input ended in the body: line 2, after 5 characters, 17 bytes in.
        try expectMatch(
            server.nextMessage(),
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":{"line":2,"column":5,"position":17,"text":"input ended inside a message (17 of 100 bytes)"}}}"#,
            "the truncated message")
        try server.finish()
    }

    func testLSPHeaderWithoutContentLengthIsAnErrorAndTheNextMessageIsAnswered() throws {
        let server = try startServer(framing: .lsp)
        let body = Self.statusRequest(2)
        try server.sendRaw("Content-Type: application/json\r\n\r\n" + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
        try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":null,"error":{"code":"<int>","message":"<string>","data?":"<any>"}}"#)
        try expectMatch(server.reply("2"), Self.freshReply(2))
        try server.finish()
    }
}
