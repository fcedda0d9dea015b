import Jansson

/// The items of one page as one compact JSON array, `[a,b,c]`, and where
/// each item starts in it.
///
/// A page's items are kept, stored and forwarded as these bytes: no Swift
/// value per item, one allocation per page, and a reply can embed the whole
/// array as it is. Every constructor produces valid compact JSON without raw
/// newlines (from jansson's dump, or from bytes jansson has validated).
public struct PageItems: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable, Equatable {
    /// The array's bytes: `[`, the items separated by `,`, `]`.
    public let array: [UInt8]
    /// Offset in `array` of each item's first byte.
    private let starts: [UInt32]

    /// Items the caller guarantees: `array` is a compact JSON array whose
    /// items begin at `starts`.
    public init(trustedArray array: [UInt8], starts: [UInt32]) {
        self.array = array
        self.starts = starts
    }

    /// No items.
    public init() {
        self.init(trustedArray: Array("[]".utf8), starts: [])
    }

    /// The given items, in order.
    public init<C: Collection>(_ items: C) where C.Element == RawJSON {
        var size = 2
        for item in items { size += item.bytes.count + 1 }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        var starts: [UInt32] = []
        starts.reserveCapacity(items.count)
        bytes.append(UInt8(ascii: "["))
        for item in items {
            if !starts.isEmpty { bytes.append(UInt8(ascii: ",")) }
            starts.append(UInt32(bytes.count))
            bytes.append(contentsOf: item.bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        self.init(trustedArray: bytes, starts: starts)
    }

    public init(arrayLiteral items: RawJSON...) {
        self.init(items)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { starts.count }

    /// The bytes of item `index` within `array`.
    public func span(_ index: Int) -> Range<Int> {
        let start = Int(starts[index])
        // An item ends before the comma that starts the next, or before the closing bracket.
        let end = index + 1 < starts.count ? Int(starts[index + 1]) - 1 : array.count - 1
        return start..<end
    }

    public subscript(index: Int) -> RawJSON {
        RawJSON(trusted: Array(array[span(index)]))
    }

    /// The whole array as one JSON value (no copy).
    public var json: RawJSON { RawJSON(trusted: array) }

    /// The items at `indices`, in that order.
    public func selecting<S: Sequence>(_ indices: S) -> PageItems where S.Element == Int {
        var builder = Builder()
        for index in indices { builder.append(self, index) }
        return builder.finish()
    }

    /// Builds a `PageItems` from items of other pages, without re-encoding them.
    public struct Builder {
        private var bytes: [UInt8] = [UInt8(ascii: "[")]
        private var starts: [UInt32] = []

        public init() {}

        /// Appends item `index` of `items`.
        public mutating func append(_ items: PageItems, _ index: Int) {
            if !starts.isEmpty { bytes.append(UInt8(ascii: ",")) }
            starts.append(UInt32(bytes.count))
            bytes.append(contentsOf: items.array[items.span(index)])
        }

        public func finish() -> PageItems {
            PageItems(trustedArray: bytes + [UInt8(ascii: "]")], starts: starts)
        }
    }
}
