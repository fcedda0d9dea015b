import Foundation
import Jansson
import NextPage
@testable import NextPageServer
import XCTest

final class DefinitionValidatorTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "nextpage-validator-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/pages", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A valid definition's text with `source` pointing at the temp dir, plus extra members.
    private func definition(paging: String = #"{"strategy": "cursor"}"#, extra: String = "", source: String? = nil) -> String {
        let source = source ?? #"{"type": "file", "dir": "\#(dir)/pages"}"#
        return #"{"source": \#(source), "paging": \#(paging)\#(extra.isEmpty ? "" : ", " + extra)}"#
    }

    private func defineError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DefinitionError? {
        do {
            let json = try JSON.parse(text)
            let result = try DefinitionValidator().validate(json, ignoring: ["name"])
            XCTFail("validated \(text) as \(result)", file: file, line: line)
        } catch let error as DefinitionError {
            return error
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
        return nil
    }

    private func configError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DefinitionError? {
        do {
            let json = try JSON.parse(text)
            let result = try DefinitionValidator().validateConfig(json)
            XCTFail("validated \(text) as \(result)", file: file, line: line)
        } catch let error as DefinitionError {
            return error
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
        return nil
    }

    // MARK: Field paths

    func testRelativePathsResolveAgainstTheConfigFolderWithoutDotSegments() {
        let here = DefinitionValidator(baseDirectory: ".")
        XCTAssertEqual(here.resolve("./pages.sh"), "./pages.sh")
        XCTAssertEqual(here.resolve("pages"), "./pages")
        XCTAssertEqual(here.resolve("."), ".")
        XCTAssertEqual(here.resolve("./"), "./")
        let there = DefinitionValidator(baseDirectory: "/etc/np")
        XCTAssertEqual(there.resolve("././bin/x"), "/etc/np/bin/x")
        XCTAssertEqual(there.resolve("../x"), "/etc/np/../x")
        XCTAssertEqual(there.resolve("/abs/x"), "/abs/x")
        XCTAssertEqual(DefinitionValidator(baseDirectory: "/etc/np/").resolve("x"), "/etc/np/x")
        XCTAssertEqual(DefinitionValidator().resolve("./x"), "./x")
    }

    func testBadStrategyInAConfigNamesTheDottedPath() throws {
        let text = #"{"collections": {"friends": \#(definition(paging: #"{"strategy": "sometimes"}"#))}}"#
        let error = try XCTUnwrap(configError(text))
        XCTAssertEqual(error.field, "collections.friends.paging.strategy")
        XCTAssertTrue(error.expected.hasPrefix("one of "), error.expected)
        for name in ["cursor", "lastId", "page", "offset", "link", "nextUrl"] {
            XCTAssertTrue(error.expected.contains(name), error.expected)
        }
        XCTAssertTrue(error.description.hasPrefix("collections.friends.paging.strategy: expected one of "), error.description)
    }

    func testBadStrategyInDefineNamesTheField() throws {
        let error = try XCTUnwrap(defineError(definition(paging: #"{"strategy": "sometimes"}"#)))
        XCTAssertEqual(error.field, "paging.strategy")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": 3}"#))?.field, "paging.strategy")
        XCTAssertEqual(defineError(definition(paging: #"{}"#))?.field, "paging.strategy", "missing strategy")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "Cursor"}"#))?.field, "paging.strategy", "names are exact")
    }

    func testLinkStrategyNeedsHeadersAFileSourceCannotServe() {
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "link"}"#))?.field, "paging.strategy")
    }

    func testUnknownFields() throws {
        let collectionField = try XCTUnwrap(defineError(definition(extra: #""colour": "blue""#)))
        XCTAssertEqual(collectionField.field, "colour")
        XCTAssertTrue(collectionField.expected.contains("no such field"), collectionField.expected)
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "nxet": "/n"}"#))?.field, "paging.nxet")
        XCTAssertEqual(defineError(definition(source: #"{"type": "file", "dir": "\#(dir)", "url": "x"}"#))?.field, "source.url")
        XCTAssertEqual(configError(#"{"collections": {"a": \#(definition(extra: #""x": 1"#))}}"#)?.field, "collections.a.x")
        XCTAssertEqual(configError(#"{"collection": {}}"#)?.field, "collection")
        // `name` belongs to define; anywhere else it is unknown.
        let named = try JSON.parse(definition(extra: #""name": "friends""#))
        XCTAssertNoThrow(try DefinitionValidator().validate(named, ignoring: ["name"]))
        XCTAssertThrowsError(try DefinitionValidator().validate(named)) { error in
            XCTAssertEqual((error as? DefinitionError)?.field, "name")
        }
    }

    func testWrongTypesAndRanges() {
        let cases: [(String, String)] = [
            (#""pageSize": "50""#, "pageSize"),
            (#""pageSize": 0"#, "pageSize"),
            (#""pageSize": 2.5"#, "pageSize"),
            (#""pageSize": null"#, "pageSize"),
            (#""maxItems": -1"#, "maxItems"),
            (#""maxItems": "many""#, "maxItems"),
            (#""maxItems": true"#, "maxItems"),
            (#""prefetch": 3"#, "prefetch"),
            (#""prefetch": -1"#, "prefetch"),
            (#""prefetch": "1""#, "prefetch"),
            (#""dedupe": "yes""#, "dedupe"),
            (#""dedupe": 1"#, "dedupe"),
            (#""onRepeatedCursor": "panic""#, "onRepeatedCursor"),
            (#""onRepeatedCursor": true"#, "onRepeatedCursor"),
            (#""maxEmptyPages": -2"#, "maxEmptyPages"),
            (#""pageSizeParam": """#, "pageSizeParam"),
            (#""pageSizeParam": 5"#, "pageSizeParam"),
            (#""concurrency": 0"#, "concurrency"),
            (#""concurrency": 33"#, "concurrency"),
            (#""concurrency": "8""#, "concurrency"),
        ]
        for (member, field) in cases {
            XCTAssertEqual(defineError(definition(extra: member))?.field, field, member)
            XCTAssertEqual(configError(#"{"collections": {"c": \#(definition(extra: member))}}"#)?.field, "collections.c.\(field)", member)
        }
        XCTAssertEqual(defineError(definition(extra: #""pageSize": "50""#))?.expected, "an integer ≥ 1")
        XCTAssertEqual(defineError(definition(extra: #""prefetch": 3"#))?.expected, "an integer from 0 to 2")
        XCTAssertEqual(defineError(definition(extra: #""concurrency": 0"#))?.expected, "an integer from 1 to 32")
        XCTAssertEqual(defineError(definition(extra: #""dedupe": "yes""#))?.expected, "true or false")
        XCTAssertEqual(defineError(definition(extra: #""onRepeatedCursor": "panic""#))?.expected, "one of stop, error")
    }

    func testPagingFieldTypes() {
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "page", "start": -1}"#))?.field, "paging.start")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "page", "param": ""}"#))?.field, "paging.param")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "offset", "limitParam": 10}"#))?.field, "paging.limitParam")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "header": ""}"#))?.field, "paging.header")
    }

    func testSourceErrors() throws {
        XCTAssertEqual(defineError(#"{"paging": {"strategy": "cursor"}}"#)?.field, "source", "missing source")
        XCTAssertEqual(defineError(definition(source: #""file""#))?.field, "source", "source not an object")
        XCTAssertEqual(defineError(definition(source: #"{"dir": "\#(dir)"}"#))?.field, "source.type", "missing type")
        XCTAssertEqual(defineError(definition(source: #"{"type": "ftp", "dir": "\#(dir)"}"#))?.field, "source.type")
        XCTAssertEqual(defineError(definition(source: #"{"type": "file"}"#))?.field, "source.dir", "missing dir")
        XCTAssertEqual(defineError(definition(source: #"{"type": "file", "dir": ""}"#))?.field, "source.dir", "empty dir")
        XCTAssertEqual(defineError(definition(source: #"{"type": "file", "dir": 7}"#))?.field, "source.dir")

        let missing = try XCTUnwrap(defineError(definition(source: #"{"type": "file", "dir": "\#(dir)/no-such-dir"}"#)))
        XCTAssertEqual(missing.field, "source.dir", "non-existent dir")
        XCTAssertTrue(missing.expected.contains("no-such-dir"), missing.expected)

        _ = FileManager.default.createFile(atPath: dir + "/plain.txt", contents: Data("x".utf8))
        XCTAssertEqual(defineError(definition(source: #"{"type": "file", "dir": "\#(dir)/plain.txt"}"#))?.field, "source.dir",
                       "a file is not a directory")
        XCTAssertEqual(configError(#"{"collections": {"f": \#(definition(source: #"{"type": "file"}"#))}}"#)?.field,
                       "collections.f.source.dir")
        XCTAssertEqual(defineError(#"{"source": {"type": "file", "dir": "\#(dir)"}}"#)?.field, "paging", "missing paging")
        for bad in ["0", "-1", "1.5", #""1024""#] {
            XCTAssertEqual(defineError(definition(source: #"{"type": "file", "dir": "\#(dir)", "maxBodyBytes": \#(bad)}"#))?.field,
                           "source.maxBodyBytes", bad)
        }
        let unknown = try XCTUnwrap(defineError(definition(source: #"{"type": "file", "dir": "\#(dir)", "url": "x"}"#)))
        XCTAssertEqual(unknown.expected, "no such field for a file source (known: dir, maxBodyBytes, type)")
    }

    func testBadPointers() {
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "items": "items"}"#))?.field, "paging.items")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "next": "/~2"}"#))?.field, "paging.next")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "lastId", "id": "id"}"#))?.field, "paging.id")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "hasNext": "/a~"}"#))?.field, "paging.hasNext")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "page", "total": 5}"#))?.field, "paging.total")
        XCTAssertEqual(defineError(definition(paging: #"{"strategy": "cursor", "bodyPointer": "variables/after"}"#))?.field,
                       "paging.bodyPointer")
        let error = defineError(definition(paging: #"{"strategy": "cursor", "items": "items"}"#))
        XCTAssertTrue(error?.expected.contains("JSON Pointer") ?? false, error?.expected ?? "")
        XCTAssertEqual(configError(#"{"collections": {"f": \#(definition(paging: #"{"strategy": "cursor", "items": "x"}"#))}}"#)?.field,
                       "collections.f.paging.items")
    }

    func testConfigShapeErrors() {
        XCTAssertEqual(configError("[]")?.field, "(top level)")
        XCTAssertEqual(configError("{}")?.field, "collections")
        XCTAssertEqual(configError(#"{"collections": []}"#)?.field, "collections")
        let unnamed = configError(#"{"collections": {"": \#(definition())}}"#)
        XCTAssertTrue(unnamed?.field.hasPrefix("collections") ?? false, unnamed?.field ?? "no error for an empty name")
        XCTAssertEqual(configError(#"{"collections": {"x": 5}}"#)?.field, "collections.x")
        XCTAssertEqual(configError(#"{"$schema": 1, "collections": {}}"#)?.field, "$schema")
        XCTAssertNoThrow(try DefinitionValidator().validateConfig(JSON.parse(#"{"$schema": "config.schema.json", "collections": {}}"#)))
    }

    func testIntegersWrittenAsRealsAreIntegers() throws {
        // JSON Schema's "integer" takes 10.0; the validator refused it.
        let text = definition(paging: #"{"strategy": "page", "start": 2.0}"#, extra: #""pageSize": 10.0, "maxItems": 1e3, "prefetch": 1.0"#)
        let valid = try DefinitionValidator().validate(JSON.parse(text), ignoring: ["name"])
        XCTAssertEqual(valid.options.pageSize, 10)
        XCTAssertEqual(valid.options.maxItems, 1000)
        XCTAssertEqual(valid.paging.start, 2)
        XCTAssertEqual(defineError(definition(extra: #""pageSize": 10.5"#))?.field, "pageSize")
    }

    // MARK: Valid definitions

    func testValidConfigYieldsPagingAndOptions() throws {
        let text = #"""
            {"$schema": "./config.schema.json", "collections": {
              "friends": {
                "source": {"type": "file", "dir": "\#(dir)/pages"},
                "paging": {"strategy": "lastId", "param": "after", "items": "/data", "id": "/uid", "hasNext": "/has_more"},
                "pageSize": 50, "pageSizeParam": "per_page", "maxItems": 1000, "prefetch": 1,
                "dedupe": true, "onRepeatedCursor": "error", "maxEmptyPages": 3, "concurrency": 8
              },
              "numbers": {
                "source": {"type": "file", "dir": "pages", "maxBodyBytes": 1024},
                "paging": {"strategy": "offset", "limitParam": "count", "start": 5, "total": "/meta/total", "items": ""}
              }
            }}
            """#
        let result = try DefinitionValidator(baseDirectory: dir).validateConfig(JSON.parse(text))
        XCTAssertEqual(result.map(\.name), ["friends", "numbers"])

        let friends = result[0].definition
        XCTAssertEqual(friends.source, .file(directory: "\(dir)/pages"))
        XCTAssertEqual(friends.source, .file(directory: "\(dir)/pages", maxBodyBytes: 64 << 20), "the default limit")
        XCTAssertEqual(friends.paging, Paging(strategy: .lastId, param: "after", items: "/data", id: "/uid", hasNext: "/has_more"))
        XCTAssertEqual(friends.options, CollectionOptions(
            pageSize: 50, pageSizeParam: "per_page", maxItems: 1000, prefetch: 1, dedupe: true,
            onRepeatedCursor: .error, maxEmptyPages: 3, concurrency: 8))

        let numbers = result[1].definition
        XCTAssertEqual(numbers.source, .file(directory: "\(dir)/pages", maxBodyBytes: 1024), "relative dirs resolve against the base directory")
        XCTAssertEqual(numbers.paging, Paging(strategy: .offset, limitParam: "count", start: 5, items: "", total: "/meta/total"))
        XCTAssertEqual(numbers.paging.param, "offset")
        XCTAssertEqual(numbers.options, CollectionOptions())
    }

    func testMinimalDefinitionGetsDefaults() throws {
        let result = try DefinitionValidator().validate(JSON.parse(definition()))
        XCTAssertEqual(result.paging, Paging(strategy: .cursor))
        XCTAssertEqual(result.paging.items, "/items")
        XCTAssertEqual(result.paging.next, "/next_cursor")
        XCTAssertEqual(result.options, CollectionOptions())
        XCTAssertEqual(result.options.maxItems, 100_000)
        XCTAssertEqual(result.options.maxEmptyPages, 10)
        XCTAssertEqual(result.options.onRepeatedCursor, .stop)
        XCTAssertEqual(result.options.prefetch, 0)
        XCTAssertFalse(result.options.dedupe)
        XCTAssertEqual(result.options.concurrency, 1)
    }

    func testDedupeWithoutAnIdPointerReadsSlashId() throws {
        let result = try DefinitionValidator().validate(JSON.parse(definition(extra: #""dedupe": true"#)))
        XCTAssertEqual(result.paging.id, "/id")
        XCTAssertTrue(result.options.dedupe)
    }

    func testValidatedDefinitionWalksItsFiles() async throws {
        try Data(#"{"items": [{"id": 1}], "next_cursor": "b"}"#.utf8).write(to: URL(fileURLWithPath: dir + "/pages/first.json"))
        try Data(#"{"items": [{"id": 2}], "next_cursor": null}"#.utf8).write(to: URL(fileURLWithPath: dir + "/pages/b.json"))
        let definition = try DefinitionValidator().validate(JSON.parse(definition()))
        let collection = definition.makeCollection(name: "walk")
        XCTAssertEqual(collection.name, "walk")
        let first = try await collection.loadNext()
        let second = try await collection.loadNext()
        XCTAssertEqual(first.items.map(\.description), [#"{"id":1}"#])
        XCTAssertEqual(second.items.map(\.description), [#"{"id":2}"#])
        XCTAssertFalse(second.state.hasNext)
    }
}
