#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// `RecordingTransport` and `ReplayTransport`: what a recording holds, that
/// it holds no secrets, and that a replay pages exactly as the network did.
final class HTTPRecordReplayTests: HTTPSourceTestCase {
    private func temporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/nextpage-http-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        let directory = String(cString: made)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    private func read(_ path: String) -> String {
        guard let file = fopen(path, "rb") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[0..<n]
            if n < chunk.count { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func write(_ text: String, to path: String) {
        let file = fopen(path, "wb")!
        _ = text.utf8CString.withUnsafeBufferPointer { fwrite($0.baseAddress!, 1, $0.count - 1, file) }
        fclose(file)
    }

    func testRecordingHoldsEveryExchangeWithoutSecretsAndReplaysExactly() async throws {
        let directory = try temporaryDirectory()
        let token = "ghp_0123456789abcdefSECRET"
        let apiKey = "k-9876543210"
        let cookie = "session=c00kie-value-1234"
        // A server whose first page fails once, then answers; echoing the token in a body.
        let answers = NIOCounter()
        try await withServer({ request in
            let n = answers.next()
            if request.queryValue("cursor") == nil {
                if n == 0 { return .status(503, body: "warming up") }
                return .json(
                    #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c 2+"}"#,
                    headers: [("Set-Cookie", cookie), ("X-Request-Id", "r1"), ("Link", "<a>; rel=\"x\""), ("Link", "<b>; rel=\"y\"")])
            }
            return .json(#"{"items": [{"id": 3}], "next_cursor": null, "echo": "\#(request.header("Authorization") ?? "")"}"#)
        }) { server, transport in
            let source = HTTPSource(
                url: server.baseURL + "/items?api_key=\(apiKey)",
                headers: [("Authorization", "Bearer \(token)"), ("X-Custom-Token", "another-secret-value")])
            let paging = Paging(strategy: .cursor)
            let redactor = HTTPRedactor(source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil))
            let file = RecordingTransport.file(directory: directory, collection: "my/issues")
            XCTAssertEqual(file, directory + "/my%2Fissues.jsonl")
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: redactor)
            let live = collection(source, paging, transport: recording)
            let result = try await loadAll(live)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.count, 3)

            let text = read(file)
            for secret in [token, apiKey, "c00kie-value-1234", "another-secret-value"] {
                XCTAssertFalse(text.contains(secret), "\(secret) in recording:\n\(text)")
            }
            let lines = text.split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.count, 3)
            let base = server.baseURL
            XCTAssertEqual(lines[0], #"{"request":{"method":"GET","url":"\#(base)/items?api_key=[redacted]","headers":{"Authorization":"[redacted]","X-Custom-Token":"[redacted]","Accept":"application/json","User-Agent":"nextpage"},"body":null},"response":{"status":503,"headers":{"Content-Length":"10"},"body":"warming up"}}"#)
            let second = try JSON.parse(lines[1])
            XCTAssertEqual(second.pointer("/response/status")?.integer, 200)
            XCTAssertEqual(second.pointer("/response/headers/Set-Cookie")?.string, "[redacted]")
            XCTAssertEqual(second.pointer("/response/headers/X-Request-Id")?.string, "r1")
            XCTAssertEqual(second.pointer("/response/headers/Link")?.string, "<a>; rel=\"x\", <b>; rel=\"y\"")
            XCTAssertEqual(second.pointer("/response/body")?.compactString, #"{"items":[{"id":1},{"id":2}],"next_cursor":"c 2+"}"#)
            let third = try JSON.parse(lines[2])
            XCTAssertEqual(third.pointer("/request/url")?.string, "\(base)/items?api_key=[redacted]&cursor=c%202%2B")
            XCTAssertEqual(third.pointer("/response/body/echo")?.string, "[redacted]")

            // Replay: the same pages, in order, from the file alone, with no network.
            let replay = ReplayTransport(file: file, redactor: redactor)
            let offline = collection(source, paging, transport: replay, retryPolicy: .immediate)
            let replayed = try await loadAll(offline)
            XCTAssertEqual(replayed.ids, ["1", "2", "3"])
            XCTAssertEqual(replayed.pages, 2)
            let answered = await replay.answered
            XCTAssertEqual(answered, 3)
            XCTAssertEqual(server.requests.count, 3)
        }
    }

    func testABodyIsRecordedAndReplayedWithTheServersNumbersAndEscapes() async throws {
        let directory = try temporaryDirectory()
        let item = #"{"id": 1, "price": 1.10, "zero": -0, "n": 1e2, "big": 12345678901234567, "s": "caf\u00e9 \/ é"}"#
        try await withServer({ _ in .json(#"{"items": [\#(item)], "next_cursor": null}"#) }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let paging = Paging(strategy: .cursor)
            let file = RecordingTransport.file(directory: directory, collection: "exact")
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: HTTPRedactor())
            let live = try await collection(source, paging, transport: recording).loadNext()
            let expected = #"{"id":1,"price":1.10,"zero":-0,"n":1e2,"big":12345678901234567,"s":"caf\u00e9 \/ é"}"#
            XCTAssertEqual(live.items.map(\.description), [expected])
            XCTAssertTrue(read(file).contains(expected), read(file))

            let replayed = try await collection(source, paging, transport: ReplayTransport(file: file), retryPolicy: .immediate).loadNext()
            XCTAssertEqual(replayed.items.map(\.description), [expected], "replay forwards the recorded bytes")
        }
        // A hand-written recording with whitespace in its body replays the body's own bytes too.
        let handWritten = directory + "/hand.jsonl"
        write(#"{"request": {"method": "GET", "url": "http://127.0.0.1:9/p"}, "response": {"status": 200, "headers": {}, "body": {"items": [ {"v": 2.50} ], "next_cursor": null}}}"# + "\n", to: handWritten)
        let page = try await collection(
            HTTPSource(url: "http://127.0.0.1:9/p"), Paging(strategy: .cursor), transport: ReplayTransport(file: handWritten), retryPolicy: .immediate
        ).loadNext()
        XCTAssertEqual(page.items.map(\.description), [#"{"v":2.50}"#])
    }

    func testASecretInABodyIsRedactedHoweverTheServerEscapedIt() async throws {
        let directory = try temporaryDirectory()
        let token = "tok/abc"
        try await withServer({ _ in .json(#"{"items": [{"id": 1, "echo": "tok\/abc", "n": 1.10}], "next_cursor": null}"#) }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items", headers: [("Authorization", "Bearer \(token)")])
            let file = RecordingTransport.file(directory: directory, collection: "escaped")
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: HTTPRedactor(source: source, exemptQueryNames: []))
            _ = try await collection(source, Paging(strategy: .cursor), transport: recording).loadNext()
            let text = read(file)
            XCTAssertFalse(text.contains("abc"), text)
            XCTAssertTrue(text.contains(#""echo":"[redacted]""#), text)
        }
    }

    func testASecretValueInsideANumberLeavesTheRecordingJSON() async throws {
        // The scrub replaced `123456` inside the number 1234567: `"id":[redacted]7`, and replay refused the file.
        let directory = try temporaryDirectory()
        try await withServer({ _ in .json(#"{"items": [{"id": 1234567, "echo": "123456"}], "next_cursor": null}"#) }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items?api_key=123456")
            let redactor = HTTPRedactor(source: source, exemptQueryNames: [])
            let file = RecordingTransport.file(directory: directory, collection: "numbers")
            _ = try await collection(source, Paging(strategy: .cursor), transport: RecordingTransport(wrapping: transport, file: file, redactor: redactor)).loadNext()
            let line = try JSON.parse(String(read(file).split(separator: "\n")[0]))
            XCTAssertEqual(line.pointer("/response/body/items/0/id")?.integer, 1_234_567)
            XCTAssertEqual(line.pointer("/response/body/items/0/echo")?.string, "[redacted]")
            let replayed = try await collection(source, Paging(strategy: .cursor), transport: ReplayTransport(file: file, redactor: redactor), retryPolicy: .immediate).loadNext()
            XCTAssertEqual(Self.ids(replayed.items), ["1234567"])
        }
    }

    func testNextURLsWhosePagingItemsLookSecretReplayTheirOwnPages() async throws {
        // `$skiptoken` was redacted by name, so pages 2 and 3 had one recorded URL and a replay after a reset gave page 3 as page 2.
        let directory = try temporaryDirectory()
        try await withServer({ request in
            let base = "http://127.0.0.1:\(request.header("Host")?.split(separator: ":").last ?? "0")"
            switch request.uri {
            case "/users?api_key=k-123456": return .json(#"{"value": [{"id": 1}], "@odata.nextLink": "\#(base)/users?api_key=k-123456&$skiptoken=X2"}"#)
            case "/users?api_key=k-123456&$skiptoken=X2": return .json(#"{"value": [{"id": 2}], "@odata.nextLink": "\#(base)/users?api_key=k-123456&$skiptoken=X3"}"#)
            case "/users?api_key=k-123456&$skiptoken=X3": return .json(#"{"value": [{"id": 3}]}"#)
            default: return .status(404, body: request.uri)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/users?api_key=k-123456")
            let paging = Paging(strategy: .nextUrl, items: "/value", next: "/@odata.nextLink")
            let redactor = HTTPRedactor(source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil))
            let file = RecordingTransport.file(directory: directory, collection: "graph")
            let live = try await loadAll(collection(source, paging, transport: RecordingTransport(wrapping: transport, file: file, redactor: redactor)))
            XCTAssertEqual(live.ids, ["1", "2", "3"])
            let text = read(file)
            XCTAssertFalse(text.contains("k-123456"), text)
            // The server's tokens are digested, not shown, and the two pages' URLs stay apart.
            let urls = text.split(separator: "\n").compactMap { try? JSON.parse(String($0)).pointer("/request/url")?.string }
            XCTAssertEqual(urls.count, 3)
            XCTAssertTrue(urls[1].contains("$skiptoken=[redacted:") && !urls[1].contains("X2"), urls[1])
            XCTAssertNotEqual(urls[1], urls[2])

            let offline = collection(source, paging, transport: ReplayTransport(file: file, redactor: redactor), retryPolicy: .immediate)
            _ = try await offline.loadNext()
            _ = try await offline.loadNext()
            await offline.reset()
            let first = try await offline.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1"])
            let second = try await offline.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["2"])
            XCTAssertTrue(second.state.hasNext)
        }
    }

    func testARedirectIsRecordedWithTheURLThatAnsweredAndReplaysTheSame() async throws {
        let directory = try temporaryDirectory()
        try await withServer({ request in
            switch request.uri {
            case "/old": return .status(301, headers: [("Location", "/api/list")])
            case "/api/list": return .json(#"{"items": [{"id": 1}], "next": "list?page=2"}"#)
            case "/api/list?page=2": return .json(#"{"items": [{"id": 2}], "next": null}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/old")
            let paging = Paging(strategy: .nextUrl)
            let file = RecordingTransport.file(directory: directory, collection: "moved")
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: HTTPRedactor())
            let live = try await loadAll(collection(source, paging, transport: recording))
            XCTAssertEqual(live.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/old", "/api/list", "/api/list?page=2"])

            let lines = read(file).split(separator: "\n").map { try? JSON.parse(String($0)) }
            XCTAssertEqual(lines.count, 2)
            XCTAssertEqual(lines[0]?.pointer("/request/url")?.string, server.baseURL + "/old")
            XCTAssertEqual(lines[0]?.pointer("/response/url")?.string, server.baseURL + "/api/list")
            XCTAssertEqual(lines[1]?.pointer("/request/url")?.string, server.baseURL + "/api/list?page=2")
            XCTAssertNil(lines[1]?.pointer("/response/url"))

            let replay = ReplayTransport(file: file)
            let replayed = try await loadAll(collection(source, paging, transport: replay, retryPolicy: .immediate))
            XCTAssertEqual(replayed.ids, ["1", "2"])
            let answered = await replay.answered
            XCTAssertEqual(answered, 2)
            XCTAssertEqual(server.requests.count, 3)
        }
    }

    func testACursorSentInAHeaderIsRecordedAndReplayTellsThePagesApart() async throws {
        let directory = try temporaryDirectory()
        try await withServer({ request in
            // The header's name looks secret; as the cursor's carrier it is recorded all the same.
            switch request.header("X-Page-Token") {
            case nil: return .json(#"{"items": [{"id": "first"}], "next_cursor": "h1"}"#)
            case "h1": return .json(#"{"items": [{"id": "second"}], "next_cursor": "h2"}"#)
            default: return .json(#"{"items": [{"id": "third"}], "next_cursor": null}"#)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/feed")
            let paging = Paging(strategy: .cursor, header: "X-Page-Token")
            let redactor = HTTPRedactor(
                source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil),
                exemptHeaderNames: HTTPRedactor.pagingHeaderNames(paging))
            let file = RecordingTransport.file(directory: directory, collection: "feed")
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: redactor)
            let live = try await loadAll(collection(source, paging, transport: recording))
            XCTAssertEqual(live.ids, ["first", "second", "third"])
            let lines = read(file).split(separator: "\n").map { try? JSON.parse(String($0)) }
            XCTAssertEqual(lines.map { $0?.pointer("/request/headers/X-Page-Token")?.string }, [nil, "h1", "h2"])

            // Every request has the same URL: the header tells them apart, also after a reset.
            let replay = ReplayTransport(file: file, redactor: redactor, cursorHeaders: HTTPRedactor.pagingHeaderNames(paging))
            // Other headers are not compared: a changed Accept still replays.
            let changed = HTTPSource(url: source.url, headers: [("Accept", "application/vnd.feed+json")])
            let offline = collection(changed, paging, transport: replay, retryPolicy: .immediate)
            let replayed = try await loadAll(offline)
            XCTAssertEqual(replayed.ids, ["first", "second", "third"])
            await offline.reset()
            let first = try await offline.loadNext()
            XCTAssertEqual(first.items.map(\.description), [#"{"id":"first"}"#])
            let second = try await offline.loadNext()
            XCTAssertEqual(second.items.map(\.description), [#"{"id":"second"}"#])
            // A cursor that was never recorded is not answered with some other page.
            do {
                let resumed = try await offline.load(lastId: .string("h9"))
                XCTFail("expected no recorded answer, got \(resumed.items)")
            } catch {
                XCTAssertTrue(upstreamFailure(error)?.message.contains("no recorded answer") ?? false, "\(error)")
            }
        }
    }

    func testReplayMatchesMethodURLAndBodyAndAnswersRepeatsInRecordedOrder() async throws {
        let directory = try temporaryDirectory()
        let file = directory + "/graph.jsonl"
        write("""
            {"request":{"method":"POST","url":"https://api.example.com/graphql","body":{"q":"x","variables":{"after":"c1"}}},"response":{"status":200,"headers":{},"body":{"items":[{"id":"second"}],"next":null}}}
            {"request":{"method":"POST","url":"https://api.example.com/graphql","body":{"q":"x"}},"response":{"status":502,"headers":{},"body":"bad gateway"}}

            {"request":{"method":"POST","url":"https://api.example.com/graphql","body":{"q":"x"}},"response":{"status":200,"headers":{"X-Page":["1"]},"body":{"items":[{"id":"first"}],"next":"c1"}}}

            """, to: file)
        let source = HTTPSource(url: "https://api.example.com/graphql", method: .post, body: RawJSON(trusted: Array(#"{"q":"x"}"#.utf8)))
        let replay = ReplayTransport(file: file)
        let paging = Paging(strategy: .cursor, bodyPointer: "/variables/after", next: "/next")
        let collection = collection(source, paging, transport: replay, retryPolicy: .immediate)
        let result = try await loadAll(collection)
        XCTAssertEqual(result.ids, ["first", "second"])
        let answered = await replay.answered
        // The 502 was answered first (and retried), as it was recorded.
        XCTAssertEqual(answered, 3)

        // Identical requests after the recording is used up get the last answer again.
        await collection.reset()
        let again = try await loadAll(collection)
        XCTAssertEqual(again.ids, ["first", "second"])
    }

    func testHeadersAsCaptureToolsWriteThemReplayAndABadLineSaysWhatIsWrong() async throws {
        let directory = try temporaryDirectory()
        let file = directory + "/gh.jsonl"
        // As a capture tool stores them (GitHub's recorded `x-ratelimit-used: 1`):
        // numbers, booleans, null and lists; the URL with its scheme's default port.
        write("""
            {"request":{"method":"GET","url":"https://api.example.com:443/issues?per_page=2"},"response":{"status":200,"headers":{"x-ratelimit-used":1,"x-ratio":0.1,"x-cached":false,"x-gone":null,"link":["<https://api.example.com/issues?per_page=2&page=2>; rel=\\"next\\""]},"body":[{"id":1},{"id":2}]}}
            {"request":{"method":"GET","url":"https://api.example.com/issues?page=2&per_page=2"},"response":{"status":200,"headers":{"x-ratelimit-used":2},"body":[{"id":3}]}}

            """, to: file)
        let source = HTTPSource(url: "https://api.example.com/issues", query: [("per_page", "2")])
        let paging = Paging(strategy: .link, items: "")
        let result = try await loadAll(collection(source, paging, transport: ReplayTransport(file: file), retryPolicy: .immediate))
        XCTAssertEqual(result.ids, ["1", "2", "3"])

        // A line that is no recorded exchange: the failure names the line and what is wrong.
        let broken: [(line: String, problem: String)] = [
            (#"{"request":{"method":"GET","url":"https://api.example.com/issues?per_page=2"},"response":{"status":200,"headers":{"x-limits":{"core":1}},"body":[]}}"#,
             #""response.headers" member "x-limits" is not a string, number, boolean or array of them"#),
            (#"{"request":{"url":"https://api.example.com/issues?per_page=2"},"response":{"status":200,"body":[]}}"#,
             #""request.method" is not a string"#),
        ]
        for (line, problem) in broken {
            write(line + "\n", to: file)
            let message = await failureMessage(collection(source, paging, transport: ReplayTransport(file: file), retryPolicy: .immediate))
            XCTAssertTrue(message.hasSuffix("\(file) line 1 is not a recorded exchange: \(problem)"), message)
        }
    }

    func testARecordingMayEscapeQueryValuesAnyWay() async throws {
        // nextpage sends `after=YWJjZA%3D%3D` and `q=caf%C3%A9%2Bx`; a recording
        // written by hand or by a capture tool may keep them raw, or escape
        // with small letters. The same bytes are the same value.
        let directory = try temporaryDirectory()
        let file = directory + "/c.jsonl"
        write("""
            {"request":{"method":"GET","url":"https://api.example.com/items?q=café%2bx"},"response":{"status":200,"headers":{},"body":{"items":[{"id":1}],"next":"YWJjZA=="}}}
            {"request":{"method":"GET","url":"https://api.example.com/items?after=YWJjZA%3d%3D&q=caf%c3%a9%2Bx"},"response":{"status":200,"headers":{},"body":{"items":[{"id":2}],"next":"n+1"}}}
            {"request":{"method":"GET","url":"https://api.example.com/items?q=caf%C3%A9%2Bx&after=n%2B1"},"response":{"status":200,"headers":{},"body":{"items":[{"id":3}],"next":null}}}

            """, to: file)
        let source = HTTPSource(url: "https://api.example.com/items", query: [("q", "café+x")])
        let paging = Paging(strategy: .cursor, param: "after", next: "/next")
        let result = try await loadAll(collection(source, paging, transport: ReplayTransport(file: file), retryPolicy: .immediate))
        XCTAssertEqual(result.ids, ["1", "2", "3"])

        // A `+` is a `+`, not a space: `n+1` does not match the cursor `n 1`.
        write("""
            {"request":{"method":"GET","url":"https://api.example.com/items?q=caf%C3%A9%2Bx"},"response":{"status":200,"headers":{},"body":{"items":[{"id":1}],"next":"n 1"}}}
            {"request":{"method":"GET","url":"https://api.example.com/items?q=caf%C3%A9%2Bx&after=n+1"},"response":{"status":200,"headers":{},"body":{"items":[{"id":2}],"next":null}}}

            """, to: file)
        let spaced = collection(source, paging, transport: ReplayTransport(file: file), retryPolicy: .immediate)
        let first = try await spaced.loadNext()
        XCTAssertEqual(first.items.count, 1)
        let message = await failureMessage(spaced)
        XCTAssertTrue(message.contains("after=n%201"), message)
    }

    func testUnmatchedReplayRequestIsAnUpstreamErrorNamingMethodAndURL() async throws {
        let directory = try temporaryDirectory()
        let file = directory + "/c.jsonl"
        write(#"{"request":{"method":"GET","url":"https://api.example.com/items","body":null},"response":{"status":200,"headers":{},"body":{"items":[],"next_cursor":null}}}"# + "\n", to: file)
        let source = HTTPSource(url: "https://api.example.com/other", query: [("q", "1")])
        let other = collection(source, Paging(strategy: .cursor), transport: ReplayTransport(file: file), retryPolicy: .immediate)
        do {
            _ = try await other.loadNext()
            XCTFail("expected a failure")
        } catch {
            XCTAssertEqual(upstreamFailure(error), UpstreamFailure(
                status: nil, attempts: 1, retryable: false,
                message: "GET https://api.example.com/other?q=1: no recorded answer in \(file); nearest recorded: GET https://api.example.com/items (path: /items, not /other)"))
        }

        let missing = collection(
            HTTPSource(url: "https://api.example.com/items"), Paging(strategy: .cursor),
            transport: ReplayTransport(file: directory + "/none.jsonl"), retryPolicy: .immediate)
        let message = await failureMessage(missing)
        XCTAssertTrue(message.hasPrefix("GET https://api.example.com/items: no recording \(directory)/none.jsonl"), message)
    }

    func testAnUnmatchedRequestNamesTheNearestRecordedOneAndTheFirstDifference() async throws {
        let directory = try temporaryDirectory()
        let file = directory + "/c.jsonl"
        // Pages 1 to 3 of a page walk, a POST with a body, and one with a cursor header.
        write("""
            {"request":{"method":"GET","url":"https://api.example.com/items?per_page=3"},"response":{"status":200,"headers":{},"body":[]}}
            {"request":{"method":"GET","url":"https://api.example.com/items?per_page=3&page=2"},"response":{"status":200,"headers":{},"body":[]}}
            {"request":{"method":"GET","url":"https://api.example.com/items?per_page=3&page=3"},"response":{"status":200,"headers":{},"body":[]}}
            {"request":{"method":"POST","url":"https://api.example.com/graphql","body":{"query":"q","variables":{"after":"c1","first":2}}},"response":{"status":200,"headers":{},"body":{}}}
            {"request":{"method":"GET","url":"https://api.example.com/feed","headers":{"X-Cursor":"a1"}},"response":{"status":200,"headers":{},"body":{}}}

            """, to: file)
        let replay = ReplayTransport(file: file, cursorHeaders: ["X-Cursor"])
        func miss(_ request: HTTPExchangeRequest) async -> String {
            do {
                _ = try await replay.perform(request, timeout: 5, maxBodyBytes: 1 << 20)
                XCTFail("answered \(request.url)")
                return ""
            } catch {
                guard case .unmatched(let reason) = error else { XCTFail("\(error)"); return "" }
                return reason
            }
        }
        let prefix = "no recorded answer in \(file); nearest recorded: "
        // Of the pages that differ only in `page`, the one nearest the page asked for.
        let page9 = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items?page=9&per_page=3"))
        XCTAssertEqual(page9, prefix + "GET https://api.example.com/items?per_page=3&page=3 (query page: 3, not 9)")
        let page2 = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items?per_page=4&page=2"))
        XCTAssertEqual(page2, prefix + "GET https://api.example.com/items?per_page=3&page=2 (query per_page: 3, not 4)")
        // A parameter recorded but not sent, and one sent under another name.
        let unsent = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items"))
        XCTAssertEqual(unsent, prefix + "GET https://api.example.com/items?per_page=3 (query per_page: 3, not sent)")
        let renamed = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items?per_page=3&p=2"))
        XCTAssertEqual(renamed, prefix + "GET https://api.example.com/items?per_page=3&page=2 (query: page=2, not p=2)")
        // The method, then the body's first differing member.
        let method = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/graphql"))
        XCTAssertEqual(method, prefix + "POST https://api.example.com/graphql (method: POST, not GET)")
        let body = await miss(HTTPExchangeRequest(
            method: "POST", url: "https://api.example.com/graphql", body: Array(#"{"query":"q","variables":{"after":"c2","first":2}}"#.utf8)))
        XCTAssertEqual(body, prefix + #"POST https://api.example.com/graphql (body /variables/after: "c1", not "c2")"#)
        // The header that carries the cursor.
        let header = await miss(HTTPExchangeRequest(method: "GET", url: "https://api.example.com/feed", headers: [("X-Cursor", "b2")]))
        XCTAssertEqual(header, prefix + "GET https://api.example.com/feed (header x-cursor: a1, not b2)")

        // A recording with no exchange in it says so.
        write("\n", to: file)
        do {
            _ = try await ReplayTransport(file: file).perform(
                HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items"), timeout: 5, maxBodyBytes: 1 << 20)
            XCTFail("answered from an empty recording")
        } catch {
            guard case .unmatched(let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(reason, "no recorded answer in \(file) (it records no exchange)")
        }
    }

    func testTheNearestRecordedRequestShowsNoSecret() async throws {
        let directory = try temporaryDirectory()
        let file = directory + "/c.jsonl"
        // As recorded: the key redacted. Sent: a key of the source's own, and another page.
        write("""
            {"request":{"method":"GET","url":"https://api.example.com/items?api_key=[redacted]&page=1"},"response":{"status":200,"headers":{},"body":[]}}

            """, to: file)
        let source = HTTPSource(url: "https://api.example.com/items", query: [("api_key", "sk-live-0123456789")])
        let replay = ReplayTransport(file: file, redactor: HTTPRedactor(source: source, exemptQueryNames: ["page"]))
        do {
            _ = try await replay.perform(
                HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items?api_key=sk-live-0123456789&page=2"), timeout: 5, maxBodyBytes: 1 << 20)
            XCTFail("answered")
        } catch {
            guard case .unmatched(let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(reason, "no recorded answer in \(file); nearest recorded: GET https://api.example.com/items?api_key=[redacted]&page=1 (query page: 1, not 2)")
            XCTAssertFalse(reason.contains("sk-live"), reason)
        }
    }

    /// The message of the upstream failure the collection's next load ends with.
    private func failureMessage(_ collection: PagedCollection, file: StaticString = #filePath, line: UInt = #line) async -> String {
        do {
            _ = try await collection.loadNext()
            XCTFail("expected a failure", file: file, line: line)
            return ""
        } catch {
            return upstreamFailure(error, file: file, line: line)?.message ?? ""
        }
    }
}

/// A thread-safe counter for scripts.
private final class NIOCounter: Sendable {
    private let value = NIOLockedValueBox(0)
    /// The current count, then counts one more.
    func next() -> Int { value.withLockedValue { current in defer { current += 1 }; return current } }
}
