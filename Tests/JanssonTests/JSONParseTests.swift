import XCTest
import Jansson

final class JSONParseTests: XCTestCase {
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONParseError? {
        do {
            let value = try JSON.parse(text)
            XCTFail("parsed \(text.debugDescription) as \(value.compactString)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Every kind

    func testParsesEveryKindAtTopLevel() throws {
        let object = try JSON.parse(#"{"a": 1, "b": [true]}"#)
        XCTAssertEqual(object.kind, .object)
        XCTAssertEqual(object.count, 2)

        let array = try JSON.parse("[1, \"two\", null]")
        XCTAssertEqual(array.kind, .array)
        XCTAssertEqual(array.count, 3)

        let string = try JSON.parse(#""h\u00e9llo\n""#)
        XCTAssertEqual(string.kind, .string)
        XCTAssertEqual(string.string, "héllo\n")

        let integer = try JSON.parse("-9223372036854775808")
        XCTAssertEqual(integer.kind, .integer)
        XCTAssertEqual(integer.integer, Int64.min)
        XCTAssertEqual(try JSON.parse("42").number, 42)

        let real = try JSON.parse("2.5e3")
        XCTAssertEqual(real.kind, .real)
        XCTAssertEqual(real.number, 2500)
        XCTAssertNil(real.integer, "a real is not an integer")

        let yes = try JSON.parse("true")
        XCTAssertEqual(yes.kind, .bool)
        XCTAssertEqual(yes.bool, true)
        XCTAssertEqual(try JSON.parse("false").bool, false)

        let null = try JSON.parse(" null ")
        XCTAssertEqual(null.kind, .null)
        XCTAssertTrue(null.isNull)
        XCTAssertNil(null.bool)
        XCTAssertNil(null.string)
        XCTAssertNil(null.number)
    }

    func testAccessorsReturnNilForOtherKinds() throws {
        let value = try JSON.parse(#"{"s": "x", "i": 3, "a": [1, 2]}"#)
        XCTAssertNil(value["s"]?.integer)
        XCTAssertNil(value["i"]?.string)
        XCTAssertNil(value["a"]?.bool)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["a"]?["x"], "key lookup on an array")
        XCTAssertNil(value[0], "index lookup on an object")
        XCTAssertEqual(value["a"]?[1]?.integer, 2)
        XCTAssertNil(value["a"]?[2])
        XCTAssertNil(value["a"]?[-1])
        XCTAssertEqual(value["s"]?.count, 0)
    }

    func testStringsKeepNulAndNonASCII() throws {
        let value = try JSON.parse(#"["a\u0000b", "日本語 😀", "\ud83d\ude00"]"#)
        XCTAssertEqual(value[0]?.string, "a\u{0}b")
        XCTAssertEqual(value[0]?.string?.utf8.count, 3)
        XCTAssertEqual(value[1]?.string, "日本語 😀")
        XCTAssertEqual(value[2]?.string, "😀")
    }

    func testParsesFromBytes() throws {
        let value = try JSON.parse(Array(#"{"k": "v"}"#.utf8))
        XCTAssertEqual(value["k"]?.string, "v")
    }

    func testMembersKeepInsertionOrderAndElementsAreInOrder() throws {
        let value = try JSON.parse(#"{"z": 1, "a": 2, "m": 3, "": 4}"#)
        XCTAssertEqual(value.members.map(\.key), ["z", "a", "m", ""])
        XCTAssertEqual(value.members.map { $0.value.integer }, [1, 2, 3, 4])
        let array = try JSON.parse("[3, 1, 2]")
        XCTAssertEqual(array.elements.map(\.integer), [3, 1, 2])
        XCTAssertEqual(array.members.count, 0, "an array has no members")
        XCTAssertEqual(value.elements.count, 0, "an object has no elements")
    }

    // MARK: Errors

    func testErrorCarriesLineColumnPositionAndText() throws {
        let error = try XCTUnwrap(parseError(#"{"a": }"#))
        XCTAssertEqual(error.line, 1)
        XCTAssertEqual(error.column, 7)
        XCTAssertEqual(error.position, 7)
        XCTAssertTrue(error.text.contains("unexpected token"), error.text)
        XCTAssertTrue(error.text.contains("}"), error.text)
        XCTAssertTrue(error.description.contains("line 1"), error.description)
    }

    func testErrorOnThirdLine() throws {
        let text = "{\n  \"a\": 1,\n  \"b\": ]\n}"
        let error = try XCTUnwrap(parseError(text))
        XCTAssertEqual(error.line, 3)
        XCTAssertEqual(error.column, 8)
        XCTAssertEqual(error.position, 20)
        XCTAssertTrue(error.text.contains("]"), error.text)
    }

    func testColumnCountsCharactersButPositionCountsBytes() throws {
        // "éé" is 4 bytes but 4 characters including the quotes.
        let error = try XCTUnwrap(parseError("\"éé\" x"))
        XCTAssertEqual(error.line, 1)
        XCTAssertEqual(error.column, 6)
        XCTAssertEqual(error.position, 8)
    }

    func testTrailingGarbageIsAnError() throws {
        let error = try XCTUnwrap(parseError("{} x"))
        XCTAssertEqual(error.line, 1)
        XCTAssertTrue(error.text.contains("end of file expected"), error.text)
        XCTAssertNotNil(parseError("[1] [2]"))
        XCTAssertNotNil(parseError("1 2"))
        XCTAssertNotNil(parseError("null,"))
        // Trailing whitespace is not garbage.
        XCTAssertEqual(try JSON.parse("[1] \n\t ").count, 1)
    }

    func testOtherMalformedTexts() {
        for text in ["", " ", "{", "[1,]", #"{"a": 1,}"#, "tru", "'x'", "{a: 1}", "01", "\"\u{1}\"", "[1 2]", "NaN"] {
            XCTAssertNotNil(parseError(text), text.debugDescription)
        }
    }

    // MARK: Dump

    func testDumpIsCompact() throws {
        let value = try JSON.parse("""
            {
              "a" : [ 1, 2, { "b" : null } ],
              "c" : "x\\ny",
              "d" : { }, "e": [ ], "f": true, "g": -1.5
            }
            """)
        let dumped = value.compactString
        XCTAssertEqual(dumped, #"{"a":[1,2,{"b":null}],"c":"x\ny","d":{},"e":[],"f":true,"g":-1.5}"#)
        XCTAssertFalse(value.dump().contains(UInt8(ascii: "\n")))
        XCTAssertFalse(value.dump().contains(UInt8(ascii: " ")))
    }

    func testDumpRoundTrips() throws {
        let texts = [
            #"{"a":[1,2.25,"s",true,false,null],"b":{"c":{"d":[]}}}"#,
            #""line\nbreak \"quoted\" \\ tab\t nul\u0000 end""#,
            "[]", "{}", "0", "-0.5", "true", "null", #""""#,
            #"{"日本":"語","emoji":"😀","ctl":"\u0001\u001f"}"#,
            #"[9223372036854775807,-9223372036854775808,1e+300]"#,
        ]
        for text in texts {
            let value = try JSON.parse(text)
            let again = try JSON.parse(value.dump())
            XCTAssertTrue(value.isEqual(to: again), "\(text) -> \(value.compactString)")
            XCTAssertEqual(again.compactString, value.compactString)
            XCTAssertFalse(value.dump().contains(UInt8(ascii: "\n")), text)
        }
    }

    func testIsEqualDistinguishesValues() throws {
        XCTAssertTrue(try JSON.parse(#"{"a":1,"b":2}"#).isEqual(to: JSON.parse(#"{"b":2,"a":1}"#)))
        XCTAssertFalse(try JSON.parse(#"{"a":1}"#).isEqual(to: JSON.parse(#"{"a":2}"#)))
        XCTAssertFalse(try JSON.parse("[1,2]").isEqual(to: JSON.parse("[2,1]")))
    }

    // MARK: Builders

    func testBuildersProduceTheExpectedValues() throws {
        let object = JSON.object([
            "s": .string("a\"b"), "i": .integer(7), "big": .integer(Int64.max), "r": .real(0.5),
            "t": .bool(true), "f": .bool(false), "n": .null(),
            "arr": .array([.integer(1), .string("x")]), "empty": .object(),
        ])
        XCTAssertEqual(
            object.compactString,
            #"{"s":"a\"b","i":7,"big":9223372036854775807,"r":0.5,"t":true,"f":false,"n":null,"arr":[1,"x"],"empty":{}}"#)
        XCTAssertTrue(object.isEqual(to: try JSON.parse(object.dump())))

        object.set("i", .integer(8))
        XCTAssertEqual(object["i"]?.integer, 8)
        XCTAssertEqual(object.count, 9, "set on an existing key replaces it")
        object.remove("i")
        XCTAssertNil(object["i"])
        XCTAssertEqual(object.count, 8)
        object.remove("not there")
        XCTAssertEqual(object.count, 8)

        let array = JSON.array()
        array.append(.string("é"))
        array.append(.null())
        XCTAssertEqual(array.compactString, #"["é",null]"#)
        XCTAssertEqual(JSON.string("").compactString, #""""#)
        XCTAssertEqual(JSON.string("nul\u{0}x").string, "nul\u{0}x")
    }

    func testDeepCopySharesNothing() throws {
        let original = try JSON.parse(#"{"a": {"b": [1]}}"#)
        let copy = original.deepCopy()
        XCTAssertTrue(copy.isEqual(to: original))
        copy.pointer("/a")!.set("c", .integer(2))
        copy.pointer("/a/b")!.append(.integer(3))
        XCTAssertEqual(original.compactString, #"{"a":{"b":[1]}}"#)
        XCTAssertEqual(copy.compactString, #"{"a":{"b":[1,3],"c":2}}"#)
    }

    func testDumpShortestRealsWritesEachRealInItsShortestRoundTripForm() throws {
        let text = #"{"a":0.1,"b":[1.10,1e-5,100.0,2,-0.0,0.30000000000000004],"s":"x\n\u0001é","k\"":null,"t":true,"big":1e300}"#
        let json = try JSON.parse(text)
        let shortest = String(decoding: json.dumpShortestReals(), as: UTF8.self)
        XCTAssertEqual(shortest, #"{"a":0.1,"b":[1.1,1e-05,100.0,2,-0.0,0.30000000000000004],"s":"x\n\u0001é","k\"":null,"t":true,"big":1e+300}"#)
        // Jansson writes 17 digits; both read back as the same values.
        XCTAssertTrue(json.compactString.contains("0.10000000000000001"))
        XCTAssertTrue(try JSON.parse(shortest).isEqual(to: json))
    }

    func testIntegralValueTakesIntegersAndWholeReals() throws {
        let values = try JSON.parse("[3, 10.0, 1e2, -0.0, 2.5, 1e300, \"4\", null]").elements.map(\.integralValue)
        XCTAssertEqual(values, [3, 10, 100, 0, nil, nil, nil, nil])
    }
}
