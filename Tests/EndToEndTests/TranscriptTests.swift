import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `serve --transcript F` and `nextpage replay` (docs/transcripts.md): a recorded
/// session replays clean, a changed expectation is reported with the place
/// that differs, `--update` rewrites it, and secrets never reach the file.
final class TranscriptTests: EndToEndTestCase {
    private func records(_ path: String) throws -> [JSONValue] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    func testARecordedSessionReplaysAndADifferenceIsReportedAndUpdated() throws {
        let directory = try temporaryDirectory()
        let server = try startServer(arguments: ["--transcript", "session.transcript.jsonl", "--log-level", "warning"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "demo"}"#)
        _ = try server.reply("1")
        try server.sendRaw("this is not JSON\n")
        _ = try server.nextMessage()
        try server.request("2", "loadAll", #"{"collection": "demo", "maxPages": 2, "progressToken": "t"}"#)
        _ = try server.reply("2")
        _ = server.takeAll { _ in true }
        try server.request("3", "define", #"{"name": "api", "source": {"type": "http", "url": "https://user:hunter22@api.example.com/x?api_key=sekrit-key-1&per_page=5", "headers": {"Authorization": "Bearer tok-123456789", "Accept": "application/json"}, "query": {"client_secret": "shh-0987654321"}}, "paging": {"strategy": "link"}}"#)
        _ = try server.reply("3")
        try server.finish()

        let path = directory + "/session.transcript.jsonl"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for secret in ["hunter22", "sekrit-key-1", "tok-123456789", "shh-0987654321"] {
            XCTAssertFalse(text.contains(secret), "\(secret) leaked into the transcript")
        }
        let lines = try records(path)
        XCTAssertEqual(lines.first, J(#"{"args":["--log-level","warning"]}"#), "the arguments, without --transcript")
        // The defaults (ndjson framing, exit status 0) are not written: the rest is messages.
        XCTAssert(lines.dropFirst().allSatisfy { $0["dir"] != nil && ($0["msg"] != nil || $0["text"] != nil) }, "\(lines)")
        XCTAssert(lines.contains(J(#"{"dir":"in","text":"this is not JSON"}"#)))
        let define = try XCTUnwrap(lines.first { $0["msg"]?["method"] == .string("define") })
        try expectMatch(define, #"{"dir":"in","msg":{"jsonrpc":"2.0","id":3,"method":"define","params":{"name":"api","source":{"type":"http","url":"https://[redacted]@api.example.com/x?api_key=[redacted]&per_page=5","headers":{"Authorization":"[redacted]","Accept":"application/json"},"query":{"client_secret":"[redacted]"}},"paging":{"strategy":"link"}}}}"#)
        XCTAssertEqual(lines.filter { $0["dir"] == .string("out") && $0["msg"]?["method"] == .string("page") }.count, 2)

        let clean = try runNextpage(["replay", "session.transcript.jsonl"], in: directory)
        XCTAssertEqual(clean.status, 0, clean.stdout + clean.stderr)
        XCTAssertEqual(clean.lines.last, "replay: 1 passed, 0 failed")

        // Change what the server is expected to say: the replay names the line and the place.
        let changed = text.replacingOccurrences(of: #"{"collection":"demo","pages":3,"count":75"#, with: #"{"collection":"demo","pages":3,"count":76"#)
        XCTAssertNotEqual(changed, text)
        try writeFile(path, changed)
        let lineNumber = changed.split(separator: "\n").firstIndex { $0.contains(#""count":76"#) }! + 1
        let failed = try runNextpage(["replay", "session.transcript.jsonl"], in: directory)
        XCTAssertEqual(failed.status, 1)
        XCTAssert(failed.stdout.contains("FAIL session.transcript.jsonl"), failed.stdout)
        XCTAssert(failed.stdout.contains("line \(lineNumber): reply to id 2 differs:"), failed.stdout)
        XCTAssert(failed.stdout.contains("/result/count: expected 76, got 75"), failed.stdout)

        let updated = try runNextpage(["replay", "--update", "session.transcript.jsonl"], in: directory)
        XCTAssertEqual(updated.status, 0, updated.stdout)
        XCTAssertEqual(try records(path), lines, "--update restores what the server sends")
        XCTAssertEqual(try runNextpage(["replay", "session.transcript.jsonl"], in: directory).status, 0)
    }

    func testATranscriptRecordedInAnotherFolderReplaysFromAnywhere() throws {
        // The config and its pages below the working directory, the
        // transcript in a folder of its own, named by relative paths.
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/cfg/pages", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/records", withIntermediateDirectories: true)
        try writeFile(directory + "/cfg/pages/first.json", #"{"items": [{"id": 1}, {"id": 2}], "next": "p2"}"#)
        try writeFile(directory + "/cfg/pages/p2.json", #"{"items": [{"id": 3}], "next": null}"#)
        try writeFile(directory + "/cfg/x.json", #"{"collections": {"c": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "cursor", "next": "/next"}}}}"#)
        let server = try startServer(arguments: ["--config", "cfg/x.json", "--transcript", "records/t.jsonl", "--state", "state.json"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "c"}"#)
        _ = try server.reply("1")
        try server.request("2", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"c","items":[{"id":3}],"page":2,"hasNext":false,"lastId":null,"count":3}"#))
        try server.finish()

        let lines = try records(directory + "/records/t.jsonl")
        XCTAssertEqual(lines.first, J(#"{"args":["--config","../cfg/x.json","--state","../state.json"]}"#), "paths from the transcript's folder")
        // The replay's own state file starts afresh, as the recorded one did.
        try FileManager.default.removeItem(atPath: directory + "/state.json")
        for (path, folder) in [("records/t.jsonl", directory), ("t.jsonl", directory + "/records"), (directory + "/records/t.jsonl", "/")] {
            let replay = try runNextpage(["replay", path], in: folder)
            XCTAssertEqual(replay.status, 0, "replay \(path) in \(folder): " + replay.stdout + replay.stderr)
            try? FileManager.default.removeItem(atPath: directory + "/state.json")
        }
    }

    func testRequestsSentTogetherAreReplayedTogether() throws {
        // A client sends a loadNext and a status in one write: the status is
        // answered while the page is still loading. A replay that sent them
        // one by one would let the page land first, and fail most times.
        let directory = try temporaryDirectory()
        let server = try startServer(arguments: ["--transcript", "together.transcript.jsonl"], in: directory)
        try server.sendRaw(
            #"{"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"demo"}}"# + "\n"
            + #"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"demo"}}"# + "\n")
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection":"demo","hasNext":true,"isLoading":true,"lastId":null,"count":0,"pages":0,"lastError":null}"#))
        _ = try server.reply("1")
        try server.finish()
        for attempt in 1...10 {
            let replay = try runNextpage(["replay", "together.transcript.jsonl"], in: directory)
            XCTAssertEqual(replay.status, 0, "replay \(attempt): \(replay.stdout)")
        }
    }

    func testAnLSPSessionIsRecordedWithItsFramingAndReplays() throws {
        let directory = try temporaryDirectory()
        let server = try startServer(arguments: ["--transcript", "lsp.transcript.jsonl"], framing: .lsp, in: directory)
        try server.request("1", "initialize", #"{"processId": null, "capabilities": {}}"#)
        _ = try server.reply("1")
        try server.send(#"[{"jsonrpc":"2.0","id":2,"method":"loadNext","params":{"collection":"demo"}},{"jsonrpc":"2.0","id":3,"method":"status","params":{"collection":"demo"}}]"#)
        _ = try server.nextBatch()
        try server.request("4", "shutdown")
        _ = try server.reply("4")
        try server.notify("exit")
        XCTAssertEqual(try server.waitForExit(), 0)
        try server.finish()
        let lines = try records(directory + "/lsp.transcript.jsonl")
        XCTAssertEqual(lines[1], J(#"{"framing":"lsp"}"#))
        let replay = try runNextpage(["replay", "lsp.transcript.jsonl"], in: directory)
        XCTAssertEqual(replay.status, 0, replay.stdout)
    }

    func testHostileInputIsRecordedSoThatItReplays() throws {
        // A body that is not UTF-8 was recorded as text with U+FFFD (the replay got -32001, not -32700),
        // and one over --max-message-bytes was not recorded at all (the replay missed its -32600).
        for framing in [WireFraming.ndjson, .lsp] {
            func frame(_ body: [UInt8]) -> [UInt8] {
                framing == .lsp ? Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body : body + [0x0A]
            }
            let directory = try temporaryDirectory()
            let server = try startServer(
                arguments: ["--transcript", "h.transcript.jsonl", "--max-message-bytes", "200"], framing: framing, in: directory)
            try server.sendRaw(frame(Array(#"{"jsonrpc":"2.0","id":1,"method":"status","params":{"collection":""#.utf8) + [0xFF] + Array(#""}}"#.utf8)))
            try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":"<any>"}}"#)
            try server.sendRaw(frame(Array(#"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"demo","pad":"\#(String(repeating: "0", count: 300))"}}"#.utf8)))
            try expectMatch(server.nextMessage(), #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"<string>","data":{"size":"<number>","limit":200}}}"#)
            try server.request("3", "status", #"{"collection": "demo"}"#)
            _ = try server.reply("3")
            server.closeInput()
            XCTAssertEqual(try server.waitForExit(), 0)
            try server.finish()
            let lines = try records(directory + "/h.transcript.jsonl")
            XCTAssert(lines.contains { $0["hex"] != nil }, "\(lines)")
            XCTAssert(lines.contains { $0["size"] != nil }, "\(lines)")
            let replay = try runNextpage(["replay", "h.transcript.jsonl"], in: directory)
            XCTAssertEqual(replay.status, 0, "\(framing): " + replay.stdout + replay.stderr)
        }
    }

    func testASessionEndingWithAStatusOtherThanZeroRecordsItAndReplays() throws {
        let directory = try temporaryDirectory()
        let server = try startServer(arguments: ["--transcript", "exit.transcript.jsonl"], in: directory)
        try server.request("1", "status", #"{"collection": "demo"}"#)
        _ = try server.reply("1")
        // `exit` without `shutdown` ends the process with status 1, as in LSP.
        try server.notify("exit")
        XCTAssertEqual(try server.finish(expectStatus: 1), 1)
        let lines = try records(directory + "/exit.transcript.jsonl")
        XCTAssertEqual(lines.last, J(#"{"exitStatus":1}"#))
        XCTAssertFalse(lines.contains { $0["framing"] != nil }, "ndjson is the default and is not written")
        let replay = try runNextpage(["replay", "exit.transcript.jsonl"], in: directory)
        XCTAssertEqual(replay.status, 0, replay.stdout)
    }

    func testReplayReportsMissingAndUnexpectedMessagesAndTheExitStatus() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/t.transcript.jsonl", """
            {"comment": "status is answered but no out record expects it; reply 9 never comes; exit without shutdown ends with 1"}
            {"dir":"in","msg":{"jsonrpc":"2.0","id":1,"method":"status","params":{"collection":"demo"}}}
            {"dir":"in","msg":{"jsonrpc":"2.0","method":"exit"}}
            {"dir":"out","msg":{"jsonrpc":"2.0","id":9,"result":null}}

            """)
        let result = try runNextpage(["replay", "t.transcript.jsonl"], in: directory)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.lines.first, "FAIL t.transcript.jsonl")
        XCTAssertEqual(result.lines[1], #"  line 4: no reply to id 9 arrived (expected {"jsonrpc":"2.0","id":9,"result":null})"#)
        // The reply may come before or after the exit notification was sent (after line 2 or 3).
        XCTAssert(result.lines[2].hasPrefix("  unexpected reply to id 1 (after line "), result.stdout)
        XCTAssert(result.lines[2].hasSuffix(#"): {"jsonrpc":"2.0","id":1,"result":{"collection":"demo","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}}"#), result.stdout)
        XCTAssertEqual(result.lines[3], "  the server exited with status 1, expected 0")
        XCTAssertEqual(result.lines.last, "replay: 0 passed, 1 failed")

        try writeFile(directory + "/broken.transcript.jsonl", "{\"dir\": \"sideways\", \"msg\": 1}\n")
        let broken = try runNextpage(["replay", "broken.transcript.jsonl", "t.transcript.jsonl"], in: directory)
        XCTAssertEqual(broken.status, 1)
        XCTAssert(broken.stdout.contains("FAIL broken.transcript.jsonl\n  line 1: \"dir\" must be \"in\" or \"out\"\n"), broken.stdout)
        XCTAssertEqual(broken.lines.last, "replay: 0 passed, 2 failed")
    }

    func testTheSuiteInTestsTranscriptsReplays() throws {
        let folder = repositoryRoot + "/Tests/Transcripts"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".transcript.jsonl") }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 10)
        let result = try runNextpage(["replay"] + names, in: folder)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertEqual(result.lines.last, "replay: \(names.count) passed, 0 failed")
    }
}
