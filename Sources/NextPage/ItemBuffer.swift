import Jansson

/// The items a collection keeps for `items`: the newest `capacity` items,
/// addressed by absolute offsets (the first item ever loaded is offset 0).
///
/// Items stay in the pages they came in (`PageItems`, one buffer per page);
/// the oldest pages are let go as newer items push their items out.
public struct ItemBuffer: Sendable {
    /// How many items are kept at most (`maxItems`).
    public let capacity: Int

    private struct Page {
        var items: PageItems
        /// Absolute offset of `items[0]`.
        var offset: Int
    }

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

    /// Appends a page's items, dropping the oldest beyond `capacity`.
    public mutating func append(_ items: PageItems) {
        guard !items.isEmpty else { return }
        pages.append(Page(items: items, offset: endOffset))
        endOffset += items.count
        firstOffset = max(firstOffset, endOffset - capacity)
        // Let go of pages whose items are all dropped.
        while head < pages.count, pages[head].offset + pages[head].items.count <= firstOffset {
            pages[head].items = PageItems()
            head += 1
        }
        if head > 64 && head * 2 > pages.count {
            pages.removeFirst(head)
            head = 0
        }
    }

    /// Appends items, dropping the oldest beyond `capacity`.
    public mutating func append(contentsOf items: [RawJSON]) {
        append(PageItems(items))
    }

    /// Items with absolute offsets in `offset ..< offset + limit` that are
    /// still kept, and the offset of the first of them.
    public func slice(offset: Int, limit: Int?) -> (offset: Int, items: PageItems) {
        let start = max(offset, firstOffset)
        var end = endOffset
        if let limit { end = min(end, max(start, offset) + max(0, limit)) }
        guard start < end else { return (min(max(offset, firstOffset), endOffset), PageItems()) }
        var builder = PageItems.Builder()
        var index = pageIndex(containing: start)
        var position = start
        while position < end {
            let page = pages[index]
            let to = min(end - page.offset, page.items.count)
            for item in (position - page.offset)..<to { builder.append(page.items, item) }
            position = page.offset + to
            index += 1
        }
        return (start, builder.finish())
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
        pages = []
        head = 0
        firstOffset = 0
        endOffset = 0
    }
}
