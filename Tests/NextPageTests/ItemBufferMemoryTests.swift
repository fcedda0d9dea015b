import Jansson
import NextPage
import XCTest

/// The memory `ItemBuffer` holds follows the bytes it keeps, not the bytes
/// that flowed through it (a long-running server pages through far more
/// than it keeps).
final class ItemBufferMemoryTests: XCTestCase {
    private func page(from first: Int, count: Int) -> PageItems {
        PageItems((first..<first + count).map { RawJSON(trusted: Array(#"{"id":\#($0),"name":"item \#($0)"}"#.utf8)) })
    }

    func testAFewItemsKeptHoldAFewKilobytes() {
        var buffer = ItemBuffer(capacity: 10)
        var next = 0
        for _ in 0..<20_000 {
            buffer.append(page(from: next, count: 5))
            next += 5
            XCTAssertLessThanOrEqual(buffer.reservedBytes, 64 << 10, "after \(next) items")
            if buffer.reservedBytes > 64 << 10 { break }
        }
        XCTAssertEqual(buffer.count, 10)
        let slice = buffer.slice(offset: 0, limit: nil)
        XCTAssertEqual(slice.offset, next - 10)
        XCTAssertEqual(slice.items.map(\.description), (next - 10..<next).map { #"{"id":\#($0),"name":"item \#($0)"}"# })
    }

    func testManyItemsKeptFillSlabsOfTwoMegabytes() {
        var buffer = ItemBuffer(capacity: 200_000)
        var next = 0
        var kept = 0
        for _ in 0..<10_000 {
            let items = page(from: next, count: 20)
            kept += items.array.count
            buffer.append(items)
            next += 20
        }
        XCTAssertEqual(buffer.count, 200_000)
        // Pages are split between slabs: no slab is left part empty but the last.
        XCTAssertLessThanOrEqual(buffer.reservedBytes, kept + (2 << 20))
        XCTAssertGreaterThanOrEqual(buffer.reservedBytes, kept - 20_000 * 3)
        XCTAssertLessThanOrEqual(buffer.slabCount, kept / (2 << 20) + 12)
        XCTAssertEqual(buffer.slice(offset: 123_456, limit: 1).items.first?.description, #"{"id":123456,"name":"item 123456"}"#)
    }

    func testAPageLargerThanASlabIsSplitBetweenSlabs() {
        var buffer = ItemBuffer(capacity: 1_000_000)
        let big = page(from: 0, count: 100_000)
        XCTAssertGreaterThan(big.array.count, 2 << 20)
        buffer.append(page(from: -3, count: 3))
        buffer.append(big)
        buffer.append(page(from: 100_000, count: 1))
        XCTAssertEqual(buffer.count, 100_004)
        XCTAssertGreaterThanOrEqual(buffer.slabCount, 2)
        XCTAssertLessThanOrEqual(buffer.reservedBytes, big.array.count + (4 << 20))
        // Every item whole and in order, wherever its page was split.
        let all = buffer.slice(offset: 0, limit: nil)
        XCTAssertEqual(all.offset, 0)
        XCTAssertEqual(all.items.map(\.description), (-3..<100_001).map { #"{"id":\#($0),"name":"item \#($0)"}"# })
    }

    func testAnItemLargerThanASlabGetsASlabOfItsOwn() {
        var buffer = ItemBuffer(capacity: 10)
        let huge = RawJSON.string(String(repeating: "x", count: 3 << 20))
        buffer.append(contentsOf: [.integer(1)])
        buffer.append(contentsOf: [huge, .integer(2)])
        XCTAssertGreaterThanOrEqual(buffer.reservedBytes, 3 << 20)
        XCTAssertEqual(buffer.slice(offset: 0, limit: nil).items, [.integer(1), huge, .integer(2)])
    }

    func testCopiesOfABufferKeepTheirOwnItems() {
        var first = ItemBuffer(capacity: 1_000)
        first.append(page(from: 0, count: 10))
        var second = first
        first.append(page(from: 10, count: 5))
        second.append(page(from: 100, count: 5))
        first.append(page(from: 15, count: 5))
        XCTAssertEqual(first.slice(offset: 0, limit: nil).items.map(\.description),
                       (0..<20).map { #"{"id":\#($0),"name":"item \#($0)"}"# })
        XCTAssertEqual(second.slice(offset: 0, limit: nil).items.map(\.description),
                       (Array(0..<10) + Array(100..<105)).map { #"{"id":\#($0),"name":"item \#($0)"}"# })
    }
}
