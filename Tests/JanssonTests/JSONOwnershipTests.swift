import XCTest
import Jansson

/// Every `json_t` reference a `JSON` takes is released exactly once: jansson's
/// live allocation count returns to where it started, and values handed to
/// containers outlive the Swift reference they came from (a double free or a
/// use after free would crash here, and ASan would name it).
final class JSONOwnershipTests: XCTestCase {
    /// Routes jansson's allocations through the counter once per process.
    private static let counting: Void = JanssonAllocations.startCounting()

    override func setUp() {
        super.setUp()
        _ = Self.counting
    }

    private let document = #"""
        {"items": [{"id": 1, "name": "a\u00e9", "tags": ["x", "y"]}, {"id": 2, "name": "b", "tags": []}],
         "next_cursor": "abc", "has_more": true, "total": 2.5, "nested": {"deep": {"er": [null, false, "s"]}}}
        """#

    /// Runs `body`, then checks that every allocation it made was freed.
    private func assertNoLeak(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) rethrows {
        let before = JanssonAllocations.live
        try body()
        XCTAssertEqual(JanssonAllocations.live, before, "\(what): jansson blocks still live", file: file, line: line)
    }

    func testCountingSeesLiveValues() throws {
        let before = JanssonAllocations.live
        let value = try JSON.parse(document)
        XCTAssertGreaterThan(JanssonAllocations.live, before, "a parsed document holds jansson blocks")
        withExtendedLifetime(value) {}
    }

    func testCountingReturnsToStartAfterTheValueIsDropped() throws {
        let before = JanssonAllocations.live
        try parseAndDrop(document)
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    @inline(never)
    private func parseAndDrop(_ text: String) throws {
        let value = try JSON.parse(text)
        XCTAssertGreaterThan(value.count, 0)
    }

    func testParsingAndReadingThousandsOfTimesLeavesNothingLive() throws {
        try assertNoLeak("parse + read") {
            for _ in 0..<2000 {
                let value = try JSON.parse(document)
                XCTAssertEqual(value.pointer("/items/1/id")?.integer, 2)
                XCTAssertEqual(value.pointer("/nested/deep/er/2")?.string, "s")
                XCTAssertNil(value.pointer("/items/9"))
                XCTAssertNil(value.pointer("/~2"))
                XCTAssertEqual(value["next_cursor"]?.string, "abc")
                XCTAssertEqual(value.elements.count, 0)
                for item in value["items"]!.elements {
                    XCTAssertEqual(item.members.count, 3)
                    for (_, member) in item.members { _ = member.dump() }
                    _ = item["tags"]?[0]
                }
                _ = value.dump()
                _ = RawJSON(value)
            }
        }
    }

    func testParseErrorsLeaveNothingLive() throws {
        try assertNoLeak("failed parses") {
            for _ in 0..<1000 {
                XCTAssertThrowsError(try JSON.parse(#"{"a": [1, 2, {"b": "c"}, "#))
                XCTAssertThrowsError(try JSON.parse(#"{"a": 1} trailing"#))
                XCTAssertThrowsError(try JSON.parse(#"[{"x": "y"}, {"x": }]"#))
            }
        }
    }

    func testBuildingSettingAppendingAndCopyingLeaveNothingLive() {
        assertNoLeak("builders") {
            for index in 0..<2000 {
                let object = JSON.object([
                    "s": .string("value \(index)"), "i": .integer(index), "r": .real(Double(index) / 3),
                    "b": .bool(index % 2 == 0), "n": .null(),
                ])
                let array = JSON.array([.integer(1), .string("two"), object])
                object.set("replaced", .string("old"))
                object.set("replaced", .string("new"))   // the old value is released
                object.set("array", .array([.integer(index)]))
                array.append(.object(["k": .string("v")]))
                array.append(object)                       // the same value twice
                object.remove("s")
                let copy = array.deepCopy()
                XCTAssertTrue(copy.isEqual(to: array))
                copy.append(.integer(99))
                XCTAssertFalse(copy.isEqual(to: array))
                let reparsed = try? JSON.parse(array.dump())
                XCTAssertEqual(reparsed?.count, array.count)
            }
        }
    }

    func testRawJSONRoundTripsLeaveNothingLive() {
        assertNoLeak("RawJSON") {
            for index in 0..<1000 {
                let raw = RawJSON.object(["a": .string("x\(index)\n"), "b": .array([RawJSON.integer(index), .null])])
                let parsed = try? raw.parsed()
                XCTAssertEqual(parsed?["b"]?[0]?.integer, Int64(index))
            }
        }
    }

    func testValueStoredInAContainerOutlivesTheOriginalReference() throws {
        let before = JanssonAllocations.live
        do {
            let array = JSON.array()
            let object = JSON.object()
            fill(array, object)
            // The locals made in fill are gone; the containers hold their own references.
            XCTAssertEqual(array.count, 2)
            XCTAssertEqual(array[0]?.string, "kept")
            XCTAssertEqual(array[1]?["inner"]?.string, "also kept")
            XCTAssertEqual(object["k"]?.pointer("/0")?.integer, 7)
            XCTAssertEqual(array.compactString, #"["kept",{"inner":"also kept"}]"#)
            XCTAssertEqual(object.compactString, #"{"k":[7]}"#)
        }
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    @inline(never)
    private func fill(_ array: JSON, _ object: JSON) {
        let string = JSON.string("kept")
        array.append(string)
        let inner = JSON.object(["inner": .string("also kept")])
        array.append(inner)
        let list = JSON.array([.integer(7)])
        object.set("k", list)
    }

    func testChildOutlivesItsParentDocument() throws {
        let before = JanssonAllocations.live
        do {
            let child = try child(at: "/nested/deep/er")
            let elements = try elements(at: "/items")
            // The documents these came from are dropped; the children stay valid.
            XCTAssertEqual(child.compactString, #"[null,false,"s"]"#)
            XCTAssertEqual(elements.map { $0["id"]?.integer }, [1, 2])
            XCTAssertEqual(elements[0]["name"]?.string, "aé")
            // Moving a child into a new container keeps both valid.
            let holder = JSON.object(["er": child])
            XCTAssertEqual(holder.pointer("/er/2")?.string, "s")
        }
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    @inline(never)
    private func child(at pointer: String) throws -> JSON {
        try XCTUnwrap(JSON.parse(document).pointer(pointer))
    }

    @inline(never)
    private func elements(at pointer: String) throws -> [JSON] {
        try XCTUnwrap(JSON.parse(document).pointer(pointer)).elements
    }

    func testSharedChildDroppedInAnyOrder() {
        assertNoLeak("shared children") {
            for round in 0..<500 {
                let shared = JSON.object(["v": .integer(round)])
                let first = JSON.array([shared])
                let second = JSON.object(["s": shared])
                if round % 2 == 0 {
                    withExtendedLifetime(first) {}
                    XCTAssertEqual(second.pointer("/s/v")?.integer, Int64(round))
                } else {
                    withExtendedLifetime(second) {}
                    XCTAssertEqual(first.pointer("/0/v")?.integer, Int64(round))
                }
            }
        }
    }
}
