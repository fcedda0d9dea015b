import Foundation
import Jansson
import XCTest

/// Values built inside `JSON.withArena` are ordinary values: they may outlive
/// the scope and be released on another thread, and every block is still
/// released exactly once.
final class JSONArenaTests: XCTestCase {
    private static let counting: Void = JanssonAllocations.startCounting()

    override func setUp() {
        super.setUp()
        _ = Self.counting
    }

    private let document = #"{"items": [{"id": 1, "name": "a"}, {"id": 2, "tags": ["x", "y"]}], "next": "c2"}"#

    func testValuesReleasedInsideTheScopeLeaveNothingLive() throws {
        let before = JanssonAllocations.live
        for _ in 0..<500 {
            let id: Int64? = try JSON.withArena {
                let root = try JSON.parse(document)
                return root.pointer("/items/1/id")?.integer
            }
            XCTAssertEqual(id, 2)
        }
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    func testAValueMayOutliveItsScopeAndTheScopesAfterIt() throws {
        let before = JanssonAllocations.live
        let kept = try JSON.withArena { try JSON.parse(document) }
        // Later scopes on this thread must not reuse the memory `kept` lives in.
        for _ in 0..<200 {
            try JSON.withArena { _ = try JSON.parse(#"{"other": [1, 2, 3, "overwrite me"]}"#) }
        }
        XCTAssertEqual(kept.pointer("/items/0/name")?.string, "a")
        XCTAssertEqual(kept.pointer("/next")?.string, "c2")
        XCTAssertEqual(kept.compactString, #"{"items":[{"id":1,"name":"a"},{"id":2,"tags":["x","y"]}],"next":"c2"}"#)
        withExtendedLifetime(kept) {}
        XCTAssertGreaterThanOrEqual(JanssonAllocations.live, before)
    }

    func testValuesFromArenasAreReleasedOnOtherThreads() throws {
        let before = JanssonAllocations.live
        let box = Box(try (0..<64).map { index in
            try JSON.withArena { try JSON.parse(#"{"n": \#(index), "s": "value \#(index)"}"#) }
        })
        let group = DispatchGroup()
        for part in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for index in stride(from: part, to: 64, by: 4) {
                    XCTAssertEqual(box.values[index].pointer("/n")?.integer, Int64(index))
                }
            }
        }
        group.wait()
        // Released on another thread than the one whose arena they came from.
        DispatchQueue.global().async(group: group) { box.values = [] }
        group.wait()
        XCTAssertEqual(JanssonAllocations.live, before, "every block released once, wherever it was released")
    }

    func testNestedScopesAndBuildersInsideThem() throws {
        let before = JanssonAllocations.live
        let dumped: String = JSON.withArena {
            JSON.withArena {
                let object = JSON.object(["a": .integer(1), "b": .array([.string("x"), .null()])])
                return object.compactString
            }
        }
        XCTAssertEqual(dumped, #"{"a":1,"b":["x",null]}"#)
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    private final class Box: @unchecked Sendable {
        var values: [JSON]
        init(_ values: [JSON]) { self.values = values }
    }
}
