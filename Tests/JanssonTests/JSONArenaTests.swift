import Foundation
import Jansson
import XCTest

/// Values built inside `JSON.withArena` are ordinary values: they may outlive
/// the scope and be released on another thread, and every block is still
/// released exactly once. Trees parsed with `JSON.parseScratch` are released
/// whole when their scope ends.
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

    // MARK: Scratch trees

    func testScratchTreesAreDroppedWholeAndLeaveNothingLive() throws {
        let before = JanssonAllocations.live
        for _ in 0..<500 {
            let id: Int64? = try JSON.parseScratch(Array(document.utf8)) { root in
                root.pointer("/items/1/id")?.integer
            }
            XCTAssertEqual(id, 2)
        }
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    func testAScratchTreeLargerThanAnArenaChunk() throws {
        // Far more than one chunk's 256 KiB of tree: chunks filled inside the
        // scope are dropped with it.
        let text = "[" + (0..<20_000).map { #"{"id":\#($0),"name":"item \#($0)","tags":["a","b"]}"# }.joined(separator: ",") + "]"
        let before = JanssonAllocations.live
        for _ in 0..<3 {
            let (count, members, last): (Int, Int, Int64?) = try JSON.parseScratch(Array(text.utf8)) { root in
                (root.count, root.memberCount, root[19_999]?.pointer("/id")?.integer)
            }
            XCTAssertEqual(count, 20_000)
            XCTAssertEqual(members, 60_000)
            XCTAssertEqual(last, 19_999)
        }
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    func testValuesKeptFromEarlierScopesSurviveScratchScopes() throws {
        let kept = try JSON.withArena { try JSON.parse(document) }
        for index in 0..<200 {
            let echoed = try JSON.parseScratch(Array(#"{"other": [1, 2, 3, "overwrite me \#(index)"]}"#.utf8)) { root in
                root.pointer("/other/3")?.string
            }
            XCTAssertEqual(echoed, "overwrite me \(index)")
        }
        XCTAssertEqual(kept.compactString, #"{"items":[{"id":1,"name":"a"},{"id":2,"tags":["x","y"]}],"next":"c2"}"#)
    }

    func testValuesFromBeforeAScratchScopeReleasedInsideItAreFreed() throws {
        // A scratch scope's own blocks are told from others by their address;
        // values made before it (from malloc, or from an arena scope on this
        // thread) that are released inside it must be freed and counted down.
        let before = JanssonAllocations.live
        let box = Box([try JSON.parse(document), try JSON.withArena { try JSON.parse(document) }])
        XCTAssertGreaterThan(JanssonAllocations.live, before)
        let count = try JSON.parseScratch(Array(#"[{"a": 1}, {"b": [2, 3]}]"#.utf8)) { root -> Int in
            box.values = []
            return root.count
        }
        XCTAssertEqual(count, 2)
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    func testAScratchParseInsideAnArenaScopeIsReleasedAsUsual() throws {
        let before = JanssonAllocations.live
        let name: String? = try JSON.withArena {
            try JSON.parseScratch(Array(document.utf8)) { $0.pointer("/items/0/name")?.string }
        }
        XCTAssertEqual(name, "a")
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    func testAScratchParseErrorLeavesNothingLive() throws {
        let before = JanssonAllocations.live
        XCTAssertThrowsError(try JSON.parseScratch(Array(#"[{"a": 1}, {"b": "#.utf8)) { $0.count }) { error in
            XCTAssertTrue(error is JSONParseError)
        }
        XCTAssertEqual(try JSON.parseScratch(Array("[1,2]".utf8)) { $0.count }, 2)
        XCTAssertEqual(JanssonAllocations.live, before)
    }

    private final class Box: @unchecked Sendable {
        var values: [JSON]
        init(_ values: [JSON]) { self.values = values }
    }
}
