/// A request for one page (the seeds' `Request`).
///
/// A request says which page it wants; a `Client` says how to fetch it, and
/// `Response` says how to understand the answer.
public protocol Request: Sendable {
    /// What the answer decodes to.
    associatedtype Response: JSONDecodable

    /// The cursor of the page asked for; `nil` for the first page.
    var cursor: Cursor? { get }
    /// Whether this asks for the first page of the source.
    var isFirstPage: Bool { get }
    /// How the collection walks its source: where the cursor goes and where things are in a page.
    var paging: Paging { get }
    /// Page size to send, when the collection sets one.
    var pageSize: Int? { get }
    /// Query parameter for `pageSize`.
    var pageSizeParam: String? { get }
    /// A query item every request of the walk carries (`incremental.param`
    /// and the value the walk sends).
    ///
    /// The default implementation returns `nil`.
    var incrementalQuery: (name: String, value: String)? { get }
    /// Whether items' ids must be read (for `dedupe`).
    ///
    /// The default implementation returns `false`.
    var wantsIds: Bool { get }
    /// Pointer into each item to its incremental value, when those are read.
    ///
    /// The default implementation returns `nil`.
    var incrementalPointer: String? { get }
}

extension Request {
    public var incrementalQuery: (name: String, value: String)? { nil }
    public var wantsIds: Bool { false }
    public var incrementalPointer: String? { nil }
}

/// The request a collection makes for each page.
public struct PageRequest: Request {
    public typealias Response = UpstreamPage

    public var cursor: Cursor?
    public var isFirstPage: Bool
    public var paging: Paging
    public var pageSize: Int?
    public var pageSizeParam: String?
    /// Whether items' ids must be read (for `dedupe`).
    public var wantsIds: Bool
    /// Pointer into each item to its incremental value, when those are read.
    public var incrementalPointer: String?
    public var incrementalQuery: (name: String, value: String)?

    public init(cursor: Cursor?, isFirstPage: Bool, paging: Paging, options: CollectionOptions) {
        self.cursor = cursor
        self.isFirstPage = isFirstPage
        self.paging = paging
        self.pageSize = options.pageSize
        self.pageSizeParam = options.pageSizeParam
        self.wantsIds = options.dedupe
        self.incrementalPointer = options.incremental?.pointer
    }
}
