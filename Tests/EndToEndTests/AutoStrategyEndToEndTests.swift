import Foundation
import XCTest

/// `"strategy": "auto"` and `paging.nextHeader` over the real binary and a
/// real server on 127.0.0.1 that serves recorded API shapes (`RecordedAPI`):
/// GitHub's Link headers and Notion's `next_cursor`
/// (NextPageServerTests/HTTPFixtures, recorded from the real APIs), and
/// Stripe's `has_more` list, Slack's `response_metadata.next_cursor`,
/// Microsoft Graph's `@odata.nextLink`, a JSON:API `links.next` and an
/// API with an `X-Next-Cursor` header (Transcripts/upstream, hand-written
/// after each API's documentation; see the README.md there). Each walk is
/// checked for the items printed (each once, in order), the requests the
/// server received, and the state file afterwards.
final class AutoStrategyEndToEndTests: EndToEndTestCase {
    struct Shape {
        let name: String
        let recording: String
        let origin: String
        /// The source, with `ORIGIN` for the recorded origin.
        let source: String
        let paging: String
        /// The pointer of each item's identity, and what it must be, in order.
        let idPointer: String
        let ids: [String]
        /// What `auto` must pick, as the state file holds it (`nil`: not auto).
        let pick: String?
    }

    static let shapes: [Shape] = [
        Shape(
            name: "github-issues", recording: "NextPageServerTests/HTTPFixtures/github-issues.jsonl", origin: "https://api.github.com",
            source: #"{"type": "http", "url": "ORIGIN/repos/octokit-fixture-org/paginate-issues/issues", "query": {"per_page": "3"}}"#,
            paging: #"{"strategy": "auto"}"#, idPointer: "number", ids: (1...13).reversed().map(String.init),
            pick: #"{"strategy":"link","items":""}"#),
        Shape(
            name: "notion-blocks", recording: "NextPageServerTests/HTTPFixtures/notion-blocks.jsonl", origin: "https://api.notion.com",
            source: #"{"type": "http", "url": "ORIGIN/v1/blocks/393abc1e-edcd-814b-aee5-cf69471e5a43/children", "query": {"page_size": "2"}}"#,
            paging: #"{"strategy": "auto", "param": "start_cursor"}"#, idPointer: "id",
            ids: ["393abc1e-edcd-81b4-97e4-e74d4867a8a1", "393abc1e-edcd-813d-9f29-e8c616b0f017", "393abc1e-edcd-817b-900d-c75ec8d2f272",
                  "393abc1e-edcd-8186-8baf-db45a5b6fdba", "393abc1e-edcd-81d2-b73d-feaa29f12025"],
            pick: #"{"strategy":"cursor","items":"/results","next":"/next_cursor","param":"start_cursor"}"#),
        Shape(
            name: "stripe-customers", recording: "Transcripts/upstream/stripe-customers.jsonl", origin: "https://api.stripe.com",
            source: #"{"type": "http", "url": "ORIGIN/v1/customers", "query": {"limit": "2"}}"#,
            paging: #"{"strategy": "auto"}"#, idPointer: "id", ids: (1...5).map { "cus_Q\($0)xYz8kLm\($0)" },
            pick: #"{"strategy":"lastId","items":"/data","param":"starting_after","id":"/id","hasNext":"/has_more"}"#),
        Shape(
            name: "slack-conversations", recording: "Transcripts/upstream/slack-conversations.jsonl", origin: "https://slack.com",
            source: #"{"type": "http", "url": "ORIGIN/api/conversations.list", "query": {"limit": "2"}}"#,
            paging: #"{"strategy": "auto"}"#, idPointer: "id", ids: (1...5).map { "C0\($0)ABCDEF" },
            pick: #"{"strategy":"cursor","items":"/channels","next":"/response_metadata/next_cursor","param":"cursor"}"#),
        Shape(
            name: "graph-users", recording: "Transcripts/upstream/graph-users.jsonl", origin: "https://graph.microsoft.com",
            source: #"{"type": "http", "url": "ORIGIN/v1.0/users?$top=2"}"#,
            paging: #"{"strategy": "auto"}"#, idPointer: "id", ids: (1...5).map { "87d349ed-44d7-43e1-9a83-5f2406dee5b\($0)" },
            pick: #"{"strategy":"nextUrl","items":"/value","next":"/@odata.nextLink"}"#),
        Shape(
            name: "jsonapi-articles", recording: "Transcripts/upstream/jsonapi-articles.jsonl", origin: "https://api.example.com",
            source: #"{"type": "http", "url": "ORIGIN/articles", "query": {"page[size]": "2"}}"#,
            paging: #"{"strategy": "auto"}"#, idPointer: "id", ids: (1...5).map(String.init),
            pick: #"{"strategy":"nextUrl","items":"/data","next":"/links/next"}"#),
        Shape(
            name: "header-cursor-events", recording: "Transcripts/upstream/header-cursor-events.jsonl", origin: "https://api.example.com",
            source: #"{"type": "http", "url": "ORIGIN/v2/events", "query": {"limit": "2"}}"#,
            paging: #"{"strategy": "cursor", "nextHeader": "X-Next-Cursor", "items": "/events"}"#, idPointer: "id",
            ids: (1...5).map { "ev_000\($0)" }, pick: nil),
    ]

    func testEachShapeIsWalkedOnceAndItsPickIsSaved() throws {
        for shape in Self.shapes {
            let api = try RecordedAPI(file: RecordedAPI.folder(shape.recording), origin: shape.origin)
            let server = try FaultyHTTPServer(script: { _ in .json("{}") })
            addTeardownBlock { server.stop() }
            server.setScript(api.script(base: server.baseURL))
            let directory = try temporaryDirectory()
            let source = shape.source.replacingOccurrences(of: "ORIGIN", with: server.baseURL)
            try writeFile(directory + "/nextpage.json", #"{"collections": {"\#(shape.name)": {"source": \#(source), "paging": \#(shape.paging)}}}"#)

            let all = try runNextpage(["all", shape.name, "--state", "s.json"], in: directory)
            XCTAssertEqual(all.status, 0, "\(shape.name): \(all.stderr)")
            let ids = try all.lines.map { try JSONValue.parse($0)[shape.idPointer].map { $0.stringValue ?? $0.intValue.map(String.init) ?? "?" } ?? "?" }
            XCTAssertEqual(ids, shape.ids, "\(shape.name): each item once, in order")
            XCTAssertEqual(server.requests.count, api.exchanges.count, "\(shape.name): one request per page: \(server.requests)")

            let state = try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
            let pick = shape.pick.map { #","paging":\#($0)"# } ?? ""
            try expectMatch(
                state,
                #"{"version":1,"collections":{"\#(shape.name)":{"hasNext":false,"lastId":null,"count":\#(shape.ids.count),"pages":\#(api.exchanges.count),"lastError":null\#(pick)}}}"#,
                "\(shape.name): the state file")

            // At the end: nothing more is fetched.
            let next = try runNextpage(["next", shape.name, "--state", "s.json"], in: directory)
            XCTAssertEqual(next.status, 1, "\(shape.name): \(next.stderr)")
            XCTAssertEqual(server.requests.count, api.exchanges.count, shape.name)
        }
    }

    func testAResumedWalkGoesOnWithTheSavedPick() throws {
        // Page by page with `nextpage next`: each run is a new process that
        // must walk on the way the first page decided (Stripe: lastId after
        // the last customer, which no page says by itself).
        let shape = try XCTUnwrap(Self.shapes.first { $0.name == "stripe-customers" })
        let api = try RecordedAPI(file: RecordedAPI.folder(shape.recording), origin: shape.origin)
        let server = try FaultyHTTPServer(script: { _ in .json("{}") })
        addTeardownBlock { server.stop() }
        server.setScript(api.script(base: server.baseURL))
        let directory = try temporaryDirectory()
        let source = shape.source.replacingOccurrences(of: "ORIGIN", with: server.baseURL)
        try writeFile(directory + "/nextpage.json", #"{"collections": {"c": {"source": \#(source), "paging": {"strategy": "auto"}}}}"#)
        var ids: [String] = []
        for run in 1...3 {
            let next = try runNextpage(["next", "c", "--state", "s.json"], in: directory)
            XCTAssertEqual(next.status, 0, next.stderr)
            let page = try JSONValue.parse(next.stdout)
            ids += page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            let state = try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
            try expectMatch(state["collections"]?["c"]?["paging"] ?? .null, shape.pick!, "the pick after run \(run)")
        }
        XCTAssertEqual(ids, shape.ids)
        XCTAssertEqual(server.requests, [
            "/v1/customers?limit=2", "/v1/customers?limit=2&starting_after=cus_Q2xYz8kLm2", "/v1/customers?limit=2&starting_after=cus_Q4xYz8kLm4",
        ])
    }

    func testAFirstPageMatchingNothingIsAnErrorNamingWhatWasLookedFor() throws {
        let server = try FaultyHTTPServer(script: { _ in .json(#"{"items": [{"id": 1}, {"id": 2}]}"#) })
        addTeardownBlock { server.stop() }
        let config = #"{"collections": {"c": {"source": {"type": "http", "url": "\#(server.baseURL)/items"}, "paging": {"strategy": "auto"}}}}"#
        let session = try startServer(config: config, arguments: ["--state", "s.json"])
        try session.request("1", "loadNext", #"{"collection": "c"}"#)
        let lookedFor = "a first page that shows how it pages (auto looks for a Link header with rel=\\\"next\\\"; a next URL at /next, /links/next, /pagination/next or /@odata.nextLink; a next cursor at /next_cursor, /nextCursor, /cursor, /pagination/next_cursor, /meta/next_cursor or /response_metadata/next_cursor; or a boolean at /has_more); this page has none of them: name the strategy, or give paging.next or paging.nextHeader"
        try expectMatch(session.reply("1"), rpcError(1, #"""
            {"code":-32004,"message":"Invalid collection definition of c, as its first page shows: paging.strategy: expected \#(lookedFor)",
             "data":{"field":"paging.strategy","expected":"\#(lookedFor)"}}
            """#))
        try session.request("2", "status", #"{"collection": "c"}"#)
        try expectMatch(session.reply("2"), rpcResult(2, #"""
            {"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,
             "lastError":"paging.strategy: expected \#(lookedFor)","paging":null}
            """#))
        try session.request("3", "items", #"{"collection": "c"}"#)
        try expectMatch(session.reply("3"), rpcResult(3, #"{"collection":"c","items":[],"count":0,"offset":0}"#))
        // The same first page is asked for again: still nothing lands.
        try session.request("4", "loadNext", #"{"collection": "c"}"#)
        try expectMatch(session.reply("4"), rpcError(4, #"{"code":-32004,"message":"<string>","data":{"field":"paging.strategy","expected":"\#(lookedFor)"}}"#))
        try session.finish()
        XCTAssertEqual(server.requests, ["/items", "/items"])
        let state = try JSONValue.parse(String(contentsOfFile: session.directory + "/s.json", encoding: .utf8))
        try expectMatch(state, #"{"version":1,"collections":{"c":{"hasNext":true,"lastId":null,"count":0,"pages":0,"lastError":"<string>"}}}"#)

        // From the shell: status 2, the message on stderr, nothing on stdout.
        let next = try runNextpage(["next", "c"], in: session.directory)
        XCTAssertEqual(next.status, 2)
        XCTAssertEqual(next.stdout, "")
        XCTAssert(next.stderr.contains("nextpage: Invalid collection definition of c, as its first page shows: paging.strategy: expected a first page that shows how it pages"), next.stderr)
    }

    func testCheckConfigSaysTheStrategyIsDecidedFromTheFirstPage() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/c.json", #"""
            {"collections": {"a": {"source": {"type": "http", "url": "https://api.example.com/a"}, "paging": {"strategy": "auto"}},
                             "b": {"source": {"type": "http", "url": "https://api.example.com/b"}, "paging": {"strategy": "cursor"}}}}
            """#)
        let check = try runNextpage(["check-config", "c.json"], in: directory)
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stdout, """
            c.json: ok, 2 collection(s): a, b
            a: paging.strategy auto: decided from the first page of each walk (status shows what was picked)

            """)
    }
}
