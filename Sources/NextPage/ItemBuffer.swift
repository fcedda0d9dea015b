import Jansson

/// The items a collection keeps for `items`: the newest `capacity` items,
/// addressed by absolute offsets (the first item ever loaded is offset 0).
///
/// Item bytes are copied, compact, into slabs, never one allocation per
/// item or per small page. A new slab is about as large as the bytes kept
/// when it is made (4 KiB at least, 1 MiB at most, or one big page), so the
/// memory kept stays close to the bytes kept: a collection that keeps ten
/// small items holds a few kilobytes, however many pages flow past it. A
/// slab is let go once every item in it has been pushed out by newer ones.
public struct ItemBuffer: Sendable {
    /// How many items are kept at most (`maxItems`).
    public let capacity: Int

    /// The smallest slab.
    static let minSlabBytes = 4 << 10
    /// The largest slab, unless one page needs more.
    static let slabBytes = 1 << 20

    /// The items of one page: where they are in their slab.
    private struct Page {
        /// Absolute number of the slab (see `firstSlab`).
        var slab: Int
        /// Offset in the slab of each item's first byte, then the end of the last item.
        var bounds: [UInt32]
        /// Absolute offset of the page's first item.
        var offset: Int

        var count: Int { bounds.count - 1 }
    }

    private var slabs: [[UInt8]] = []
    /// Absolute number of `slabs[0]`.
    private var firstSlab = 0
    private var pages: [Page] = []
    private var head = 0
    /// Absolute offset of the oldest item still kept.
    public private(set) var firstOffset = 0
    /// Absolute offset one past the newest item.
    public private(set) var endOffset = 0

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Items kept now.
    public var count: Int { endOffset - firstOffset }

    /// Bytes allocated for item storage (the slabs' capacities).
    public var reservedBytes: Int { slabs.reduce(0) { $0 + $1.capacity } }

    /// Appends a page's items, dropping the oldest beyond `capacity`.
    public mutating func append(_ items: PageItems) {
        guard !items.isEmpty else { return }
        let keep = min(items.count, capacity)
        if keep > 0 {
            // Items that would be dropped at once are never copied.
            let first = items.count - keep
            let bytes = items.span(first).lowerBound..<items.span(items.count - 1).upperBound
            let slab = reserve(bytes.count)
            let base = slabs[slab - firstSlab].count
            var bounds: [UInt32] = []
            bounds.reserveCapacity(keep + 1)
            for index in first..<items.count { bounds.append(UInt32(base + items.span(index).lowerBound - bytes.lowerBound)) }
            bounds.append(UInt32(base + bytes.count))
            slabs[slab - firstSlab].append(contentsOf: items.array[bytes])
            pages.append(Page(slab: slab, bounds: bounds, offset: endOffset + first))
        }
        endOffset += items.count
        firstOffset = max(firstOffset, endOffset - capacity)
        // Let go of pages whose items are all dropped, then of their slabs.
        while head < pages.count, pages[head].offset + pages[head].count <= firstOffset {
            pages[head].bounds = []
            head += 1
        }
        if head > 64 && head * 2 > pages.count {
            pages.removeFirst(head)
            head = 0
        }
        let oldestSlab = head < pages.count ? pages[head].slab : firstSlab + slabs.count
        if oldestSlab > firstSlab {
            slabs.removeFirst(oldestSlab - firstSlab)
            firstSlab = oldestSlab
        }
    }

    /// Appends items, dropping the oldest beyond `capacity`.
    public mutating func append(contentsOf items: [RawJSON]) {
        append(PageItems(items))
    }

    /// The absolute number of a slab with room for `size` more bytes.
    private mutating func reserve(_ size: Int) -> Int {
        if let last = slabs.last, last.capacity - last.count >= size, size + last.count <= Int(UInt32.max) {
            return firstSlab + slabs.count - 1
        }
        // As large as what is kept now: memory grows with the bytes kept,
        // and a collection that keeps much makes few slabs.
        let kept = slabs.reduce(0) { $0 + $1.count }
        var slab: [UInt8] = []
        slab.reserveCapacity(max(size, min(Self.slabBytes, max(Self.minSlabBytes, kept))))
        slabs.append(slab)
        return firstSlab + slabs.count - 1
    }

    /// Items with absolute offsets in `offset ..< offset + limit` that are
    /// still kept, and the offset of the first of them.
    public func slice(offset: Int, limit: Int?) -> (offset: Int, items: PageItems) {
        let start = max(offset, firstOffset)
        var end = endOffset
        if let limit { end = min(end, max(start, offset) + max(0, limit)) }
        guard start < end else { return (min(max(offset, firstOffset), endOffset), PageItems()) }
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        var starts: [UInt32] = []
        starts.reserveCapacity(end - start)
        var index = pageIndex(containing: start)
        var position = start
        while position < end {
            let page = pages[index]
            let slab = slabs[page.slab - firstSlab]
            let to = min(end - page.offset, page.count)
            for item in (position - page.offset)..<to {
                if !starts.isEmpty { bytes.append(UInt8(ascii: ",")) }
                starts.append(UInt32(bytes.count))
                bytes.append(contentsOf: slab[Int(page.bounds[item])..<itemEnd(page, item)])
            }
            position = page.offset + to
            index += 1
        }
        bytes.append(UInt8(ascii: "]"))
        return (start, PageItems(trustedArray: bytes, starts: starts))
    }

    /// Where item `item` of `page` ends in its slab (before the comma that follows it).
    private func itemEnd(_ page: Page, _ item: Int) -> Int {
        item + 1 < page.count ? Int(page.bounds[item + 1]) - 1 : Int(page.bounds[item + 1])
    }

    /// The index in `pages` of the page holding absolute offset `offset` (which must be kept).
    private func pageIndex(containing offset: Int) -> Int {
        var low = head
        var high = pages.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if pages[middle].offset <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// Forgets every item and starts offsets at 0 again.
    public mutating func removeAll() {
        slabs = []
        firstSlab = 0
        pages = []
        head = 0
        firstOffset = 0
        endOffset = 0
    }

    /// Forgets every item; the next item appended gets absolute offset
    /// `offset` (a collection restored from a state file keeps counting).
    public mutating func removeAll(continuingAt offset: Int) {
        removeAll()
        firstOffset = max(0, offset)
        endOffset = firstOffset
    }
}
