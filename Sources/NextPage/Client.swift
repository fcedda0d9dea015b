/// What a source sent back for one request, before decoding.
public struct UpstreamResponse: Sendable {
    /// HTTP status, when the source has one.
    public var status: Int?
    /// Response headers, in order (names as sent).
    public var headers: [(name: String, value: String)]
    /// The page's bytes.
    public var body: [UInt8]

    public init(status: Int? = nil, headers: [(name: String, value: String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A source of pages (the seeds' `Client`): HTTP, files, a command, or a test double.
public protocol Client: Sendable {
    /// Fetches what `request` names and returns the raw answer.
    ///
    /// Throws `LoadError.upstream` when the source fails and
    /// `LoadError.cancelled` when the surrounding task is cancelled.
    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse

    /// Fetches and decodes one page.
    ///
    /// The default implementation calls `fetch` and decodes the answer with
    /// `R.Response.decode(_:for:)`.
    func send<R: Request>(_ request: R) async throws -> R.Response

    /// Whether fetching a page only reads it (files, HTTP `GET`): such pages
    /// may be fetched before the page before them has been checked, several
    /// at once (`concurrency`), and dropped.
    ///
    /// The default implementation returns `false`.
    var fetchesHaveNoEffects: Bool { get }

    /// What the source last said of its rate limit (requests remaining,
    /// when the window resets), for `status`.
    ///
    /// The default implementation returns `nil`: the source says nothing.
    func rateLimitStatus() -> RateLimitStatus?
}

extension Client {
    public var fetchesHaveNoEffects: Bool { false }

    public func rateLimitStatus() -> RateLimitStatus? { nil }

    public func send<R: Request>(_ request: R) async throws -> R.Response {
        let response = try await fetch(request)
        if Task.isCancelled { throw LoadError.cancelled }
        return try R.Response.decode(response, for: request)
    }
}
