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

    func testManyItemsKeptUseSlabsOfAMegabyte() {
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
        // Within twice the bytes kept, plus one slab.
        XCTAssertLessThanOrEqual(buffer.reservedBytes, 2 * kept + (1 << 20))
        XCTAssertGreaterThanOrEqual(buffer.reservedBytes, kept - 20_000 * 3)
        XCTAssertEqual(buffer.slice(offset: 123_456, limit: 1).items.first?.description, #"{"id":123456,"name":"item 123456"}"#)
    }

    func testAPageLargerThanASlabGetsASlabOfItsOwn() {
        var buffer = ItemBuffer(capacity: 1_000_000)
        let big = page(from: 0, count: 100_000)
        XCTAssertGreaterThan(big.array.count, 1 << 20)
        buffer.append(big)
        buffer.append(page(from: 100_000, count: 1))
        XCTAssertEqual(buffer.count, 100_001)
        XCTAssertEqual(buffer.slice(offset: 99_999, limit: 2).items.map(\.description), [
            #"{"id":99999,"name":"item 99999"}"#, #"{"id":100000,"name":"item 100000"}"#,
        ])
    }
}
