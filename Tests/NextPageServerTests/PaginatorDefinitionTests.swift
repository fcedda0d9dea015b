import Foundation
import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// The definition checks of `paging.nextHeader`, `"strategy": "auto"` and
/// `incremental`: each bad value is -32004 naming the field.
final class PaginatorDefinitionTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "nextpage-paginators-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/pages", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    static let http = #"{"type": "http", "url": "https://api.example.com/items"}"#
    private var file: String { #"{"type": "file", "dir": "\#(dir)/pages"}"# }
    private var command: String { #"{"type": "command", "argv": ["cat", "\#(dir)/pages/first.json"]}"# }

    private func definition(_ paging: String, source: String = PaginatorDefinitionTests.http, extra: String = "") -> String {
        #"{"source": \#(source), "paging": \#(paging)\#(extra.isEmpty ? "" : ", " + extra)}"#
    }

    private func validated(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> CollectionDefinition {
        try DefinitionValidator().validate(try JSON.parse(text), ignoring: ["name"])
    }

    private func error(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DefinitionError? {
        do {
            let result = try validated(text)
            XCTFail("validated \(text) as \(result)", file: file, line: line)
        } catch let error as DefinitionError {
            return error
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
        return nil
    }

    // MARK: nextHeader

    func testNextHeaderIsReadIntoPaging() throws {
        let cursor = try validated(definition(#"{"strategy": "cursor", "nextHeader": "X-Next-Cursor"}"#))
        XCTAssertEqual(cursor.paging.nextHeader, "X-Next-Cursor")
        let nextURL = try validated(definition(#"{"strategy": "nextUrl", "nextHeader": "X-Next-Page"}"#))
        XCTAssertEqual(nextURL.paging.nextHeader, "X-Next-Page")
        XCTAssertNil(try validated(definition(#"{"strategy": "cursor"}"#)).paging.nextHeader)
    }

    func testNextHeaderErrorsNameTheField() {
        XCTAssertEqual(
            error(definition(#"{"strategy": "cursor", "nextHeader": "X-Next"}"#, source: file)),
            DefinitionError(field: "paging.nextHeader", expected: "no nextHeader with a file source (it has no response headers)"))
        XCTAssertEqual(
            error(definition(#"{"strategy": "cursor", "nextHeader": "X-Next"}"#, source: command)),
            DefinitionError(field: "paging.nextHeader", expected: "no nextHeader with a command source (it has no response headers)"))
        XCTAssertEqual(
            error(definition(#"{"strategy": "lastId", "nextHeader": "X-Next"}"#)),
            DefinitionError(field: "paging.nextHeader", expected: "a strategy that reads a next cursor (cursor, nextUrl, auto); lastId does not"))
        XCTAssertEqual(
            error(definition(#"{"strategy": "cursor", "nextHeader": "X-Next", "next": "/next"}"#)),
            DefinitionError(field: "paging.next", expected: "either next or nextHeader, not both"))
        XCTAssertEqual(error(definition(#"{"strategy": "cursor", "nextHeader": "X Next"}"#))?.field, "paging.nextHeader")
        XCTAssertEqual(error(definition(#"{"strategy": "cursor", "nextHeader": 1}"#))?.field, "paging.nextHeader")
    }

    // MARK: auto

    func testAutoTakesHintsAndAnySource() throws {
        let bare = try validated(definition(#"{"strategy": "auto"}"#))
        XCTAssertEqual(bare.paging.strategy, .auto)
        XCTAssertEqual(bare.paging.given, Paging.Given())
        let hinted = try validated(definition(#"{"strategy": "auto", "items": "/rows", "next": "/after", "param": "after", "id": "/uid", "hasNext": "/more"}"#))
        XCTAssertEqual(hinted.paging.given, Paging.Given(param: "after", items: "/rows", next: "/after"))
        XCTAssertEqual(hinted.paging.id, "/uid")
        XCTAssertEqual(hinted.paging.hasNext, "/more")
        XCTAssertEqual(try validated(definition(#"{"strategy": "auto", "nextHeader": "X-Next"}"#)).paging.nextHeader, "X-Next")
        // A file or command source has no Link header, but its pages may show a next URL or cursor.
        XCTAssertEqual(try validated(definition(#"{"strategy": "auto"}"#, source: file)).paging.strategy, .auto)
        XCTAssertEqual(try validated(definition(#"{"strategy": "auto"}"#, source: command)).paging.strategy, .auto)
        // A cursor picked may go in a header or a POST body.
        XCTAssertEqual(try validated(definition(#"{"strategy": "auto", "header": "X-Cursor"}"#)).paging.header, "X-Cursor")
    }

    func testAutoErrorsNameTheField() {
        XCTAssertEqual(
            error(definition(#"{"strategy": "auto", "nextHeader": "X-Next"}"#, source: file)),
            DefinitionError(field: "paging.nextHeader", expected: "no nextHeader with a file source (it has no response headers)"))
        XCTAssertEqual(
            error(definition(#"{"strategy": "auto", "nextHeader": "X-Next", "next": "/n"}"#)),
            DefinitionError(field: "paging.next", expected: "either next or nextHeader, not both"))
        XCTAssertEqual(
            error(definition(#"{"strategy": "automatic"}"#)),
            DefinitionError(field: "paging.strategy", expected: "one of cursor, lastId, page, offset, link, nextUrl, auto"))
    }

    // MARK: incremental

    func testIncrementalIsReadIntoTheOptions() throws {
        let full = try validated(definition(
            #"{"strategy": "cursor"}"#, extra: #""incremental": {"pointer": "/updated_at", "param": "since", "initial": "2024-01-01T00:00:00Z"}"#))
        XCTAssertEqual(full.options.incremental?.pointer, "/updated_at")
        XCTAssertEqual(full.options.incremental?.param, "since")
        XCTAssertEqual(full.options.incremental?.initial?.kind, .timestamp)
        XCTAssertEqual(full.options.incremental?.initial?.text, "2024-01-01T00:00:00Z")
        let number = try validated(definition(#"{"strategy": "cursor"}"#, extra: #""incremental": {"pointer": "/id", "param": "since_id", "initial": 0}"#))
        XCTAssertEqual(number.options.incremental?.initial?.kind, .number)
        XCTAssertNil(try validated(definition(#"{"strategy": "cursor"}"#)).options.incremental)
        // Without param any source may filter its items by the value.
        XCTAssertEqual(try validated(definition(#"{"strategy": "cursor"}"#, source: file, extra: #""incremental": {"pointer": "/t"}"#)).options.incremental?.param, nil)
        // A cursor sent in a header leaves the query's names free.
        XCTAssertEqual(
            try validated(definition(#"{"strategy": "cursor", "header": "X-Cursor"}"#, extra: #""incremental": {"pointer": "/t", "param": "cursor"}"#)).options.incremental?.param,
            "cursor")
    }

    func testIncrementalErrorsNameTheField() {
        func incremental(_ value: String, paging: String = #"{"strategy": "cursor"}"#, source: String = PaginatorDefinitionTests.http, extra: String = "") -> DefinitionError? {
            error(definition(paging, source: source, extra: #""incremental": \#(value)"# + (extra.isEmpty ? "" : ", " + extra)))
        }
        XCTAssertEqual(incremental("true"), DefinitionError(field: "incremental", expected: #"an object {"pointer", "param", "initial"}"#))
        XCTAssertEqual(incremental(#"{"param": "since"}"#)?.field, "incremental.pointer")
        XCTAssertEqual(incremental(#"{"pointer": "updated_at"}"#)?.field, "incremental.pointer")
        XCTAssertEqual(incremental(#"{"pointer": "/t", "since": "x"}"#), DefinitionError(field: "incremental.since", expected: "no such field (known: initial, param, pointer)"))
        XCTAssertEqual(incremental(#"{"pointer": "/t", "param": ""}"#)?.field, "incremental.param")
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "initial": {"a": 1}}"#),
            DefinitionError(field: "incremental.initial", expected: "a string (an ISO 8601 timestamp, or other text) or a number"))
        XCTAssertEqual(incremental(#"{"pointer": "/t", "initial": true}"#)?.field, "incremental.initial")
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "param": "since"}"#, source: file),
            DefinitionError(field: "incremental.param", expected: "an http source (the value is sent as a query parameter); without param the items are only filtered"))
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "param": "cursor"}"#),
            DefinitionError(field: "incremental.param", expected: "a query parameter other than paging.param ('cursor')"))
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "param": "starting_after"}"#, paging: #"{"strategy": "auto"}"#),
            DefinitionError(field: "incremental.param", expected: "a query parameter other than paging.param ('starting_after')"))
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "param": "limit"}"#, paging: #"{"strategy": "offset"}"#),
            DefinitionError(field: "incremental.param", expected: "a query parameter other than paging.limitParam ('limit')"))
        XCTAssertEqual(
            incremental(#"{"pointer": "/t", "param": "per_page"}"#, extra: #""pageSizeParam": "per_page""#),
            DefinitionError(field: "incremental.param", expected: "a query parameter other than pageSizeParam ('per_page')"))
    }
}
