import XCTest
import Jansson

final class RawJSONTests: XCTestCase {
    private var trickyStrings: [String] {
        var strings = [
            "", "plain", "\"", "\\", "\"\\\"", "a\"b\\c", "\\u0041", "/", "</script>",
            "\n", "\r\n", "\t", "\u{0}", "a\u{0}b", "\u{7F}", "\u{8}\u{C}", "\u{1B}[31m",
            "é", "日本語", "😀", "👩‍👩‍👧", "\u{2028}\u{2029}", "\u{FEFF}", "\u{10FFFF}", "e\u{301}",
            "{\"not\": \"an object\"}", "[1,2]", "null", "~0~1", String(repeating: "x\"\n", count: 1000),
        ]
        strings.append(String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }))
        strings.append(String((0x20..<0x80).map { Character(Unicode.Scalar(UInt8($0))) }))
        return strings
    }

    func testStringEscapesQuotesBackslashesAndControls() {
        XCTAssertEqual(RawJSON.string("a\"b\\c").description, #""a\"b\\c""#)
        XCTAssertEqual(RawJSON.string("\n\r\t").description, #""\n\r\t""#)
        XCTAssertEqual(RawJSON.string("\u{0}\u{1}\u{1F}").description, #""\u0000\u0001\u001f""#)
        XCTAssertEqual(RawJSON.string("").description, #""""#)
        XCTAssertEqual(RawJSON.string("/").description, #""/""#)
    }

    func testStringKeepsNonASCIIAsUTF8() {
        let raw = RawJSON.string("é日😀")
        XCTAssertEqual(raw.bytes, Array("\"é日😀\"".utf8))
    }

    func testStringOutputHasNoRawControlBytes() {
        for string in trickyStrings {
            let bytes = RawJSON.string(string).bytes
            XCTAssertFalse(bytes.contains { $0 < 0x20 }, string.debugDescription)
            XCTAssertEqual(bytes.first, UInt8(ascii: "\""))
            XCTAssertEqual(bytes.last, UInt8(ascii: "\""))
        }
    }

    func testStringParsesBackToTheSameString() throws {
        for string in trickyStrings {
            let raw = RawJSON.string(string)
            let parsed = try raw.parsed()
            XCTAssertEqual(parsed.kind, .string, string.debugDescription)
            XCTAssertEqual(parsed.string, string, string.debugDescription)
            // jansson agrees on what the string is.
            XCTAssertTrue(parsed.isEqual(to: JSON.string(string)), string.debugDescription)
        }
    }

    func testObjectAndArrayProduceParseableJSON() throws {
        let strings = trickyStrings
        // jansson refuses NUL in object keys, so keys leave it out; values keep it.
        func key(_ offset: Int, _ string: String) -> String { "k\(offset)" + string.filter { $0 != "\u{0}" } }
        let object = RawJSON.object(strings.enumerated().map { (key($0.offset, $0.element), RawJSON.string($0.element)) })
        let parsed = try object.parsed()
        XCTAssertEqual(parsed.kind, .object)
        XCTAssertEqual(parsed.count, strings.count)
        for (offset, string) in strings.enumerated() {
            XCTAssertEqual(parsed[key(offset, string)]?.string, string, string.debugDescription)
        }
        XCTAssertEqual(parsed.members.map(\.key), strings.enumerated().map { key($0.offset, $0.element) })

        let array = RawJSON.array(strings.map(RawJSON.string))
        let parsedArray = try array.parsed()
        XCTAssertEqual(parsedArray.elements.map(\.string), strings.map { Optional($0) })
        XCTAssertFalse(array.bytes.contains(UInt8(ascii: "\n")))
    }

    func testObjectLeavesOutNilMembersAndKeepsOrder() throws {
        let raw = RawJSON.object([
            "z": .integer(1), "gone": nil, "a": .array([RawJSON.true, .false, .null]),
            "nested": .object(["x": .emptyArray, "y": nil]), "n": .integer(Int64.min),
        ])
        XCTAssertEqual(raw.description, #"{"z":1,"a":[true,false,null],"nested":{"x":[]},"n":-9223372036854775808}"#)
        XCTAssertEqual(try raw.parsed().pointer("/nested/x")?.kind, .array)
        XCTAssertEqual(RawJSON.object([(String, RawJSON?)]()).description, "{}")
        XCTAssertEqual(RawJSON.object(["only": nil]).description, "{}")
        XCTAssertEqual(RawJSON.array([RawJSON]()).description, "[]")
        XCTAssertEqual(RawJSON.array([RawJSON.integer(1)]).description, "[1]")
    }

    func testRawJSONOfAJSONValueIsItsCompactDump() throws {
        let value = try JSON.parse(#"{ "a" : [ 1 , "x\ny" ] }"#)
        let raw = RawJSON(value)
        XCTAssertEqual(raw.description, #"{"a":[1,"x\ny"]}"#)
        XCTAssertTrue(try raw.parsed().isEqual(to: value))
        XCTAssertEqual(RawJSON.bool(true), .true)
        XCTAssertEqual(RawJSON.bool(false), .false)
        XCTAssertEqual(RawJSON.integer(-12).description, "-12")
    }
}
