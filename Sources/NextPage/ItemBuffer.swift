import Jansson

/// The items a collection keeps for `items`: the newest `capacity` items,
/// addressed by absolute offsets (the first item ever loaded is offset 0).
///
/// Item bytes are copied, compact, into slabs, never one allocation per
/// item or per small page. A new slab is about as large as the bytes kept
/// when it is made (4 KiB at least, 2 MiB at most, or one item larger than
/// that), so the memory kept stays close to the bytes kept: a collection
/// that keeps ten small items holds a few kilobytes, however many pages flow
/// past it. A page that does not fit in what is left of a slab is split
/// between it and the next one, at an item boundary. A slab is let go once
/// every item in it has been pushed out by newer ones.
public struct ItemBuffer: Sendable {
    /// How many items are kept at most (`maxItems`).
    public let capacity: Int

    /// The smallest slab.
    static let minSlabBytes = 4 << 10
    /// The largest slab, unless one item needs more.
    static let slabBytes = 2 << 20

    /// Consecutive items of one page that lie in one slab: where they are.
    private struct Page {
        /// Absolute number of the slab (see `firstSlab`).
        var slab: Int
        /// Offset in the slab of each item's first byte, then the end of the last item.
        var bounds: [UInt32]
        /// Absolute offset of the first of these items.
        var offset: Int

        var count: Int { bounds.count - 1 }
    }

    /// Byte arrays, each filled up to the capacity reserved when it was made.
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

    /// How many slabs hold items now.
    public var slabCount: Int { slabs.count }

    /// Appends a page's items, dropping the oldest beyond `capacity`.
    public mutating func append(_ items: PageItems) {
        guard !items.isEmpty else { return }
        let keep = min(items.count, capacity)
        // Items that would be dropped at once are never copied.
        var first = items.count - keep
        while first < items.count {
            // As many items as fit in the last slab, which is made anew when
            // not even the first of them fits.
            let start = items.span(first).lowerBound
            let room = slabs.last.map { $0.capacity - $0.count } ?? 0
            var end = first
            while end < items.count && items.span(end).upperBound - start <= room { end += 1 }
            if end == first {
                addSlab(atLeast: items.span(first).count)
                continue
            }
            let last = slabs.count - 1
            let base = slabs[last].count
            var bounds: [UInt32] = []
            bounds.reserveCapacity(end - first + 1)
            for index in first..<end { bounds.append(UInt32(base + items.span(index).lowerBound - start)) }
            let bytes = start..<items.span(end - 1).upperBound
            bounds.append(UInt32(base + bytes.count))
            slabs[last].append(contentsOf: items.array[bytes])
            pages.append(Page(slab: firstSlab + last, bounds: bounds, offset: endOffset + first))
            first = end
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

    /// Adds a slab with room for at least `size` bytes.
    private mutating func addSlab(atLeast size: Int) {
        // As large as what is kept now: memory grows with the bytes kept,
        // and a collection that keeps much makes few slabs.
        // Ordinary 4 KiB pages, not huge ones: on a virtual machine that hands
        // free memory back to its host, a huge page is zeroed at a quarter of
        // the speed unless it was freed moments before (46 MB of items: 85–105
        // ms of page faults with `MADV_HUGEPAGE`, 20–25 ms without).
        let kept = slabs.reduce(0) { $0 + $1.count }
        var slab: [UInt8] = []
        slab.reserveCapacity(max(size, min(Self.slabBytes, max(Self.minSlabBytes, kept))))
        slabs.append(slab)
    }

    /// Items with absolute offsets in `offset ..< offset + limit` that are
    /// still kept, and the offset of the first of them.
    public func slice(offset: Int, limit: Int?) -> (offset: Int, items: PageItems) {
        let start = max(offset, firstOffset)
        var end = endOffset
        if let limit {
            // `start` and `limit` come from a client: a sum past Int.max means "to the end".
            let (sum, overflow) = start.addingReportingOverflow(max(0, limit))
            end = min(end, overflow ? Int.max : sum)
        }
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

