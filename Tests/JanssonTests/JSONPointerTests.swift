import XCTest
import Jansson

final class JSONPointerTests: XCTestCase {
    /// The document of RFC 6901 §5.
    private let rfcDocument = #"""
        {
          "foo": ["bar", "baz"],
          "": 0,
          "a/b": 1,
          "c%d": 2,
          "e^f": 3,
          "g|h": 4,
          "i\\j": 5,
          "k\"l": 6,
          " ": 7,
          "m~n": 8
        }
        """#

    func testRFC6901Section5Examples() throws {
        let document = try JSON.parse(rfcDocument)

        let whole = try XCTUnwrap(document.pointer(""))
        XCTAssertTrue(whole.isEqual(to: document), "\"\" is the whole document")
        XCTAssertEqual(try XCTUnwrap(document.pointer("/foo")).compactString, #"["bar","baz"]"#)
        XCTAssertEqual(document.pointer("/foo/0")?.string, "bar")

        let expected: [(String, Int64)] = [
            ("/", 0),
            ("/a~1b", 1),
            ("/c%d", 2),
            ("/e^f", 3),
            ("/g|h", 4),
            ("/i\\j", 5),
            ("/k\"l", 6),
            ("/ ", 7),
            ("/m~0n", 8),
        ]
        for (pointer, value) in expected {
            let found = document.pointer(pointer)
            XCTAssertNotNil(found, pointer)
            XCTAssertEqual(found?.kind, .integer, pointer)
            XCTAssertEqual(found?.integer, value, pointer)
        }
    }

    func testTokensUnescapeTildeOneBeforeTildeZero() {
        XCTAssertEqual(JSONPointer.tokens(""), [])
        XCTAssertEqual(JSONPointer.tokens("/"), [""])
        XCTAssertEqual(JSONPointer.tokens("//"), ["", ""])
        XCTAssertEqual(JSONPointer.tokens("/a~1b/m~0n"), ["a/b", "m~n"])
        // "~01" is "~" followed by "1", not "/".
        XCTAssertEqual(JSONPointer.tokens("/~01"), ["~1"])
        XCTAssertEqual(JSONPointer.tokens("/~10"), ["/0"])
        XCTAssertEqual(JSONPointer.tokens("/é/😀"), ["é", "😀"])
    }

    func testMalformedPointersAreNil() throws {
        let document = try JSON.parse(rfcDocument)
        for pointer in ["a", "foo", "/~2", "/~", "/foo~", "/a~1b~", "/~a", "#/foo", " /foo"] {
            XCTAssertNil(JSONPointer.tokens(pointer), pointer)
            XCTAssertFalse(JSONPointer.isValid(pointer), pointer)
            XCTAssertNil(document.pointer(pointer), pointer)
        }
        XCTAssertTrue(JSONPointer.isValid(""))
        XCTAssertTrue(JSONPointer.isValid("/"))
        XCTAssertTrue(JSONPointer.isValid("/data/x/pageInfo/hasNextPage"))
    }

    func testArrayIndexRules() throws {
        let document = try JSON.parse(rfcDocument)
        XCTAssertEqual(document.pointer("/foo/1")?.string, "baz")
        XCTAssertNil(document.pointer("/foo/01"), "leading zeros are not indices")
        XCTAssertNil(document.pointer("/foo/00"))
        XCTAssertNil(document.pointer("/foo/-"), "'-' names the element after the last: nothing")
        XCTAssertNil(document.pointer("/foo/2"), "out of range")
        XCTAssertNil(document.pointer("/foo/-1"))
        XCTAssertNil(document.pointer("/foo/+1"))
        XCTAssertNil(document.pointer("/foo/1.0"))
        XCTAssertNil(document.pointer("/foo/"))
        XCTAssertNil(document.pointer("/foo/ 1"))
        XCTAssertNil(document.pointer("/foo/99999999999999999999999"), "overflowing index")
        XCTAssertNil(document.pointer("/foo/0/x"), "a string has no members")
        XCTAssertNil(document.pointer("/a~1b/0"), "an integer has no elements")
        XCTAssertNil(document.pointer("/missing"))
        XCTAssertNil(document.pointer("/a/b"), "an unescaped / separates tokens")
    }

    func testNestedPointersAndTopLevelArrays() throws {
        let document = try JSON.parse(#"[{"items": [{"id": 10}, {"id": 11}]}, [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]]]"#)
        XCTAssertEqual(document.pointer("/0/items/1/id")?.integer, 11)
        XCTAssertEqual(document.pointer("/1/0/10")?.integer, 10)
        XCTAssertEqual(document.pointer("/1/0/0")?.integer, 0)
        XCTAssertNil(document.pointer("/2"))
        XCTAssertNil(document.pointer("/0/items/1/id/x"))
        let graphQL = try JSON.parse(#"{"data": {"x": {"pageInfo": {"hasNextPage": false, "endCursor": "abc"}}}}"#)
        XCTAssertEqual(graphQL.pointer("/data/x/pageInfo/hasNextPage")?.bool, false)
        XCTAssertEqual(graphQL.pointer("/data/x/pageInfo/endCursor")?.string, "abc")
    }

    func testEscapedTokensBetweenPlainOnesAndKeysThatArePrefixes() throws {
        let document = try JSON.parse(#"{"x": {"m~n": {"a/b": [5, {"": 6}]}}, "ab": 1, "a": {"b": 2}}"#)
        XCTAssertEqual(document.pointer("/x/m~0n/a~1b/0")?.integer, 5)
        XCTAssertEqual(document.pointer("/x/m~0n/a~1b/1/")?.integer, 6, "an empty last token is the key \"\"")
        XCTAssertNil(document.pointer("/x/m~0n/a~2b/0"), "a bad escape after tokens that resolve")
        XCTAssertNil(document.pointer("/x/m~0n/a~1b/0~"), "a bad escape in the last token")
        XCTAssertNil(document.pointer("/x/m~1n"), "~1 is /, not ~")
        XCTAssertEqual(document.pointer("/a/b")?.integer, 2)
        XCTAssertEqual(document.pointer("/ab")?.integer, 1)
        XCTAssertNil(document.pointer("/abc"), "keys are matched whole")
        XCTAssertNil(document.pointer("/x/m"), "keys are matched whole")
        XCTAssertEqual(document["ab"]?.integer, 1)
        XCTAssertNil(document["a\u{0}b"], "a key is matched with its length, past a NUL")
        XCTAssertNil(document[""])
        XCTAssertEqual(try JSON.parse(rfcDocument)[""]?.integer, 0)
    }
}
