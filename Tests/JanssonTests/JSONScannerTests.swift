import Jansson
import XCTest

/// `JSONScanner` finds an array where jansson would, compacts it without
/// changing a value, and refuses what it cannot vouch for.
final class JSONScannerTests: XCTestCase {
    private func compact(_ text: String, at pointer: String) -> JSONScanner.CompactArray? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { JSONScanner.compactArray(at: JSONPointer.tokens(pointer)!, in: $0) }
    }

    private func items(_ found: JSONScanner.CompactArray?) -> [String] {
        guard let found else { return [] }
        var result: [String] = []
        for (index, start) in found.starts.enumerated() {
            let end = index + 1 < found.starts.count ? Int(found.starts[index + 1]) - 1 : found.bytes.count - 1
            result.append(String(decoding: found.bytes[Int(start)..<end], as: UTF8.self))
        }
        return result
    }

    func testCompactsAndSplitsTheArrayAtAPointer() throws {
        let text = "{\"a\": 1,\n \"items\" : [ {\"id\" : 1, \"s\": \"x y\\n\"} ,\t[ 2 , 3 ] , \"three\" , null , -1.5e3 , true ],\r\n \"z\": [9]}"
        let found = try XCTUnwrap(compact(text, at: "/items"))
        XCTAssertEqual(String(decoding: found.bytes, as: UTF8.self), #"[{"id":1,"s":"x y\n"},[2,3],"three",null,-1.5e3,true]"#)
        XCTAssertEqual(items(found), [#"{"id":1,"s":"x y\n"}"#, "[2,3]", #""three""#, "null", "-1.5e3", "true"])
        let original = Array(text.utf8)[found.range]
        XCTAssertEqual(original.first, UInt8(ascii: "["))
        XCTAssertEqual(original.last, UInt8(ascii: "]"))
        // The compacted array is the same value as the original one.
        let parsedOriginal = try JSON.parse(text).pointer("/items")!
        XCTAssertTrue(try JSON.parse(found.bytes).isEqual(to: parsedOriginal))
    }

    func testCountsTheObjectMembersBeforeEachElement() throws {
        // Colons inside strings and keys are not members; nested objects are.
        let text = #"{"skip": {"x": 1}, "items": [{"a:b": "c:d", "n": {"m": 1, "k": [{"j": 2}]}}, [1, 2], {}, {"z" : "\":"}]}"#
        let found = try XCTUnwrap(compact(text, at: "/items"))
        XCTAssertEqual(found.membersBefore, [0, 5, 5, 5, 6])
        XCTAssertEqual(try XCTUnwrap(compact(#"{"items": []}"#, at: "/items")).membersBefore, [0])
        // The count agrees with jansson's tree when no key repeats, and not when one does.
        XCTAssertEqual(try JSON.parse(found.bytes).memberCount, 6)
        let repeated = try XCTUnwrap(compact(#"{"items": [{"a": 1, "b": {"c": 1, "\u0063": 2}}]}"#, at: "/items"))
        XCTAssertEqual(repeated.membersBefore, [0, 4])
        XCTAssertEqual(try JSON.parse(repeated.bytes).memberCount, 3)
    }

    func testEmptyArraysNestedPointersAndTheWholeText() throws {
        XCTAssertEqual(compact(#"{"items": [ ]}"#, at: "/items")?.starts, [])
        XCTAssertEqual(compact(#"{"items": [ ]}"#, at: "/items").map { String(decoding: $0.bytes, as: UTF8.self) }, "[]")
        let nested = #"{"data": {"x": {"nodes": [1, 2], "pageInfo": {"endCursor": "c"}}}}"#
        XCTAssertEqual(items(compact(nested, at: "/data/x/nodes")), ["1", "2"])
        XCTAssertEqual(compact(nested, at: "/data/x/nodes")?.depth, 4)
        XCTAssertEqual(items(compact(" [ 1 , {\"a\" : [ ] } ] ", at: "")), ["1", #"{"a":[]}"#])
        XCTAssertEqual(items(compact(#"{"pages": [[0], [1, 2]]}"#, at: "/pages/1")), ["1", "2"])
    }

    func testTheLastOfDuplicateKeysWinsAsInJansson() throws {
        let text = #"{"items": [1, 2], "next": null, "items": [3]}"#
        XCTAssertEqual(items(compact(text, at: "/items")), ["3"])
        XCTAssertEqual(try JSON.parse(text).pointer("/items")?.count, 1, "jansson agrees")
        // A later duplicate that is not an array: nothing to vouch for.
        XCTAssertNil(compact(#"{"items": [1], "items": 5}"#, at: "/items"))
    }

    func testEscapedKeysAreComparedAfterUnescaping() {
        XCTAssertEqual(items(compact(#"{"\u0069tems": [7]}"#, at: "/items")), ["7"])
        XCTAssertEqual(items(compact(#"{"a\/b": [8]}"#, at: "/a~1b")), ["8"])
        XCTAssertEqual(items(compact(#"{"\ud83d\ude00": [9]}"#, at: "/😀")), ["9"])
        XCTAssertNil(compact(#"{"\ud83d": [9]}"#, at: "/x"), "a lone surrogate cannot be compared")
    }

    func testWhitespaceThatWouldGlueTokensIsRefused() {
        // Removing these spaces would turn invalid JSON into valid JSON.
        XCTAssertNil(compact(#"{"items": [1 2]}"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": [tr ue]}"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": [1 .5]}"#, at: "/items"))
        // Spaces next to structure or strings are fine.
        XCTAssertEqual(items(compact(#"{"items": [ "a" , 1 ]}"#, at: "/items")), [#""a""#, "1"])
    }

    func testAnArrayClosedByABraceIsRefused() {
        // Items are checked one run at a time; the array's own brackets are the scanner's to check.
        XCTAssertNil(compact(#"{"items": [1, 2}}"#, at: "/items"))
        XCTAssertNil(compact(#"[1, 2}"#, at: ""))
    }

    func testNotFoundOrNotAnArrayOrUnfinished() {
        XCTAssertNil(compact(#"{"data": []}"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": {}}"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": "[1]"}"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": [1, 2"#, at: "/items"))
        XCTAssertNil(compact(#"{"items": ["unterminated]}"#, at: "/items"))
        XCTAssertNil(compact("", at: ""))
        XCTAssertNil(compact(#"[1]"#, at: "/0"), "an index into a scalar names nothing")
    }

    func testStringsAreCopiedVerbatimWhateverTheyHold() throws {
        let text = #"{"items": ["a \" ] } , [ b", "\\", "\u00e9 é 😀", "tab\there"]}"#
        let found = try XCTUnwrap(compact(text, at: "/items"))
        XCTAssertEqual(items(found), [#""a \" ] } , [ b""#, #""\\""#, #""\u00e9 é 😀""#, #""tab\there""#])
        XCTAssertTrue(try JSON.parse(found.bytes).isEqual(to: JSON.parse(text).pointer("/items")!))
    }

    func testStringsOfEveryLengthWithEscapesAnywhereAreCopiedWhole() throws {
        // Strings are copied sixteen bytes at a time (eight, then one by one,
        // near the end of the text): every length around two blocks, an
        // escape at every place in it, and the text ending right after it.
        for length in 0..<40 {
            for escapeAt in [-1] + Array(0..<length) {
                var body = String(repeating: "x", count: length)
                if escapeAt >= 0 {
                    let index = body.index(body.startIndex, offsetBy: escapeAt)
                    body.replaceSubrange(index...index, with: #"\""#)
                }
                for text in [#"["\#(body)"]"#, #"[ "\#(body)" , {"\#(body)" : "\#(body)"} ]"#] {
                    let found = try XCTUnwrap(compact(text, at: ""), text)
                    XCTAssertEqual(String(decoding: found.bytes, as: UTF8.self), text.replacingOccurrences(of: " ", with: ""), text)
                    XCTAssertTrue(try JSON.parse(found.bytes).isEqual(to: JSON.parse(text)), text)
                }
                // An unfinished string is refused, wherever the text stops.
                XCTAssertNil(compact(#"["\#(body)"#, at: ""))
                XCTAssertNil(compact(#"["\#(body)\"#, at: ""))
            }
        }
    }

    func testTwoEscapesAnywhereAtAnyAlignmentWithTextAfterTheString() throws {
        // Blocks are read sixteen bytes at a time from wherever a string
        // starts: shift the string through every alignment, put two escapes
        // (an escaped backslash right before the closing quote among them) at
        // every pair of places within and beyond the first block, and follow
        // it with more text to copy.
        let escapes = [#"\\"#, #"\""#, #"\u00e9"#, #"\n"#]
        for shift in 0..<8 {
            let padding = String(repeating: " ", count: shift)
            for length in 0..<20 {
                for first in 0...length {
                    for second in first...length {
                        for (a, b) in [(0, 1), (1, 0), (2, 3), (0, 0)] {
                            var characters = (0..<length).map { ["a", "b", "é"][$0 % 3] }
                            characters.insert(escapes[b], at: second)
                            characters.insert(escapes[a], at: first)
                            let body = characters.joined()
                            let text = #"[\#(padding)"\#(body)", "k\#(body)x", {"\#(body)": 1}]"#
                            let found = try XCTUnwrap(compact(text, at: ""), text)
                            let expected = text.replacingOccurrences(of: padding + "\"", with: "\"")
                                .replacingOccurrences(of: ", ", with: ",").replacingOccurrences(of: ": ", with: ":")
                            XCTAssertEqual(String(decoding: found.bytes, as: UTF8.self), expected, text)
                        }
                    }
                }
            }
        }
    }

    func testDepthCountsTheContainersAroundAndInside() {
        XCTAssertEqual(compact(#"{"items": [1]}"#, at: "/items")?.depth, 2)
        XCTAssertEqual(compact(#"{"items": [[[{"a": [1]}]]]}"#, at: "/items")?.depth, 6)
        XCTAssertEqual(compact(#"[[1]]"#, at: "")?.depth, 2)
    }

    func testCompactOfOneValue() {
        XCTAssertEqual(Array(" { \"a\" : [ 1 , 2 ] } ".utf8).withUnsafeBufferPointer(JSONScanner.compact).map { String(decoding: $0, as: UTF8.self) }, #"{"a":[1,2]}"#)
        XCTAssertEqual(Array(" 12 ".utf8).withUnsafeBufferPointer(JSONScanner.compact).map { String(decoding: $0, as: UTF8.self) }, "12")
        XCTAssertNil(Array("1 2".utf8).withUnsafeBufferPointer(JSONScanner.compact))
    }

    private func located(_ text: String, at pointer: String) -> String? {
        let bytes = Array(text.utf8)
        let range = bytes.withUnsafeBufferPointer { JSONScanner.valueRange(at: JSONPointer.tokens(pointer)!, in: $0) }
        return range.map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    func testValueRangeGivesAValueAsWritten() {
        let text = #"{"request": {"body": null}, "response": {"status": 200, "body": {"items": [1.10, -0, 1e2, "\u00e9"] }, "z": 1}}"#
        XCTAssertEqual(located(text, at: "/response/body"), #"{"items": [1.10, -0, 1e2, "\u00e9"] }"#)
        XCTAssertEqual(located(text, at: "/response/body/items/0"), "1.10")
        XCTAssertEqual(located(text, at: "/response/body/items/3"), #""\u00e9""#)
        XCTAssertEqual(located(text, at: "/request/body"), "null")
        XCTAssertEqual(located(text, at: "/response/status"), "200")
        XCTAssertEqual(located(" [ [1] , 2 ] ", at: ""), "[ [1] , 2 ]")
        // The last of duplicate keys, as in jansson; nothing where nothing is.
        XCTAssertEqual(located(#"{"a": [1], "a": {"b": 2}}"#, at: "/a"), #"{"b": 2}"#)
        XCTAssertNil(located(#"{"a": 1}"#, at: "/b"))
        XCTAssertNil(located(#"{"a": [1]}"#, at: "/a/1"))
        XCTAssertNil(located(#"{"a": [1, "#, at: "/a"))
    }
}

/// `JSONScanner.lookup` tells a value from an absence from a text it cannot vouch for.
final class JSONScannerLookupTests: XCTestCase {
    private func lookup(_ text: String, _ pointer: String) -> (JSONScanner.Lookup, String?) {
        let bytes = Array(text.utf8)
        let found = bytes.withUnsafeBufferPointer { JSONScanner.lookup(at: JSONPointer.tokens(pointer)!, in: $0) }
        if case .value(let range) = found { return (found, String(decoding: bytes[range], as: UTF8.self)) }
        return (found, nil)
    }

    func testFindsValuesAsWritten() {
        XCTAssertEqual(lookup(#"{"\u0061": 1}"#, "/a").1, "1", "an escaped key is matched decoded")
        XCTAssertEqual(lookup(#"{"a": {"b": [10, 1.50, "x"]}}"#, "/a/b/1").1, "1.50")
        XCTAssertEqual(lookup(#"{"a": {"b": [10, 1.50, "x"]}}"#, "/a").1, #"{"b": [10, 1.50, "x"]}"#)
        XCTAssertEqual(lookup(#"{"k": 1, "k": 2}"#, "/k").1, "2")
    }

    func testTellsAbsence() {
        XCTAssertEqual(lookup(#"{"a": 1}"#, "/b").0, .absent)
        XCTAssertEqual(lookup(#"{"a": 1}"#, "/a/b").0, .absent)
        XCTAssertEqual(lookup(#"[1, 2]"#, "/5").0, .absent)
        XCTAssertEqual(lookup(#"{}"#, "/a").0, .absent)
    }

    func testRefusesWhatItCannotVouchFor() {
        XCTAssertEqual(lookup(#"{"\u0000": 1, "a": 2}"#, "/a").0, .unknown)
        XCTAssertEqual(lookup(#"{"a": "#, "/a").0, .unknown)
        XCTAssertEqual(lookup("", "/a").0, .unknown)
    }
}
