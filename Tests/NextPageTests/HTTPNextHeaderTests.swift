import Foundation
import Jansson
import NextPage
import XCTest

/// `paging.nextHeader`: the next cursor read from a response header, over a
/// real HTTP server; the items delivered, the requests made, and a recording
/// that replays the same walk.
final class HTTPNextHeaderTests: HTTPSourceTestCase {
    /// Pages of ids 1...5 over three requests; each page's next cursor is in
    /// `X-Next-Cursor` (a cursor with bytes a URL must encode), and the body
    /// carries a `next_cursor` that must not be followed.
    static let headerCursorScript: HTTPTestServer.Script = { request in
        switch request.queryValue("cursor") {
        case nil:
            return .json(#"{"items": \#(items([1, 2])), "next_cursor": "decoy"}"#, headers: [("X-Next-Cursor", " a+b/c= ")])
        case "a%2Bb%2Fc%3D":
            return .json(#"{"items": \#(items([3, 4]))}"#, headers: [("x-next-cursor", "p3"), ("X-Next-Cursor", "ignored")])
        case "p3":
            return .json(#"{"items": \#(items([5])), "next_cursor": "decoy"}"#)
        default:
            return .status(404, body: "no such cursor")
        }
    }

    func testCursorFromAResponseHeaderIsSentAsParam() async throws {
        try await withServer(Self.headerCursorScript) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let paging = Paging(strategy: .cursor, nextHeader: "X-Next-Cursor")
            let collection = collection(source, paging, transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...5), "each item once, in order")
            XCTAssertEqual(result.pages, 3)
            // Blanks around the value are trimmed; the first of repeated headers counts; a page without the header ends.
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=a%2Bb%2Fc%3D", "/items?cursor=p3"])
            let state = await collection.state
            XCTAssertFalse(state.hasNext)
            XCTAssertNil(state.lastId)
        }
    }

    func testHeaderCursorGoesWhereParamSays() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1]))}"#, headers: [("X-Next", "n2")]),
            .json(#"{"items": \#(Self.items([2]))}"#, headers: [("X-Next", "")]),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items?per_page=1")
            let paging = Paging(strategy: .cursor, param: "after", nextHeader: "X-Next")
            let collection = collection(source, paging, transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            // An empty header is the end.
            XCTAssertEqual(server.requests.map(\.uri), ["/items?per_page=1", "/items?per_page=1&after=n2"])
        }
    }

    func testHasNextPointerStillDecidesWithAHeaderCursor() async throws {
        try await withServer(answers: [
            .json(#"{"items": \#(Self.items([1])), "more": true}"#, headers: [("X-Next-Cursor", "c2")]),
            .json(#"{"items": \#(Self.items([2])), "more": false}"#, headers: [("X-Next-Cursor", "c3")]),
        ]) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items")
            let paging = Paging(strategy: .cursor, hasNext: "/more", nextHeader: "X-Next-Cursor")
            let result = try await loadAll(collection(source, paging, transport: transport))
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.count, 2)
        }
    }

    func testNextURLFromAResponseHeader() async throws {
        try await withServer({ request in
            switch request.uri {
            case "/v1/items": return .json(#"{"items": \#(Self.items([1])), "links": {"next": "/decoy"}}"#, headers: [("X-Next-Page", "/v1/items?page=2")])
            case "/v1/items?page=2": return .json(#"{"items": \#(Self.items([2]))}"#, headers: [("X-Next-Page", "\(request.header("Host").map { "http://\($0)" } ?? "")/v1/items?page=3")])
            case "/v1/items?page=3": return .json(#"{"items": \#(Self.items([3]))}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/v1/items")
            let paging = Paging(strategy: .nextUrl, nextHeader: "X-Next-Page")
            let result = try await loadAll(collection(source, paging, transport: transport))
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            // A relative URL is resolved against the URL that answered; an absolute one followed as given.
            XCTAssertEqual(server.requests.map(\.uri), ["/v1/items", "/v1/items?page=2", "/v1/items?page=3"])
        }
    }

    /// A header whose name looks secret (`...-Token`) still carries the
    /// cursor: it is kept in the recording, and the replay follows it.
    func testHeaderCursorIsRecordedAndReplayed() async throws {
        var template = Array((NSTemporaryDirectory() + "/nextpage-header-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        let directory = String(cString: made)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        try await withServer({ request in
            switch request.queryValue("cursor") {
            case nil: return .json(#"{"items": \#(Self.items([1, 2]))}"#, headers: [("X-Continuation-Token", "tok-2")])
            case "tok-2": return .json(#"{"items": \#(Self.items([3]))}"#, headers: [("X-Continuation-Token", "tok-3")])
            case "tok-3": return .json(#"{"items": []}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let source = HTTPSource(url: server.baseURL + "/items", headers: [("Authorization", "Bearer sekrit-value-123")])
            let paging = Paging(strategy: .cursor, nextHeader: "X-Continuation-Token")
            let redactor = HTTPRedactor(
                source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil),
                exemptHeaderNames: HTTPRedactor.pagingHeaderNames(paging))
            let file = RecordingTransport.file(directory: directory, collection: "tokens")
            let live = collection(source, paging, transport: RecordingTransport(wrapping: transport, file: file, redactor: redactor))
            let recorded = try await loadAll(live)
            XCTAssertEqual(recorded.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=tok-2", "/items?cursor=tok-3"])

            let text = String(decoding: FileManager.default.contents(atPath: file) ?? Data(), as: UTF8.self)
            XCTAssertFalse(text.contains("sekrit-value-123"), text)
            let lines = try text.split(separator: "\n").map { try JSON.parse(String($0)) }
            XCTAssertEqual(lines.count, 3)
            XCTAssertEqual(lines[0].pointer("/response/headers/X-Continuation-Token")?.string, "tok-2", "the cursor header is kept")

            let replay = ReplayTransport(file: file, redactor: redactor)
            let offline = collection(source, paging, transport: replay, retryPolicy: .immediate)
            let replayed = try await loadAll(offline)
            XCTAssertEqual(replayed.ids, ["1", "2", "3"], "the replay follows the recorded header cursors")
            let answered = await replay.answered
            XCTAssertEqual(answered, 3)
            XCTAssertEqual(server.requests.count, 3, "the replay made no request")
        }
    }
}
