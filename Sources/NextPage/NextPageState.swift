/// The state of a paged collection (the seeds' `NextPageState`).
public struct NextPageState: Sendable, Equatable {
    /// Whether the source has more pages.
    public var hasNext = true
    /// Whether a fetch is in flight.
    public var isLoading = false
    /// The cursor the next `loadNext` sends; `nil` before the first page.
    public var lastId: Cursor?
    /// Items loaded since the last reset.
    public var count = 0
    /// Pages loaded since the last reset.
    public var pages = 0
    /// The last failure or stop reason, if any.
    public var lastError: String?
    /// Empty pages in a row that each said there was more (for
    /// `maxEmptyPages`); kept in a state file, so a `nextpage next` loop
    /// stops too. Not part of the State that `status` reports.
    public var emptyPages = 0
    /// Whether the collection's paging is decided from each walk's first
    /// page (`auto`); a reset keeps it.
    public var picksPaging = false
    /// What this walk's first page decided (`auto`), once it has landed.
    public var pick: PagingPick?
    /// Where an incremental collection stands; a reset keeps its value
    /// and forgets the walk (`IncrementalState.forNewWalk()`).
    public var incremental: IncrementalState?

    public init() {}

    /// Back to a fresh collection: no items, `hasNext` true, no cursor,
    /// nothing picked; an incremental collection keeps the value its next
    /// walk sends.
    public mutating func reset() {
        let picksPaging = picksPaging
        let incremental = incremental?.forNewWalk()
        self = NextPageState()
        self.picksPaging = picksPaging
        self.incremental = incremental
    }

    /// Records a page that landed.
    public mutating func update(hasNext: Bool, lastId: Cursor?, added: Int) {
        self.hasNext = hasNext
        self.lastId = lastId
        self.count += added
        self.pages += 1
    }
}
