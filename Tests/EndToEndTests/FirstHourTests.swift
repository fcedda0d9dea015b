import Foundation
import XCTest

/// The conveniences of a first session (docs/cli.md), through the real binary:
/// `check-config` reporting every error of a file, and `--replay-upstream`
/// doing without the credentials it never sends and naming the nearest
/// recorded request on a miss.
final class FirstHourTests: EndToEndTestCase {
    /// The GitHub recording: 13 issues, numbers 13 to 1, three a page.
    private static let githubRecording = RecordedAPI.folder("NextPageServerTests/HTTPFixtures/github-issues.jsonl")
    /// A variable no environment sets.
    private static let unsetToken = "NEXTPAGE_TEST_UNSET_GH_TOKEN"

    private static let configWithSeveralErrors = #"""
        {
          "collections": {
            "issues": {
              "source": {"type": "http", "url": "https://api.github.com/repos/o/r/issues",
                         "headers": {"Authorization": "Bearer ${env:PATH}\n"},
                         "auth": {"type": "basic", "username": "me", "password": 987654321}},
              "paging": {"strategy": "curser", "items": ""},
              "pagesize": 30
            },
            "pages": {
              "source": {"type": "file", "dir": "pages"},
              "paging": {"strategy": "page", "start": -1},
              "onRepeatedCursor": "Stop"
            }
          }
        }
        """#

    private static let expectedErrorLines = [
        #"nextpage: config bad.json: collections.issues.pagesize: expected no such field (known: concurrency, dedupe, incremental, maxEmptyPages, maxItems, onRepeatedCursor, pageSize, pageSizeParam, paging, prefetch, source), got 30; did you mean "pageSize"?"#,
        "nextpage: config bad.json: collections.issues.source.headers.Authorization: expected a header value without line breaks, got [redacted]",
        "nextpage: config bad.json: collections.issues.source.auth.password: expected a string, got [redacted]",
        #"nextpage: config bad.json: collections.issues.paging.strategy: expected one of cursor, lastId, page, offset, link, nextUrl, auto, got "curser"; did you mean "cursor"?"#,
        "nextpage: config bad.json: collections.pages.paging.start: expected an integer ≥ 0, got -1",
        #"nextpage: config bad.json: collections.pages.onRepeatedCursor: expected one of stop, error, got "Stop"; did you mean "stop"?"#,
        "nextpage: config bad.json: 6 errors",
    ]

    func testCheckConfigReportsEveryErrorOfAFileWithoutShowingSecrets() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/bad.json", Self.configWithSeveralErrors)
        try FileManager.default.createDirectory(atPath: directory + "/pages", withIntermediateDirectories: true)
        let checked = try runNextpage(["check-config", "bad.json"], in: directory)
        XCTAssertEqual(checked.status, 2, checked.stderr)
        XCTAssertEqual(checked.stdout, "")
        XCTAssertEqual(checked.stderr.split(separator: "\n").map(String.init), Self.expectedErrorLines)
        // What ${env:PATH} expands to, and the password, are never shown.
        let path = try XCTUnwrap(ProcessInfo.processInfo.environment["PATH"])
        XCTAssertFalse(checked.stderr.contains(path), checked.stderr)
        XCTAssertFalse(checked.stderr.contains("987654321"), checked.stderr)

        // The server does not start with it, and says the same.
        let served = try runNextpage(["--config", "bad.json"], in: directory, stdin: "")
        XCTAssertEqual(served.status, 2, served.stderr)
        XCTAssertEqual(served.stdout, "")
        XCTAssertEqual(served.stderr.split(separator: "\n").map(String.init), Self.expectedErrorLines)

        // Fixed, the file checks.
        let fixed = Self.configWithSeveralErrors
            .replacingOccurrences(of: "\"pagesize\"", with: "\"pageSize\"")
            .replacingOccurrences(of: #"Bearer ${env:PATH}\n"#, with: "Bearer x")
            .replacingOccurrences(of: "987654321", with: "\"pw\"")
            .replacingOccurrences(of: "curser", with: "cursor")
            .replacingOccurrences(of: "-1", with: "1")
            .replacingOccurrences(of: "Stop", with: "stop")
        try writeFile(directory + "/bad.json", fixed)
        let ok = try runNextpage(["check-config", "bad.json"], in: directory)
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(ok.stdout, "bad.json: ok, 2 collection(s): issues, pages\n")
    }

    // MARK: --replay-upstream

    /// A folder with `nextpage.json` (one `issues` collection of the GitHub
    /// recording's shape at `url`, with `source` members added) and the
    /// recording's first `pages` lines in `recordings/issues.jsonl`.
    private func githubFolder(url: String = "https://api.github.com/repos/octokit-fixture-org/paginate-issues/issues",
                              source: String, pages: Int = 5) throws -> String {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/nextpage.json", #"""
            {"collections": {"issues": {
              "source": {"type": "http", "url": "\#(url)", "query": {"per_page": "3"}, \#(source)},
              "paging": {"strategy": "link", "items": "", "id": "/number"}}}}
            """#)
        let lines = try String(contentsOfFile: Self.githubRecording, encoding: .utf8).split(separator: "\n").prefix(pages)
        try writeFile(directory + "/recordings/issues.jsonl", lines.joined(separator: "\n") + "\n")
        return directory
    }

    private func numbers(_ lines: [String]) throws -> [Int64] {
        try lines.map { try XCTUnwrap(JSONValue.parse($0)["number"]?.intValue) }
    }

    func testAReplayDoesWithoutAnUnsetVariableOnlyAHeaderUses() throws {
        let directory = try githubFolder(source: #""headers": {"Accept": "application/vnd.github.v3+json", "Authorization": "Bearer ${env:\#(Self.unsetToken)}"}"#)
        let warning = "nextpage warning: environment variable \(Self.unsetToken) is not set (for ${env:\(Self.unsetToken)} in collections.issues.source.headers.Authorization): replaying without it, as a replay sends no credentials"

        let all = try runNextpage(["all", "issues", "--replay-upstream", "recordings"], in: directory)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(try numbers(all.lines), Array((1...13).reversed()))
        XCTAssertEqual(all.stderr, warning + "\n")

        // The server too: the warning once at start, the pages from the recording.
        let server = try startServer(arguments: ["--replay-upstream", "recordings", "--log-level", "warning"], in: directory)
        try server.request("1", "loadNext", #"{"collection": "issues"}"#)
        let first = try server.reply("1")
        try expectMatch(first, rpcResult(1, #"{"collection":"issues","items":"<any>","page":1,"hasNext":true,"lastId":"<string>","count":3}"#))
        XCTAssertEqual(first["result"]?["items"]?.arrayValue?.compactMap { $0["number"]?.intValue }, [13, 12, 11])
        for id in 2...5 {
            try server.request("\(id)", "loadNext", #"{"collection": "issues"}"#)
            _ = try server.reply("\(id)")
        }
        try server.request("6", "status", #"{"collection": "issues"}"#)
        try expectMatch(server.reply("6"), rpcResult(6, #"{"collection":"issues","hasNext":false,"isLoading":false,"lastId":null,"count":13,"pages":5,"lastError":null,"rateLimit":"<any>"}"#))
        try server.finish()
        XCTAssertEqual(server.stderrText.components(separatedBy: warning).count, 2, server.stderrText)

        // Without a replay, the collection cannot fetch, as before.
        let live = try runNextpage(["all", "issues"], in: directory)
        XCTAssertEqual(live.status, 4, live.stderr)
        XCTAssertTrue(live.stderr.contains("environment variable \(Self.unsetToken) is not set"), live.stderr)
    }

    func testAReplayStillFailsOnAnUnsetVariableTheRequestWouldCarry() throws {
        // In the query, the request would not match the recording.
        let directory = try githubFolder(source: #""headers": {"Authorization": "Bearer ${env:\#(Self.unsetToken)}"}, "query": {"per_page": "3", "state": "${env:NEXTPAGE_TEST_UNSET_STATE}"}"#)
        let all = try runNextpage(["all", "issues", "--replay-upstream", "recordings"], in: directory)
        XCTAssertEqual(all.status, 4, all.stderr)
        XCTAssertEqual(all.stdout, "")
        XCTAssertTrue(
            all.stderr.contains("environment variable NEXTPAGE_TEST_UNSET_STATE is not set (for ${env:NEXTPAGE_TEST_UNSET_STATE} in collections.issues.source.query.state)"),
            all.stderr)
    }

    func testAMissNamesTheNearestRecordedRequestAndWhatDiffers() throws {
        // The recording ends at page 4, whose Link header names page 5.
        let directory = try githubFolder(source: #""headers": {"Authorization": "Bearer ${env:\#(Self.unsetToken)}"}"#, pages: 4)
        let message = "GET https://api.github.com/repositories/1000/issues?per_page=3&page=5: no recorded answer in recordings/issues.jsonl"
            + "; nearest recorded: GET https://api.github.com/repositories/1000/issues?per_page=3&page=4 (query page: 4, not 5)"
        let all = try runNextpage(["all", "issues", "--replay-upstream", "recordings"], in: directory)
        XCTAssertEqual(all.status, 4, all.stderr)
        XCTAssertEqual(try numbers(all.lines), Array((2...13).reversed()))
        XCTAssertTrue(all.stderr.contains(message), all.stderr)

        let server = try startServer(arguments: ["--replay-upstream", "recordings"], in: directory)
        for id in 1...4 {
            try server.request("\(id)", "loadNext", #"{"collection": "issues"}"#)
            _ = try server.reply("\(id)")
        }
        try server.request("5", "loadNext", #"{"collection": "issues"}"#)
        try expectMatch(server.reply("5"), rpcError(5, #"""
            {"code":-32002,"message":"Upstream failed: \#(message)","data":{"collection":"issues","attempts":1,"retryable":false,"message":"\#(message)"}}
            """#))
        try server.finish()
    }

    func testARecordingMadeWithAllReplaysOfflineWithoutTheToken() throws {
        let api = try RecordedAPI(file: Self.githubRecording, origin: "https://api.github.com")
        let upstream = try FaultyHTTPServer(script: { _ in .json("{}") })
        addTeardownBlock { upstream.stop() }
        upstream.setScript(api.script(base: upstream.baseURL))
        let token = "ghp_RecordingSecret0123456789"
        let directory = try githubFolder(
            url: upstream.baseURL + "/repos/octokit-fixture-org/paginate-issues/issues",
            source: #""headers": {"Authorization": "Bearer ${env:NEXTPAGE_TEST_GH_TOKEN}"}"#, pages: 0)
        try FileManager.default.removeItem(atPath: directory + "/recordings")

        let recorded = try runNextpage(["all", "issues", "--record-upstream", "recordings"], in: directory, environment: ["NEXTPAGE_TEST_GH_TOKEN": token])
        XCTAssertEqual(recorded.status, 0, recorded.stderr)
        XCTAssertEqual(try numbers(recorded.lines), Array((1...13).reversed()))
        XCTAssertEqual(upstream.requestsReceived.map { $0.header("Authorization") }, Array(repeating: "Bearer " + token, count: 5))
        let recording = try String(contentsOfFile: directory + "/recordings/issues.jsonl", encoding: .utf8)
        XCTAssertEqual(recording.split(separator: "\n").count, 5)
        XCTAssertFalse(recording.contains(token), "the token is in the recording")

        upstream.stop()
        let replayed = try runNextpage(["all", "issues", "--replay-upstream", "recordings"], in: directory)
        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        XCTAssertEqual(replayed.stdout, recorded.stdout)
        XCTAssertTrue(replayed.stderr.contains("environment variable NEXTPAGE_TEST_GH_TOKEN is not set"), replayed.stderr)
        XCTAssertEqual(upstream.requestsReceived.count, 5, "the replay reached the network")

        let both = try runNextpage(["all", "issues", "--record-upstream", "r", "--replay-upstream", "recordings"], in: directory)
        XCTAssertEqual(both.status, 64, both.stderr)
    }
}
