import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// The parts of transcripts that need no process: reading records, the
/// readable diff, matching keys, and redaction.
final class TranscriptPartsTests: XCTestCase {
    func testRecordedArgumentsNameTheSameFilesFromTheTranscriptsFolder() {
        let typed = ["--config", "cfg/x.json", "--transcript", "out/t.jsonl", "--state=s.json", "--log-level", "debug",
                     "--replay-upstream", "/abs/rec", "--record-upstream=./rec/../up"]
        // Recorded in the working directory: as typed, less --transcript.
        XCTAssertEqual(
            ReplayArguments.forReplay(["--config", "cfg/x.json", "--transcript", "t.jsonl", "--transcript=u"], transcriptFolder: ".", workingDirectory: "/w"),
            ["--config", "cfg/x.json"])
        XCTAssertEqual(
            ReplayArguments.forReplay(["--config", "x.json"], transcriptFolder: "/w/.", workingDirectory: "/w"), ["--config", "x.json"])
        // Recorded in a folder below: the paths climb out of it.
        XCTAssertEqual(
            ReplayArguments.forReplay(typed, transcriptFolder: "out", workingDirectory: "/w"),
            ["--config", "../cfg/x.json", "--state=../s.json", "--log-level", "debug", "--replay-upstream", "/abs/rec", "--record-upstream=../up"])
        // Elsewhere altogether, and ${tmp} left for the replay to fill.
        XCTAssertEqual(
            ReplayArguments.forReplay(["--config", "x.json", "--state", "${tmp}/s.json"], transcriptFolder: "/tmp/r", workingDirectory: "/home/u/p"),
            ["--config", "../../home/u/p/x.json", "--state", "${tmp}/s.json"])
        // Into a folder that holds the working directory.
        XCTAssertEqual(
            ReplayArguments.forReplay(["--config", "x.json"], transcriptFolder: "..", workingDirectory: "/w/sub"),
            ["--config", "sub/x.json"])
        // A ./nextpage.json read without --config is named.
        XCTAssertEqual(
            ReplayArguments.forReplay(["--log-level", "info"], transcriptFolder: "/tmp", workingDirectory: "/w", implicitConfig: "nextpage.json"),
            ["--log-level", "info", "--config", "../w/nextpage.json"])
        XCTAssertEqual(
            ReplayArguments.forReplay([], transcriptFolder: ".", workingDirectory: "/w", implicitConfig: "nextpage.json"), [])
    }

    func testRecordsAreReadByTheirKeys() throws {
        let transcript = try Transcript.parse("""
            {"comment": "a session"}
            {"args": ["--config", "x.config.json", "--state", "${tmp}/s.json"]}
            {"framing": "lsp"}
            {"ignore": ["/result/elapsed", "/params/items/*/at"]}
            {"ignore": ["/result"], "id": "a"}
            {"dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "method": "status"}, "comment": "why"}
            {"dir": "in", "text": "not json"}
            {"dir": "in", "bytes": "\\r\\n"}
            {"dir": "in", "hex": "7bFF7d"}
            {"dir": "in", "size": 300}

            {"dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "result": null}}
            {"restart": "kill"}
            {"exitStatus": 1}

            """, path: "t")
        XCTAssertEqual(transcript.arguments, ["--config", "x.config.json", "--state", "${tmp}/s.json"])
        XCTAssertEqual(transcript.framing, .lsp)
        XCTAssertEqual(transcript.lines.count, 14)
        let kinds = transcript.lines.map { line -> String in
            switch line.record {
            case .send(.message): return "msg"
            case .send(.text(let text)): return "text:\(text)"
            case .send(.bytes(let bytes)): return "bytes:\(Array(bytes.utf8))"
            case .send(.body(let bytes)): return "hex:\(bytes)"
            case .send(.filler(let size)): return "size:\(size)"
            case .expect: return "out"
            case .ignore(let pointers, let id): return "ignore:\(pointers):\(id?.description ?? "-")"
            case .args: return "args"
            case .framing: return "framing"
            case .exitStatus(let status): return "exit:\(status)"
            case .restart(let mode): return "restart:\(mode.rawValue)"
            case .comment: return "comment"
            }
        }
        XCTAssertEqual(kinds, [
            "comment", "args", "framing", #"ignore:[["result", "elapsed"], ["params", "items", "*", "at"]]:-"#,
            #"ignore:[["result"]]:"a""#, "msg", "text:not json", "bytes:[13, 10]", "hex:[123, 255, 125]", "size:300", "comment", "out", "restart:kill", "exit:1",
        ])
    }

    func testBadRecordsAreErrorsNamingTheLine() {
        let cases: [(String, String)] = [
            ("nope", "line 1: not JSON"),
            ("[1]", "line 1: a record must be an object"),
            (#"{"dir": "up", "msg": 1}"#, #"line 1: "dir" must be "in" or "out""#),
            (#"{"dir": "in"}"#, #"line 1: an in record needs "msg", "text", "bytes", "hex" or "size""#),
            (#"{"dir": "in", "hex": "7g"}"#, #"line 1: "hex" must be a string of hex digit pairs"#),
            (#"{"dir": "in", "size": 0}"#, #"line 1: "size" must be a number of bytes"#),
            (#"{"dir": "out", "msg": {}, "extra": 1}"#, #"line 1: unexpected "extra" in this record"#),
            (#"{"ignore": ["result"]}"#, #"line 1: "ignore" must hold JSON Pointers ("/result/elapsed"), not "result""#),
            (#"{"framing": "xml"}"#, #"line 1: "framing" must be "ndjson" or "lsp""#),
            (#"{"exitStatus": 300}"#, #"line 1: "exitStatus" must be an integer from 0 to 255"#),
            (#"{"restart": "now"}"#, #"line 1: "restart" must be "eof" or "kill""#),
            (#"{"surprise": true}"#, "line 1: unknown record"),
            ("{\"dir\": \"in\", \"msg\": 1}\n{\"args\": []}", #"line 2: "args" and "framing" belong before the first message record"#),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try Transcript.parse(text, path: "t"), text) { error in
                XCTAssert((error as? TranscriptError)?.reason.hasPrefix(expected) == true, "\(error) for \(text)")
            }
        }
    }

    func testDifferencesNameEachPlaceAndSkipIgnoredOnes() throws {
        let expected = try JSON.parse(#"{"id":1,"result":{"count":25,"items":[{"id":1},{"id":2}],"gone":true,"at":"t1","list":[1,2]}}"#)
        let actual = try JSON.parse(#"{"id":1,"result":{"count":26,"items":[{"id":1},{"id":3}],"new":null,"at":"t2","list":[1]}}"#)
        XCTAssertEqual(JSONDiff.differences(expected, actual), [
            "/result/count: expected 25, got 26",
            "/result/items/1/id: expected 2, got 3",
            "/result/gone: missing (expected true)",
            #"/result/at: expected "t1", got "t2""#,
            "/result/list: expected 2 elements, got 1",
            "/result/new: not expected (got null)",
        ])
        XCTAssertEqual(JSONDiff.differences(expected, actual, ignoring: [["result", "at"], ["result", "items", "*", "id"], ["result", "count"]]), [
            "/result/gone: missing (expected true)",
            "/result/list: expected 2 elements, got 1",
            "/result/new: not expected (got null)",
        ])
        XCTAssertEqual(JSONDiff.differences(expected, expected), [])
        XCTAssertEqual(JSONDiff.differences(try JSON.parse("1"), try JSON.parse("1.0")), ["(whole message): expected 1, got 1.0"])
        XCTAssertEqual(JSONDiff.pointer(["a/b", "c~d"]), "/a~1b/c~0d")
    }

    func testMessagesAreMatchedByIdBatchIdsOrStream() throws {
        XCTAssertEqual(SessionRun.key(try JSON.parse(#"{"jsonrpc":"2.0","id":"7","result":1}"#)), #"reply:"7""#)
        XCTAssertEqual(SessionRun.key(try JSON.parse(#"{"jsonrpc":"2.0","id":7,"error":{}}"#)), "reply:7")
        XCTAssertEqual(SessionRun.key(try JSON.parse(#"[{"id":1},{"id":null}]"#)), "batch:1,null")
        // A batch's replies in another order are the same batch, compared member by member by id.
        let recorded = try JSON.parse(#"[{"id":"s4","result":1},{"id":null,"error":{"code":-32600}},{"id":3,"result":2}]"#)
        let reversed = try JSON.parse(#"[{"id":3,"result":2},{"id":null,"error":{"code":-32600}},{"id":"s4","result":1}]"#)
        XCTAssertEqual(SessionRun.key(recorded), SessionRun.key(reversed))
        XCTAssertEqual(SessionRun.compare(recorded, reversed, ignores: TranscriptReplayer.Ignores()), [])
        let changed = try JSON.parse(#"[{"id":3,"result":5},{"id":null,"error":{"code":-32600}},{"id":"s4","result":1}]"#)
        XCTAssertEqual(SessionRun.compare(recorded, changed, ignores: TranscriptReplayer.Ignores()), ["/2/result: expected 2, got 5"])
        XCTAssertEqual(SessionRun.key(try JSON.parse(#"{"jsonrpc":"2.0","method":"page","params":{"collection":"c"}}"#)), #"notification:page|collection="c""#)
        XCTAssertEqual(SessionRun.key(try JSON.parse(#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":3}}"#)), "notification:$/progress|token=3")
    }

    func testDefineSecretsAreRedactedAndScrubbedFromLaterRecords() throws {
        var redactor = TranscriptRedactor(collections: [], validator: DefinitionValidator(environment: ["TOKEN": "env-secret-value"]))
        let define = try JSON.parse(#"""
            {"jsonrpc":"2.0","id":1,"method":"define","params":{"name":"api","source":{"type":"http",
             "url":"https://me:pw12345@api.example.com/x?access_token=abc-123-xyz&after=5",
             "headers":{"Authorization":"Bearer ${env:TOKEN}","Accept":"json","X-Api-Key":"key-99999"},
             "query":{"per_page":"10","api_key":"qk-55555"}},"paging":{"strategy":"lastId","param":"after"}}}
            """#)
        let redacted = redactor.redactIncoming(define)
        XCTAssertEqual(redacted.compactString, #"{"jsonrpc":"2.0","id":1,"method":"define","params":{"name":"api","source":{"type":"http","url":"https://[redacted]@api.example.com/x?access_token=[redacted]&after=5","headers":{"Authorization":"[redacted]","Accept":"json","X-Api-Key":"[redacted]"},"query":{"per_page":"10","api_key":"[redacted]"}},"paging":{"strategy":"lastId","param":"after"}}}"#)
        XCTAssertNotEqual(redacted.compactString, define.compactString, "the message itself is not changed")
        // Secrets learned from the definition (after ${env:} expansion) are scrubbed from what follows.
        let echo = Array(#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"server said: bad key key-99999 for Bearer env-secret-value","data":{"n":12345}}}"#.utf8)
        XCTAssertEqual(String(decoding: redactor.scrub(echo), as: UTF8.self),
                       #"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"server said: bad key [redacted] for [redacted]","data":{"n":12345}}}"#)
        let batch = try JSON.parse(#"[{"jsonrpc":"2.0","id":3,"method":"define","params":{"name":"b","source":{"type":"http","url":"https://x.example.com","headers":{"Cookie":"c=1"}},"paging":{"strategy":"link"}}},{"jsonrpc":"2.0","id":4,"method":"status"}]"#)
        XCTAssert(redactor.redactIncoming(batch).compactString.contains(#""headers":{"Cookie":"[redacted]"}"#))
        let plain = try JSON.parse(#"{"jsonrpc":"2.0","id":5,"method":"status","params":{"collection":"c"}}"#)
        XCTAssertEqual(redactor.redactIncoming(plain).compactString, plain.compactString)
    }
}
