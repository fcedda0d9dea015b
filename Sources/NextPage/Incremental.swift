/// How a collection syncs incrementally (docs/config.md, `incremental` in a
/// collection definition): the item value it keeps the largest of, and the
/// query parameter that carries it on the walks that follow.
public struct Incremental: Sendable, Equatable {
    /// Pointer into each item to its value (`/updated_at`).
    public var pointer: String
    /// Query parameter that carries the value (`since`); `nil`: nothing is
    /// sent, and items are only filtered as they arrive.
    public var param: String?
    /// What the first walk sends, before any walk has reached its end.
    public var initial: IncrementalValue?

    public init(pointer: String, param: String? = nil, initial: IncrementalValue? = nil) {
        self.pointer = pointer
        self.param = param
        self.initial = initial
    }
}
