/// Where an incremental collection stands (docs/config.md, `incremental`): the
/// value its walks send, and the largest value its current walk has seen.
///
/// A walk sends `value` as `incremental.param` (nothing while there is no
/// value: the first walk without `initial`) and delivers only items that
/// are new to it: an item whose value is below `value` is dropped (it has
/// not changed since), and so is an item whose value equals `value` and
/// which the walk that set `value` delivered already (`boundary`, digests of
/// those items: APIs whose `since` includes its bound send them again). The
/// largest value the walk delivers becomes `value` when the walk reaches
/// its end, and the next walk sends it. An item without a value at the
/// pointer, or with one of another kind than the collection's values
/// (a number among timestamps), is delivered and counted in `withoutValue`;
/// it never fails the page.
public struct IncrementalState: Sendable, Equatable {
    /// What walks send as `param`: the largest value of the walks that
    /// reached their end, or `initial`.
    public var value: IncrementalValue?
    /// The largest value delivered by the current walk.
    public var seen: IncrementalValue?
    /// Digests of the items with value `value` that the walk that set it delivered.
    public var boundary: Set<UInt64> = []
    /// Digests of the items with value `seen` that the current walk delivered.
    public var seenBoundary: Set<UInt64> = []
    /// Items of the current walk (or of the last one, once it has ended)
    /// without a value of the collection's kind.
    public var withoutValue = 0

    /// The most digests kept on either side (items sharing one value beyond
    /// this may come again at that value's boundary).
    public static let maxBoundary = 1000

    public init(value: IncrementalValue? = nil) {
        self.value = value
    }

    /// The kind of value the collection compares: that of its values so far.
    public var kind: IncrementalValue.Kind? { value?.kind ?? seen?.kind }

    /// Whether to deliver an item of the current walk whose value is `found`
    /// (`nil`: none, or not a string or a number); `digest` gives the item's
    /// digest when it is needed. Notes the item for `seen`.
    public mutating func admit(_ found: IncrementalValue?, digest: () -> UInt64) -> Bool {
        guard let found, kind == nil || kind == found.kind else {
            withoutValue += 1
            return true
        }
        if let value, let order = found.compare(value) {
            if order < 0 { return false }
            if order == 0 && boundary.contains(digest()) { return false }
        }
        switch seen.flatMap({ found.compare($0) }) {
        case nil, 1?:
            seen = found
            seenBoundary = [digest()]
        case 0?:
            if seenBoundary.count < Self.maxBoundary { seenBoundary.insert(digest()) }
        default:
            break
        }
        return true
    }

    /// The walk reached its end: the largest value it delivered is what the
    /// next walk sends. `withoutValue` still tells of the walk that ended.
    public mutating func walkEnded() {
        if let seen {
            switch value.flatMap({ seen.compare($0) }) {
            case nil, 1?:
                value = seen
                boundary = seenBoundary
            case 0?:
                boundary.formUnion(seenBoundary.prefix(max(0, Self.maxBoundary - boundary.count)))
            default:
                break
            }
        }
        let withoutValue = withoutValue
        self = forNewWalk()
        self.withoutValue = withoutValue
    }

    /// The same mark with the current walk forgotten (`reset`, `load`).
    public func forNewWalk() -> IncrementalState {
        var fresh = IncrementalState(value: value)
        fresh.boundary = boundary
        return fresh
    }

    /// A 64-bit FNV-1a digest of an item's bytes: the same in every process,
    /// so a state file's boundary still holds after a restart.
    public static func digest<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
