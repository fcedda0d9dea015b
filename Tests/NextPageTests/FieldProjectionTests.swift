import Jansson
import NextPage
import XCTest

/// `fields` (docs/methods.md): items projected to some members, keyed by each
/// pointer's last token, from the bytes the source wrote.
final class FieldProjectionTests: XCTestCase {
    private func project(_ items: [String], _ pointers: [String]) throws -> String {
        let page = PageItems(items.map { RawJSON(trusted: Array($0.utf8)) })
        let projection = try FieldProjection(pointers: pointers)
        return String(decoding: projection.project(page).array, as: UTF8.self)
    }

    func testKeysAreLastTokensInTheOrderGiven() throws {
        XCTAssertEqual(
            try project([#"{"id":1,"title":"a","user":{"login":"ann","id":7}}"#], ["/user/login", "/title"]),
            #"[{"login":"ann","title":"a"}]"#)
    }

    func testValuesAreCopiedAsWritten() throws {
        // 1.10 and the escape would change if the value were parsed and dumped again.
        XCTAssertEqual(
            try project([#"{"price":1.10,"name":"caf\u00e9","tags":["x",{"k":[1e2]}]}"#], ["/price", "/name", "/tags"]),
            #"[{"price":1.10,"name":"caf\u00e9","tags":["x",{"k":[1e2]}]}]"#)
    }

    func testAMissingMemberIsLeftOut() throws {
        XCTAssertEqual(
            try project([#"{"id":1}"#, #"{"id":2,"title":null}"#, "3", #"{"user":"not an object"}"#], ["/title", "/user/login"]),
            #"[{},{"title":null},{},{}]"#)
    }

    func testArrayIndexesAndEscapedTokens() throws {
        XCTAssertEqual(
            try project([#"{"tags":["a","b"],"a/b":{"~c":5}}"#], ["/tags/1", "/a~1b/~0c", "/tags/9"]),
            #"[{"1":"b","~c":5}]"#)
    }

    func testTheLastOfDuplicateKeysWinsAsInJansson() throws {
        XCTAssertEqual(try project([#"{"id":1,"id":2}"#], ["/id"]), #"[{"id":2}]"#)
    }

    func testEscapedKeysAreMatchedDecoded() throws {
        XCTAssertEqual(try project([#"{"ti\u0074le":"x","n":1}"#], ["/title", "/n"]), #"[{"title":"x","n":1}]"#)
    }

    func testAnItemNeitherTheScannerNorJanssonCanReadHasNoMembers() throws {
        // A key with U+0000: the scanner refuses it, and so does jansson, so
        // no member can be vouched for (items that landed were read by jansson).
        XCTAssertEqual(try project([#"{"a\u0000":1,"n":2.50}"#], ["/n"]), #"[{}]"#)
    }

    func testProjectionsThatCannotBeMadeAreRefused() {
        XCTAssertThrowsError(try FieldProjection(pointers: ["/user/id", "/id"])) {
            XCTAssertEqual($0 as? FieldProjection.Problem, .sameKey("id"))
        }
        XCTAssertThrowsError(try FieldProjection(pointers: [""])) { XCTAssertEqual($0 as? FieldProjection.Problem, .wholeItem) }
        XCTAssertThrowsError(try FieldProjection(pointers: ["title"])) { XCTAssertEqual($0 as? FieldProjection.Problem, .notAPointer("title")) }
        XCTAssertThrowsError(try FieldProjection(pointers: ["/a~2"])) { XCTAssertEqual($0 as? FieldProjection.Problem, .notAPointer("/a~2")) }
        let many = (0...FieldProjection.maxFields).map { "/f\($0)" }
        XCTAssertThrowsError(try FieldProjection(pointers: many)) { XCTAssertEqual($0 as? FieldProjection.Problem, .tooMany(many.count)) }
    }

    func testProjectedItemsAreValidJSON() throws {
        let text = try project([#"{"a":{"b":[1,2,{"c":"}"}]},"d":"\"]"}"#], ["/a", "/d"])
        let parsed = try JSON.parse(text)
        XCTAssertEqual(parsed.count, 1)
        XCTAssertEqual(parsed[0]?["d"]?.string, "\"]")
        XCTAssertEqual(parsed[0]?.pointer("/a/b/2/c")?.string, "}")
    }
}
