import Jansson

/// The items a collection keeps for `items`: the newest `capacity` items,
/// addressed by absolute offsets (the first item ever loaded is offset 0).
public struct ItemBuffer: Sendable {
    /// How many items are kept at most (`maxItems`).
    public let capacity: Int
    private var storage: [RawJSON] = []
    private var head = 0
    /// Absolute offset of the oldest item still kept.
    public private(set) var firstOffset = 0

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Items kept now.
    public var count: Int { storage.count - head }
    /// Absolute offset one past the newest item.
    public var endOffset: Int { firstOffset + count }

    /// Appends items, dropping the oldest beyond `capacity`.
    public mutating func append(contentsOf items: [RawJSON]) {
        storage.append(contentsOf: items)
        let excess = count - capacity
        if excess > 0 {
            head += excess
            firstOffset += excess
        }
        // Reclaim the dropped prefix once it is the larger part of the storage.
        if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Items with absolute offsets in `offset ..< offset + limit` that are still kept.
    public func slice(offset: Int, limit: Int?) -> (offset: Int, items: ArraySlice<RawJSON>) {
        let start = max(offset, firstOffset)
        var end = endOffset
        if let limit { end = min(end, max(start, offset) + max(0, limit)) }
        guard start < end else { return (min(max(offset, firstOffset), endOffset), []) }
        let base = head - firstOffset
        return (start, storage[(base + start)..<(base + end)])
    }

    /// Forgets every item and starts offsets at 0 again.
    public mutating func removeAll() {
        storage = []
        head = 0
        firstOffset = 0
    }

    /// Forgets every item; the next item appended gets absolute offset
    /// `offset` (a collection restored from a state file keeps counting).
    public mutating func removeAll(continuingAt offset: Int) {
        removeAll()
        firstOffset = max(0, offset)
    }
}
