import XCTest
@testable import JSONRPC

final class MessageFramerTests: XCTestCase {
    // MARK: - Helpers

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func message(_ text: String) -> FrameEvent { .message(Array(text.utf8)) }

    private func lspMessage(_ body: String, extraHeaders: String = "") -> [UInt8] {
        bytes("\(extraHeaders)Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    /// Feeds `chunks` in order, then finishes; returns all events.
    private func run(_ chunks: [[UInt8]], mode: FramingMode, limit: Int = 64 << 20) -> (events: [FrameEvent], framing: Framing?) {
        var framer = MessageFramer(mode: mode, maxMessageBytes: limit)
        var events: [FrameEvent] = []
        for chunk in chunks { events += framer.feed(chunk) }
        events += framer.finish()
        return (events, framer.framing)
    }

    private func events(_ stream: [UInt8], mode: FramingMode, limit: Int = 64 << 20) -> [FrameEvent] {
        run([stream], mode: mode, limit: limit).events
    }

    /// Asserts that every two-chunk split and a byte-at-a-time feed give `expected`.
    private func assertSplitInvariant(_ stream: [UInt8], mode: FramingMode, limit: Int, expected: [FrameEvent],
                                      file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(events(stream, mode: mode, limit: limit), expected, "whole", file: file, line: line)
        for k in 0...stream.count {
            let got = run([Array(stream[..<k]), Array(stream[k...])], mode: mode, limit: limit).events
            if got != expected {
                XCTFail("split at \(k) of \(stream.count) gave \(got)", file: file, line: line)
                return
            }
        }
        let single = run(stream.map { [$0] }, mode: mode, limit: limit).events
        XCTAssertEqual(single, expected, "byte at a time", file: file, line: line)
        // Uneven chunk sizes, with the raw-buffer entry point.
        var framer = MessageFramer(mode: mode, maxMessageBytes: limit)
        var got: [FrameEvent] = []
        var start = 0
        var size = 1
        while start < stream.count {
            let end = min(stream.count, start + size)
            got += stream[start..<end].withUnsafeBytes { framer.feed($0) }
            start = end
            size = size * 3 % 97 + 1
        }
        got += framer.finish()
        XCTAssertEqual(got, expected, "uneven chunks", file: file, line: line)
    }

    // MARK: - ndjson

    func testNDJSONSeveralMessagesInOneFeed() {
        var framer = MessageFramer(mode: .ndjson)
        XCTAssertEqual(framer.framing, .ndjson)
        let got = framer.feed(bytes("{\"id\":1}\n{\"id\":2}\n[{\"id\":3}]\n"))
        XCTAssertEqual(got, [message("{\"id\":1}"), message("{\"id\":2}"), message("[{\"id\":3}]")])
        XCTAssertEqual(framer.finish(), [])
    }

    func testNDJSONPartialLineIsHeldUntilNewline() {
        var framer = MessageFramer(mode: .ndjson)
        XCTAssertEqual(framer.feed(bytes("{\"id\":1}\n{\"id\"")), [message("{\"id\":1}")])
        XCTAssertEqual(framer.feed(bytes(":2")), [])
        XCTAssertEqual(framer.feed(bytes("}\n{}")), [message("{\"id\":2}")])
        XCTAssertEqual(framer.feed(bytes("\n")), [message("{}")])
    }

    func testNDJSONCRLF() {
        XCTAssertEqual(events(bytes("{\"a\":1}\r\n{\"b\":2}\r\n"), mode: .ndjson),
                       [message("{\"a\":1}"), message("{\"b\":2}")])
        // Only a '\r' right before the '\n' is part of the terminator.
        XCTAssertEqual(events(bytes("{\"a\":\"x\r\"}\r\r\n"), mode: .ndjson), [message("{\"a\":\"x\r\"}\r")])
        // The CR and LF arriving in different feeds.
        XCTAssertEqual(run([bytes("{\"a\":1}\r"), bytes("\n")], mode: .ndjson).events, [message("{\"a\":1}")])
    }

    func testNDJSONBlankLinesIgnored() {
        let stream = bytes("\n\n  \n\t\r\n{\"a\":1}\n \t \n\r\n\n{\"b\":2}\n   ")
        XCTAssertEqual(events(stream, mode: .ndjson), [message("{\"a\":1}"), message("{\"b\":2}")])
    }

    func testNDJSONMessageKeepsSurroundingSpaces() {
        // Only the terminator is removed; the JSON text is passed on as it came.
        XCTAssertEqual(events(bytes("  {\"a\":1} \n"), mode: .ndjson), [message("  {\"a\":1} ")])
    }

    func testNDJSONFinalLineWithoutNewlineDeliveredByFinish() {
        var framer = MessageFramer(mode: .ndjson)
        XCTAssertEqual(framer.feed(bytes("{\"a\":1}\n{\"b\":2}")), [message("{\"a\":1}")])
        XCTAssertEqual(framer.finish(), [message("{\"b\":2}")])
        // A trailing "\r" is stripped, a blank final line gives nothing.
        XCTAssertEqual(events(bytes("{\"c\":3}\r"), mode: .ndjson), [message("{\"c\":3}")])
        XCTAssertEqual(events(bytes("{\"c\":3}\n \t"), mode: .ndjson), [message("{\"c\":3}")])
        XCTAssertEqual(events(bytes(""), mode: .ndjson), [])
    }

    func testNDJSONOverlongLineThenNextLine() {
        let long = "[" + String(repeating: "1,", count: 100) + "1]"  // 203 bytes
        let stream = bytes("{\"a\":1}\n\(long)\n{\"b\":2}\n")
        XCTAssertEqual(events(stream, mode: .ndjson, limit: 100),
                       [message("{\"a\":1}"), .tooLarge(size: 203), message("{\"b\":2}")])
        // The same line arriving in many pieces.
        let chunks = stride(from: 0, to: stream.count, by: 7).map { Array(stream[$0..<min(stream.count, $0 + 7)]) }
        XCTAssertEqual(run(chunks, mode: .ndjson, limit: 100).events,
                       [message("{\"a\":1}"), .tooLarge(size: 203), message("{\"b\":2}")])
    }

    func testNDJSONLimitBoundary() {
        let atLimit = String(repeating: "x", count: 10)
        let overLimit = String(repeating: "y", count: 11)
        // The terminator does not count: 10 body bytes plus "\r\n" is fine with a limit of 10.
        XCTAssertEqual(events(bytes("\(atLimit)\r\n\(overLimit)\n\(atLimit)\n"), mode: .ndjson, limit: 10),
                       [message(atLimit), .tooLarge(size: 11), message(atLimit)])
        // Fed byte by byte, the "\r" of a line at the limit is not mistaken for body.
        let stream = bytes("\(atLimit)\r\n\(overLimit)\r\n")
        XCTAssertEqual(run(stream.map { [$0] }, mode: .ndjson, limit: 10).events,
                       [message(atLimit), .tooLarge(size: 11)])
        // An over-long final line without terminator.
        XCTAssertEqual(events(bytes("\(atLimit)\n\(overLimit)"), mode: .ndjson, limit: 10),
                       [message(atLimit), .tooLarge(size: 11)])
        XCTAssertEqual(run([bytes("\(overLimit)yyyy"), bytes("yy")], mode: .ndjson, limit: 10).events,
                       [.tooLarge(size: 17)])
    }

    func testNDJSONOverlongLineIsNotBuffered() {
        let limit = 1024
        var framer = MessageFramer(mode: .ndjson, maxMessageBytes: limit)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
        var got = framer.feed(bytes("{\"first\":true}\n"))
        for _ in 0..<160 {  // 10 MiB in one line
            got += framer.feed(chunk)
            XCTAssertLessThanOrEqual(framer.bufferedByteCount, limit + 1)
        }
        got += framer.feed(bytes("\r\n{\"next\":true}\n"))
        XCTAssertEqual(got, [message("{\"first\":true}"), .tooLarge(size: 160 << 16), message("{\"next\":true}")])
        XCTAssertEqual(framer.bufferedByteCount, 0)
    }

    func testNDJSONLargeMessageAcrossReads() {
        let body = "{\"data\":\"" + String(repeating: "0123456789abcdef", count: 1 << 18) + "\"}"  // ~4 MiB
        let stream = bytes(body + "\n{}\n")
        let chunks = stride(from: 0, to: stream.count, by: 65536).map { Array(stream[$0..<min(stream.count, $0 + 65536)]) }
        XCTAssertEqual(run(chunks, mode: .ndjson).events, [message(body), message("{}")])
    }

    func testNDJSONManySmallMessages() {
        var stream: [UInt8] = []
        for i in 0..<20_000 { stream += bytes("{\"jsonrpc\":\"2.0\",\"id\":\(i),\"method\":\"next\"}\n") }
        var framer = MessageFramer(mode: .ndjson)
        var got: [FrameEvent] = []
        // 4 KiB reads: most of them end in the middle of a message.
        for start in stride(from: 0, to: stream.count, by: 4096) {
            got += framer.feed(Array(stream[start..<min(stream.count, start + 4096)]))
        }
        got += framer.finish()
        XCTAssertEqual(got.count, 20_000)
        XCTAssertEqual(got.first, message("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"next\"}"))
        XCTAssertEqual(got.last, message("{\"jsonrpc\":\"2.0\",\"id\":19999,\"method\":\"next\"}"))
    }

    func testNDJSONModeDoesNotDetectHeaders() {
        XCTAssertEqual(events(bytes("Content-Length: 2\r\n\r\n{}"), mode: .ndjson),
                       [message("Content-Length: 2"), message("{}")])
    }

    // MARK: - lsp

    func testLSPOneMessage() {
        var framer = MessageFramer(mode: .lsp)
        XCTAssertEqual(framer.framing, .lsp)
        XCTAssertEqual(framer.feed(lspMessage("{\"id\":1}")), [message("{\"id\":1}")])
        XCTAssertEqual(framer.finish(), [])
    }

    func testLSPSeveralMessagesPerFeed() {
        let stream = lspMessage("{\"id\":1}") + lspMessage("{\"id\":22}") + lspMessage("[{\"id\":333}]")
        XCTAssertEqual(events(stream, mode: .lsp), [message("{\"id\":1}"), message("{\"id\":22}"), message("[{\"id\":333}]")])
    }

    func testLSPBodyMayContainNewlinesAndHeaderLookalikes() {
        let body = "{\r\n\"a\": \"Content-Length: 99\r\n\r\n\"\n}"
        XCTAssertEqual(events(lspMessage(body) + lspMessage("{}"), mode: .lsp), [message(body), message("{}")])
    }

    func testLSPExtraHeadersIgnored() {
        let stream = bytes("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\nX-Custom:  yes \r\n\r\n{}")
        XCTAssertEqual(events(stream, mode: .lsp), [message("{}")])
    }

    func testLSPHeaderNameCaseInsensitive() {
        let stream = bytes("content-length: 2\r\n\r\n{}CONTENT-LENGTH:3\r\n\r\n[1]cOnTeNt-LeNgTh:\t4 \r\n\r\nnull")
        XCTAssertEqual(events(stream, mode: .lsp), [message("{}"), message("[1]"), message("null")])
    }

    func testLSPBareNewlineHeaders() {
        let stream = bytes("Content-Length: 2\n\n{}Content-Type: x\nContent-Length: 4\r\n\n[{}]")
        XCTAssertEqual(events(stream, mode: .lsp), [message("{}"), message("[{}]")])
    }

    func testLSPContentLengthZero() {
        let stream = bytes("Content-Length: 0\r\n\r\n") + lspMessage("{}")
        XCTAssertEqual(events(stream, mode: .lsp), [.message([]), message("{}")])
    }

    func testLSPBlankLinesBetweenMessagesIgnored() {
        let stream = bytes("\r\n\n") + lspMessage("{}") + bytes("\r\n\r\n  \r\n") + lspMessage("[]") + bytes("\r\n")
        XCTAssertEqual(events(stream, mode: .lsp), [message("{}"), message("[]")])
    }

    func testLSPMissingContentLengthThenNextMessage() {
        let stream = bytes("Content-Type: application/json\r\n\r\n") + lspMessage("{\"ok\":1}")
        XCTAssertEqual(events(stream, mode: .lsp),
                       [.malformedHeader(reason: "missing Content-Length header"), message("{\"ok\":1}")])
    }

    func testLSPMissingContentLengthWithBodyResynchronises() {
        // The body of a block without length runs straight into the next header block.
        let stream = bytes("X-Id: 7\r\n\r\n{\"lost\":\n1}") + lspMessage("{\"ok\":1}") + lspMessage("{\"ok\":2}")
        XCTAssertEqual(events(stream, mode: .lsp),
                       [.malformedHeader(reason: "missing Content-Length header"), message("{\"ok\":1}"), message("{\"ok\":2}")])
    }

    func testLSPInvalidContentLength() {
        for value in ["abc", "-1", "+5", "1.5", "", "99999999999999999999999"] {
            let stream = bytes("Content-Length: \(value)\r\n\r\n") + lspMessage("{}")
            let got = events(stream, mode: .lsp)
            XCTAssertEqual(got.count, 2, "\(value): \(got)")
            guard case .malformedHeader(let reason)? = got.first else {
                XCTFail("\(value): \(got)")
                continue
            }
            XCTAssertTrue(reason.contains("Content-Length"), reason)
            XCTAssertEqual(got.last, message("{}"), value)
        }
    }

    func testLSPConflictingContentLength() {
        let stream = bytes("Content-Length: 2\r\nContent-Length: 3\r\n\r\n") + lspMessage("{}")
        let got = events(stream, mode: .lsp)
        XCTAssertEqual(got, [.malformedHeader(reason: "conflicting Content-Length values 2 and 3"), message("{}")])
        // Repeating the same value is fine.
        XCTAssertEqual(events(bytes("Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}"), mode: .lsp), [message("{}")])
    }

    func testLSPOversizedContentLengthThenNextMessage() {
        let big = String(repeating: "z", count: 300)
        let stream = lspMessage("{\"a\":\"\(big)\"}") + lspMessage("{\"b\":1}")
        XCTAssertEqual(events(stream, mode: .lsp, limit: 100), [.tooLarge(size: 308), message("{\"b\":1}")])
        // The body that is skipped may look like headers.
        let skipped = "Content-Length: 2\r\n\r\n{}" + String(repeating: " ", count: 17)
        XCTAssertEqual(skipped.utf8.count, 40)
        let tricky = bytes("Content-Length: 40\r\n\r\n" + skipped) + lspMessage("{\"c\":1}")
        XCTAssertEqual(events(tricky, mode: .lsp, limit: 10), [.tooLarge(size: 40), message("{\"c\":1}")])
    }

    func testLSPOversizedBodyIsNotBuffered() {
        let limit = 1024
        let size = 10 << 20
        var framer = MessageFramer(mode: .lsp, maxMessageBytes: limit)
        var got = framer.feed(bytes("Content-Length: \(size)\r\n\r\n"))
        XCTAssertEqual(got, [.tooLarge(size: size)])
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
        for _ in 0..<(size / chunk.count) {
            got += framer.feed(chunk)
            XCTAssertEqual(framer.bufferedByteCount, 0)
        }
        got += framer.feed(lspMessage("{}"))
        XCTAssertEqual(got, [.tooLarge(size: size), message("{}")])
    }

    func testLSPLimitBoundary() {
        let exact = String(repeating: "x", count: 10)
        XCTAssertEqual(events(lspMessage(exact) + lspMessage(exact + "y"), mode: .lsp, limit: 10),
                       [message(exact), .tooLarge(size: 11)])
    }

    func testLSPTruncatedBodyAtFinish() {
        var framer = MessageFramer(mode: .lsp)
        XCTAssertEqual(framer.feed(lspMessage("{}") + bytes("Content-Length: 10\r\n\r\n{\"a\"")), [message("{}")])
        XCTAssertEqual(framer.finish(), [.truncated(expected: 10, received: 4, body: bytes("{\"a\""))])
        // Truncated while skipping an oversized body: one event for the message, as with NDJSON.
        XCTAssertEqual(events(bytes("Content-Length: 50\r\n\r\n0123456789"), mode: .lsp, limit: 20), [.tooLarge(size: 50)])
    }

    func testLSPAnnouncedLengthTakesNoMemoryUntilTheBytesCome() {
        // With a limit this high, a 30 GB Content-Length was reserved at once and the allocation failed.
        var framer = MessageFramer(mode: .lsp, maxMessageBytes: .max)
        XCTAssertEqual(framer.feed(bytes("Content-Length: 30000000000\r\n\r\n{}")), [])
        XCTAssertEqual(framer.finish(), [.truncated(expected: 30_000_000_000, received: 2, body: bytes("{}"))])
    }

    func testAMessagePastOneMebibyteTakesRoomForNoMoreThanItsLimitOr64MiB() {
        // Past 1 MiB a message takes its room at once (no trail of outgrown
        // buffers), but never for a limit of gigabytes: that allocation fails.
        let line = "{\"data\":\"" + String(repeating: "0123456789abcdef", count: 1 << 17) + "\"}"  // ~2 MiB
        let stream = bytes(line + "\n")
        let chunks = stride(from: 0, to: stream.count, by: 65536).map { Array(stream[$0..<min(stream.count, $0 + 65536)]) }
        XCTAssertEqual(run(chunks, mode: .ndjson, limit: .max).events, [message(line)])
        var framer = MessageFramer(mode: .lsp, maxMessageBytes: .max)
        var got = framer.feed(bytes("Content-Length: 30000000000\r\n\r\n"))
        for chunk in chunks { got += framer.feed(chunk) }
        XCTAssertEqual(got, [])
        XCTAssertEqual(framer.bufferedByteCount, stream.count)
    }

    func testABatchOverTheMemberLimitIsRefusedWhole() {
        let members = IncomingMessage.maxBatchMembers
        let atLimit = "[" + Array(repeating: "1", count: members).joined(separator: ",") + "]"
        guard case .batch(let entries) = IncomingMessage.parse(bytes(atLimit)) else { return XCTFail("a batch at the limit is a batch") }
        XCTAssertEqual(entries.count, members)
        let over = "[" + Array(repeating: "1", count: members + 1).joined(separator: ",") + "]"
        guard case .single(.invalid(let reason, let id)) = IncomingMessage.parse(bytes(over)) else { return XCTFail("one error for the whole batch") }
        XCTAssertEqual(reason, "a batch of \(members + 1) members; at most \(members) are allowed")
        XCTAssertNil(id)
    }

    func testLSPTruncatedHeadersAtFinish() {
        XCTAssertEqual(events(bytes("Content-Length: 10\r\n"), mode: .lsp), [.truncated(expected: nil, received: 20)])
        XCTAssertEqual(events(bytes("Content-Len"), mode: .lsp), [.truncated(expected: nil, received: 11)])
        XCTAssertEqual(events(bytes("Content-Length: 2\r\nContent-Ty"), mode: .lsp), [.truncated(expected: nil, received: 29)])
        // Trailing blank lines are not an unfinished message.
        XCTAssertEqual(events(lspMessage("{}") + bytes("\r\n  "), mode: .lsp), [message("{}")])
    }

    func testLSPOverlongHeaderLine() {
        let long = "X-Padding: " + String(repeating: "p", count: 9000)
        // Within a block: the block is reported and its (declared) body skipped.
        let inBlock = bytes("Content-Length: 7\r\n\(long)\r\n\r\n{\"x\":1}") + lspMessage("{\"ok\":1}")
        XCTAssertEqual(events(inBlock, mode: .lsp),
                       [.malformedHeader(reason: "header line longer than 8192 bytes"), message("{\"ok\":1}")])
        // Starting a block.
        let atStart = bytes("\(long)\r\n") + lspMessage("{\"ok\":2}")
        XCTAssertEqual(events(atStart, mode: .lsp),
                       [.malformedHeader(reason: "header line longer than 8192 bytes"), message("{\"ok\":2}")])
    }

    func testLSPOverlongHeaderLineIsNotBuffered() {
        var framer = MessageFramer(mode: .lsp)
        let chunk = [UInt8](repeating: UInt8(ascii: "h"), count: 4096)
        var got: [FrameEvent] = []
        for _ in 0..<1000 {
            got += framer.feed(chunk)
            XCTAssertLessThanOrEqual(framer.bufferedByteCount, MessageFramer.maxHeaderLineBytes + 1)
        }
        got += framer.feed(bytes("\r\n") + lspMessage("{}"))
        XCTAssertEqual(got, [.malformedHeader(reason: "header line longer than 8192 bytes"), message("{}")])
    }

    func testLSPGarbageReportedOnceThenNextMessage() {
        // ndjson sent to an lsp server: one report for the whole run of garbage.
        let stream = bytes("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n") + lspMessage("{}")
        let got = events(stream, mode: .lsp)
        XCTAssertEqual(got.count, 2, "\(got)")
        guard case .malformedHeader(let reason)? = got.first else { return XCTFail("\(got)") }
        XCTAssertTrue(reason.hasPrefix("invalid header line"), reason)
        XCTAssertEqual(got.last, message("{}"))
    }

    func testLSPInvalidLineInsideBlock() {
        // The declared body is skipped even though it looks like a header block of its own.
        let stream = bytes("Content-Length: 8\r\nnot a header\r\n\r\na: b\r\n\r\n") + lspMessage("[]")
        XCTAssertEqual(events(stream, mode: .lsp),
                       [.malformedHeader(reason: "invalid header line \"not a header\""), message("[]")])
    }

    func testLSPLargeBodyAcrossReads() {
        let body = "[" + String(repeating: "\"abcdefgh\",", count: 400_000) + "0]"  // ~4.4 MB
        let stream = lspMessage(body) + lspMessage("{}")
        let chunks = stride(from: 0, to: stream.count, by: 65536).map { Array(stream[$0..<min(stream.count, $0 + 65536)]) }
        XCTAssertEqual(run(chunks, mode: .lsp).events, [message(body), message("{}")])
    }

    // MARK: - auto detection

    func testAutoDetectsNDJSON() {
        var framer = MessageFramer()
        XCTAssertNil(framer.framing)
        XCTAssertEqual(framer.feed(bytes(" \r\n\t \n")), [])
        XCTAssertNil(framer.framing)
        // Whitespace before the first message is consumed by detection.
        XCTAssertEqual(framer.feed(bytes("  {\"a\":1}\n [1]\n")), [message("{\"a\":1}"), message(" [1]")])
        XCTAssertEqual(framer.framing, .ndjson)
        // Detection sticks: a header-looking line later is just a line.
        XCTAssertEqual(framer.feed(bytes("Content-Length: 2\n")), [message("Content-Length: 2")])
        XCTAssertEqual(framer.framing, .ndjson)

        let batch = run([bytes("\n[{\"a\":1},{\"b\":2}]\n")], mode: .auto)
        XCTAssertEqual(batch.framing, .ndjson)
        XCTAssertEqual(batch.events, [message("[{\"a\":1},{\"b\":2}]")])
    }

    func testAutoDetectsLSP() {
        var framer = MessageFramer()
        XCTAssertEqual(framer.feed(bytes("\r\n  \r\n")), [])
        XCTAssertNil(framer.framing)
        XCTAssertEqual(framer.feed(lspMessage("{\"a\":1}") + lspMessage("{\"b\":2}")), [message("{\"a\":1}"), message("{\"b\":2}")])
        XCTAssertEqual(framer.framing, .lsp)

        let other = run([bytes("\ncontent-type: application/json\r\n") + lspMessage("{}")], mode: .auto)
        XCTAssertEqual(other.framing, .lsp)
        XCTAssertEqual(other.events, [message("{}")])
    }

    func testAutoDetectionAcrossFeeds() {
        var framer = MessageFramer()
        XCTAssertEqual(framer.feed(bytes("  Cont")), [])
        XCTAssertNil(framer.framing)
        XCTAssertEqual(framer.feed(bytes("ent-Length")), [])
        XCTAssertNil(framer.framing)
        XCTAssertEqual(framer.feed(bytes(": 2\r\n\r\n{}")), [message("{}")])
        XCTAssertEqual(framer.framing, .lsp)
    }

    func testAutoOtherFirstByteIsNDJSON() {
        // Not JSON and not a header: passed on as a line for the parser to reject.
        let words = run([bytes("true\nnull\n")], mode: .auto)
        XCTAssertEqual(words.framing, .ndjson)
        XCTAssertEqual(words.events, [message("true"), message("null")])
        let digits = run([bytes("42\n")], mode: .auto)
        XCTAssertEqual(digits.framing, .ndjson)
        XCTAssertEqual(digits.events, [message("42")])
        // Undecided at the end of input: the letters are an ndjson line.
        let unfinished = run([bytes("\n  hello")], mode: .auto)
        XCTAssertEqual(unfinished.framing, .ndjson)
        XCTAssertEqual(unfinished.events, [message("hello")])
        // Only whitespace: nothing decided, nothing reported.
        let empty = run([bytes(" \r\n\n")], mode: .auto)
        XCTAssertNil(empty.framing)
        XCTAssertEqual(empty.events, [])
    }

    // MARK: - split invariance

    private let splitLimit = 256

    private var ndjsonStream: (bytes: [UInt8], expected: [FrameEvent]) {
        let medium = "{\"b\":\"" + String(repeating: "m", count: 200) + "\"}"
        let atLimit = "[\"" + String(repeating: "e", count: splitLimit - 4) + "\"]"
        let overLimit = "[" + String(repeating: "9,", count: 200) + "9]"
        let text = "  \n{\"a\":1}\n\(medium)\r\n\r\n \t\n\(overLimit)\r\n\(atLimit)\r\n[1,2,3]\n\n{\"end\":true}"
        return (bytes(text), [
            message("{\"a\":1}"), message(medium), .tooLarge(size: overLimit.utf8.count),
            message(atLimit), message("[1,2,3]"), message("{\"end\":true}"),
        ])
    }

    private var lspStream: (bytes: [UInt8], expected: [FrameEvent]) {
        let medium = "{\"b\":\"" + String(repeating: "m", count: 200) + "\"}"
        let oversized = "{\"c\":\"\r\n\r\nContent-Length: 3\r\n\r\n" + String(repeating: "o", count: 300) + "\"}"
        var stream = bytes("\r\n")
        stream += lspMessage("{\"a\":1}")
        stream += lspMessage(medium, extraHeaders: "Content-Type: application/json\r\n")
        stream += bytes("content-length: 7\n\n[1,2,3]")
        stream += bytes("Content-Length: 0\r\n\r\n")
        stream += bytes("Content-Type: x\r\n\r\n{\"lost\":1}")
        stream += lspMessage("{\"d\":4}")
        stream += lspMessage(oversized)
        stream += bytes("\r\n\r\n")
        stream += bytes("Content-Length: 1x\r\n\r\n")
        stream += lspMessage("{\"e\":5}")
        stream += bytes("Content-Length: 20\r\n\r\n{\"short\":")
        return (stream, [
            message("{\"a\":1}"), message(medium), message("[1,2,3]"), .message([]),
            .malformedHeader(reason: "missing Content-Length header"), message("{\"d\":4}"),
            .tooLarge(size: oversized.utf8.count),
            .malformedHeader(reason: "invalid Content-Length value \"1x\""), message("{\"e\":5}"),
            .truncated(expected: 20, received: 9, body: bytes("{\"short\":")),
        ])
    }

    func testNDJSONSplitAtEveryOffset() {
        let (stream, expected) = ndjsonStream
        assertSplitInvariant(stream, mode: .ndjson, limit: splitLimit, expected: expected)
    }

    func testNDJSONAutoSplitAtEveryOffset() {
        let (stream, expected) = ndjsonStream
        assertSplitInvariant(stream, mode: .auto, limit: splitLimit, expected: expected)
    }

    func testLSPSplitAtEveryOffset() {
        let (stream, expected) = lspStream
        assertSplitInvariant(stream, mode: .lsp, limit: splitLimit, expected: expected)
    }

    func testLSPAutoSplitAtEveryOffset() {
        let (stream, expected) = lspStream
        assertSplitInvariant(stream, mode: .auto, limit: splitLimit, expected: expected)
    }

    func testLSPOverlongHeaderSplitAtEveryOffset() {
        let long = "X-Padding: " + String(repeating: "p", count: 8200)
        let stream = lspMessage("{}") + bytes("Content-Length: 2\r\n\(long)\r\n\r\n[]") + lspMessage("{\"ok\":1}")
        assertSplitInvariant(stream, mode: .lsp, limit: splitLimit, expected: [
            message("{}"), .malformedHeader(reason: "header line longer than 8192 bytes"), message("{\"ok\":1}"),
        ])
    }

    // MARK: - frame()

    func testFrameOutput() {
        XCTAssertEqual(MessageFramer.frame(bytes("{}"), as: .ndjson), bytes("{}\n"))
        XCTAssertEqual(MessageFramer.frame(bytes("{\"a\":1}"), as: .lsp), bytes("Content-Length: 7\r\n\r\n{\"a\":1}"))
        XCTAssertEqual(MessageFramer.frame([], as: .lsp), bytes("Content-Length: 0\r\n\r\n"))
    }

    func testFrameRoundTrip() {
        let bodies = [
            bytes("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}"),
            bytes("[{\"id\":2},{\"id\":3}]"),
            bytes("{\"s\":\"" + String(repeating: "é", count: 5000) + "\"}"),
            bytes("{}"),
        ]
        for framing in Framing.allCases {
            let wire = bodies.flatMap { MessageFramer.frame($0, as: framing) }
            for mode in [FramingMode.auto, FramingMode(rawValue: framing.rawValue)!] {
                let result = run([wire], mode: mode)
                XCTAssertEqual(result.framing, framing, "\(framing) \(mode)")
                XCTAssertEqual(result.events, bodies.map { .message($0) }, "\(framing) \(mode)")
            }
            // Byte at a time as well.
            XCTAssertEqual(run(wire.map { [$0] }, mode: .auto).events, bodies.map { .message($0) }, "\(framing)")
        }
    }

    func testAByteOrderMarkAtTheStartIsDropped() {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        for mode in [FramingMode.auto, .ndjson] {
            assertSplitInvariant(mark + bytes("{\"a\":1}\n{\"b\":2}\n"), mode: mode, limit: 100,
                                 expected: [message("{\"a\":1}"), message("{\"b\":2}")])
        }
        for mode in [FramingMode.auto, .lsp] {
            assertSplitInvariant(mark + lspMessage("{}"), mode: mode, limit: 100, expected: [message("{}")])
        }
        // Only at the start of the stream: later, the mark is part of a message.
        assertSplitInvariant(bytes("{}\n") + mark + bytes("{}\n"), mode: .ndjson, limit: 100,
                             expected: [message("{}"), .message(mark + bytes("{}"))])
        // The start of a mark that does not go on is input like any other.
        assertSplitInvariant([0xEF, 0xBB] + bytes("{}\n"), mode: .ndjson, limit: 100,
                             expected: [.message([0xEF, 0xBB] + bytes("{}"))])
        assertSplitInvariant([0xEF], mode: .ndjson, limit: 100, expected: [.message([0xEF])])
        XCTAssertEqual(events(mark, mode: .auto), [])
    }

    func testFinishResetsForReuse() {
        var framer = MessageFramer(mode: .lsp)
        XCTAssertEqual(framer.feed(bytes("Content-Length: 5\r\n\r\n{")), [])
        XCTAssertEqual(framer.finish(), [.truncated(expected: 5, received: 1, body: bytes("{"))])
        XCTAssertEqual(framer.feed(lspMessage("{}")), [message("{}")])
        XCTAssertEqual(framer.finish(), [])
    }
}
